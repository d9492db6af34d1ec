//! `neurogc run --policy P -- <command ...>`: runs any Python command with the agent injected and
//! no code change, the way `opentelemetry-instrument` works: a `sitecustomize` on PYTHONPATH starts
//! the agent from NEUROGC_* variables before the program's own code runs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use neurogc_core::policy::PolicySpec;

/// The bootstrap module, embedded so the binary needs no knowledge of where Python keeps packages.
const SITECUSTOMIZE: &str = include_str!("../../../python/neurogc/_bootstrap/sitecustomize.py");

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[arg(long, default_value = "default", help = format!("Policy spec: {}", neurogc_core::policy::spec::KNOWN_POLICIES))]
    policy: String,
    /// Sample interval in seconds.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Append one row per sample to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Append one row per collection to this CSV file
    /// (time,generation,pause_ms,collected,uncollectable,reason).
    #[arg(long, value_name = "PATH")]
    gc_events_csv: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

pub fn run(args: RunArgs) -> Result<i32> {
    // Validate here so a typo fails before the program starts, not inside it.
    args.policy
        .parse::<PolicySpec>()
        .map_err(anyhow::Error::new)?;
    if !args.interval.is_finite() || !(0.001..=3600.0).contains(&args.interval) {
        bail!(
            "--interval must be between 0.001 and 3600 seconds, got {}",
            args.interval
        );
    }
    let csv = match &args.csv {
        Some(path) => Some(absolute_writable_csv(path, "--csv")?),
        None => None,
    };
    let gc_events_csv = match &args.gc_events_csv {
        Some(path) => Some(absolute_writable_csv(path, "--gc-events-csv")?),
        None => None,
    };
    if csv.is_some() && csv == gc_events_csv {
        bail!("--csv and --gc-events-csv must be different files");
    }
    let bootstrap = write_bootstrap()?;
    let mut pythonpath = OsString::from(&bootstrap);
    if let Some(existing) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(existing);
    }
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("PYTHONPATH", pythonpath)
        .env("NEUROGC_POLICY", args.policy.trim())
        .env("NEUROGC_INTERVAL", args.interval.to_string());
    for (name, path) in [
        ("NEUROGC_CSV", &csv),
        ("NEUROGC_GC_EVENTS_CSV", &gc_events_csv),
    ] {
        match path {
            Some(path) => command.env(name, path),
            None => command.env_remove(name),
        };
    }
    // exec: the program takes over this process, so signals and the exit code are its own.
    let err = command.exec();
    bail!("cannot run {:?}: {err}", program)
}

/// A CSV path made absolute (the program may change directory) with its folder created; `flag`
/// names it in errors.
fn absolute_writable_csv(path: &Path, flag: &str) -> Result<PathBuf> {
    let path = std::path::absolute(path).with_context(|| format!("bad {flag} path {path:?}"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder for {flag} {}", path.display()))?;
    }
    Ok(path)
}

/// Writes `sitecustomize.py` into a private folder (atomically, so concurrent runs never see a
/// partial file) and returns the folder.
fn write_bootstrap() -> Result<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!(
        "neurogc-bootstrap-{uid}-{}",
        env!("CARGO_PKG_VERSION")
    ));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create bootstrap folder {}", dir.display()))?;
    let target = dir.join("sitecustomize.py");
    if std::fs::read_to_string(&target).ok().as_deref() == Some(SITECUSTOMIZE) {
        return Ok(dir);
    }
    let tmp = dir.join(format!(".sitecustomize.{}.tmp", std::process::id()));
    std::fs::write(&tmp, SITECUSTOMIZE)
        .and_then(|_| std::fs::rename(&tmp, &target))
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok(dir)
}
