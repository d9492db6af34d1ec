//! The service under test: the bundled demo app or the user's own command, started with the
//! agent and a policy, and waited for until it answers.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::http;
use crate::inject::Injection;
use crate::proc::{self, Group};
use neurogc_record::AppInfo;
use neurogc_units::unix_now;

/// What to start.
#[derive(Clone, Debug)]
pub enum App {
    /// A bundled workload, `python -m neurogc.workloads serve NAME` (`seed`: the seed's demo
    /// endpoints), with the agent installed by the app; `options` are its `--set KEY=VALUE`s.
    Workload {
        python: PathBuf,
        workload: Workload,
        options: Vec<String>,
    },
    /// A shell command with `{port}` in it, the agent injected by `neurogc run`.
    Cmd { template: String },
}

/// Where one server writes and how it runs.
pub struct Launch<'a> {
    pub policy: &'a str,
    pub port: u16,
    pub interval_s: f64,
    pub samples: &'a Path,
    pub gc_events: &'a Path,
    pub log: &'a Path,
    pub cpus: &'a [usize],
}

/// A started, answering server.
pub struct Server {
    pub group: Group,
    pub port: u16,
    pub started: f64,
    pub ready: f64,
}

impl Server {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A bundled workload as `python -m neurogc.workloads list --json` describes it.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Workload {
    pub name: String,
    /// `asgi` or `wsgi`.
    pub kind: String,
    /// Its GC story, one paragraph.
    pub story: String,
    /// What its GC events should show (markers, see `neurogc.workloads.MARKERS`).
    pub expects: Vec<String>,
    /// Its `neurogc load` task file.
    pub tasks: PathBuf,
}

/// The bundled workloads, from the Python package that holds them (their one home).
pub fn workloads(python: &Path) -> Result<Vec<Workload>> {
    let out = Command::new(python)
        .args(["-m", "neurogc.workloads", "list", "--json"])
        .output()
        .with_context(|| format!("cannot run Python {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "{} cannot list the bundled workloads ({}); run `make setup` or pass --python",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    serde_json::from_slice(&out.stdout)
        .context("python -m neurogc.workloads list --json printed something else than workloads")
}

/// The workload called `name`; the error lists the known ones.
pub fn find_workload(python: &Path, name: &str) -> Result<Workload> {
    let all = workloads(python)?;
    all.iter().find(|w| w.name == name).cloned().ok_or_else(|| {
        let known: Vec<&str> = all.iter().map(|w| w.name.as_str()).collect();
        anyhow::anyhow!("unknown workload {name:?}; known: {}", known.join(", "))
    })
}

impl App {
    pub fn check(&self) -> Result<()> {
        match self {
            // Found in the list that `python -m neurogc.workloads` printed: it imports.
            App::Workload { .. } => Ok(()),
            App::Cmd { template } => {
                if !template.contains("{port}") {
                    bail!("--cmd {template:?} must contain {{port}}, where the server's port goes");
                }
                Ok(())
            }
        }
    }

    /// The task file of a bundled workload (its load); none for a command.
    pub fn tasks(&self) -> Option<&Path> {
        match self {
            App::Workload { workload, .. } => Some(&workload.tasks),
            App::Cmd { .. } => None,
        }
    }

    /// For run.json.
    pub fn describe(&self) -> AppInfo {
        match self {
            App::Workload {
                python,
                workload,
                options,
            } => AppInfo::Workload {
                workload: workload.name.clone(),
                options: options.clone(),
                command: format!(
                    "{} -m neurogc.workloads serve {} --port {{port}}{}",
                    python.display(),
                    workload.name,
                    options
                        .iter()
                        .map(|o| format!(" --set {o}"))
                        .collect::<String>()
                ),
            },
            App::Cmd { template } => AppInfo::Cmd {
                command: template.clone(),
            },
        }
    }

    fn command(&self, l: &Launch<'_>) -> Result<Command> {
        Ok(match self {
            App::Workload {
                python,
                workload,
                options,
            } => {
                let mut c = Command::new(python);
                c.args(["-m", "neurogc.workloads", "serve", &workload.name])
                    .args(["--port", &l.port.to_string()])
                    .args(["--policy", l.policy])
                    .args(["--interval", &l.interval_s.to_string()])
                    .arg("--csv")
                    .arg(l.samples)
                    .arg("--gc-events-csv")
                    .arg(l.gc_events);
                for o in options {
                    c.args(["--set", o]);
                }
                c
            }
            App::Cmd { template } => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(template.replace("{port}", &l.port.to_string()))
                    .env("PORT", l.port.to_string());
                Injection::new(l.policy, l.interval_s, Some(l.samples), Some(l.gc_events))?
                    .apply(&mut c)?;
                c
            }
        })
    }

    /// Starts a server and waits until `GET health` answers (any status below 500).
    pub fn start(&self, l: &Launch<'_>, health: &str, timeout: Duration) -> Result<Server> {
        let started = unix_now();
        let mut group = proc::spawn_group(self.command(l)?, "server", Some(l.log), l.cpus)?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, l.port));
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = group.try_wait() {
                bail!(
                    "the app exited ({status}) before answering on port {}; its log {}:\n{}",
                    l.port,
                    l.log.display(),
                    log_tail(l.log, 15)
                );
            }
            if let Ok(code) = http::get_status(addr, health, Duration::from_millis(500)) {
                if code < 500 {
                    break;
                }
            }
            if Instant::now() >= deadline {
                group.stop(Duration::from_secs(2));
                bail!(
                    "the app did not answer GET {health} on port {} within {:.0} s; its log {}:\n{}",
                    l.port,
                    timeout.as_secs_f64(),
                    l.log.display(),
                    log_tail(l.log, 15)
                );
            }
            if proc::interrupted() {
                bail!("interrupted while waiting for the app to start");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(Server {
            group,
            port: l.port,
            started,
            ready: unix_now(),
        })
    }
}

/// The last `n` lines of a log, indented, for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        "    (empty)".to_string()
    } else {
        tail.iter()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A port nobody listens on now, below the ephemeral range where it can: a port the OS picks
/// for `bind(0)` is one it also gives outgoing connections, so between our check and the app's
/// bind the load generator's connections could take it (seen once: the demo's app failed with
/// "address already in use" right after a 640 req/s probe). Else the OS's choice.
pub fn free_port() -> Result<u16> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    const LOWEST: u16 = 10_000;
    if ephemeral_low > LOWEST + 1000 {
        let span = u32::from(ephemeral_low - LOWEST);
        // Spread concurrent runs over the range; each candidate is checked by binding it.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let start = (nanos ^ std::process::id().wrapping_mul(2_654_435_761)) % span;
        for i in 0..64 {
            let port = LOWEST + ((start + i * 7919) % span) as u16;
            if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(port);
            }
        }
    }
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

/// The Python that has `neurogc` installed: `--python`, `$NEUROGC_PYTHON`, the active virtualenv,
/// a `.venv` next to the `neurogc` binary's checkout or the working directory, else `python3`.
pub fn find_python(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("NEUROGC_PYTHON") {
        return PathBuf::from(p);
    }
    let mut candidates = Vec::new();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        candidates.push(PathBuf::from(venv).join("bin/python"));
    }
    if let Ok(exe) = std::env::current_exe() {
        // .venv/bin/neurogc links to target/release/neurogc: look beside both.
        let resolved = exe.canonicalize().unwrap_or(exe.clone());
        for start in [exe.as_path(), resolved.as_path()] {
            if let Some(bin) = start.parent() {
                candidates.push(bin.join("python"));
            }
            for dir in start.ancestors().skip(1) {
                candidates.push(dir.join(".venv/bin/python"));
            }
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        candidates.push(cwd.join(".venv/bin/python"));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_lie_below_the_ephemeral_range_and_are_free() {
        let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for _ in 0..20 {
            let port = free_port().unwrap();
            if low > 11_000 {
                assert!(
                    (10_000..low).contains(&port),
                    "{port} (ephemeral from {low})"
                );
            }
            TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
        }
    }
}
