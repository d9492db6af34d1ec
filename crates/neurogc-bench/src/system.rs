//! What the run ran on, for the report: a result means little without its machine.

use std::path::Path;
use std::process::Command;

use neurogc_record::SystemInfo;

/// Reads the machine's description (and the version of `python`, when given).
pub fn read(python: Option<&Path>) -> SystemInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    SystemInfo {
        cpu_model: field(&cpuinfo, "model name", ':'),
        cores: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u64),
        memory_bytes: field(&meminfo, "MemTotal", ':')
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024),
        os: field(&os_release, "PRETTY_NAME", '=').map(|v| v.trim_matches('"').to_string()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_string()),
        python: python.and_then(python_version),
        neurogc_version: Some(env!("CARGO_PKG_VERSION").to_string()),
    }
}

fn field(text: &str, key: &str, sep: char) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(sep)?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn python_version(python: &Path) -> Option<String> {
    let out = Command::new(python)
        .args(["-c", "import sys; print(sys.version.replace(chr(10), ' '))"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
