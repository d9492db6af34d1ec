//! Runs `neurogc load` as its own process (pinned to its own CPU when the server has the other),
//! and reads back what it wrote. The flags come from `neurogc-load`'s own [`LoadArgs`], so its
//! flag grammar has one home.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_load::{read_json_lines, LoadArgs, Output, Shape};

use crate::app::log_tail;
use crate::proc::{self, Group};

/// What every load generator run of a session shares.
#[derive(Clone, Debug)]
pub struct LoadSettings {
    pub tasks: Option<PathBuf>,
    pub timeout: Duration,
    pub seed: u64,
    /// CPUs the load generator is pinned to (none: unpinned).
    pub cpus: Vec<usize>,
    /// Hosts take turns in slices of this length (`neurogc load --alternate`).
    pub alternate: Option<Duration>,
}

/// One run of the load generator: against `hosts`, shaped so, for so long, writing where.
pub struct LoadRun<'a> {
    pub hosts: &'a [String],
    pub shape: &'a Shape,
    pub duration: Duration,
    /// Its `--json-out`; its log goes beside it (`.log`).
    pub json_out: &'a Path,
    /// Where each host's histogram log and request log go (`--hdr-out`, `--requests-out`).
    pub host_files: Option<&'a Path>,
    /// Hosts taking turns: their process groups, stopped outside their turns (`--mode turns`).
    pub stop_idle: &'a [i32],
    /// Ignore the task file's bursts (the rate search's probes).
    pub steady: bool,
}

impl LoadRun<'_> {
    pub fn log(&self) -> PathBuf {
        self.json_out.with_extension("log")
    }

    fn args(&self, settings: &LoadSettings) -> LoadArgs {
        let mut args = LoadArgs::for_hosts(self.hosts);
        args.set_shape(self.shape);
        if matches!(self.shape, Shape::Open { .. }) && self.hosts.len() > 1 {
            args.alternate = settings.alternate;
            if args.alternate.is_some() {
                args.stop_idle = self.stop_idle.to_vec();
            }
        }
        args.steady = self.steady && matches!(self.shape, Shape::Open { .. });
        args.quiet = true;
        args.json_out = Some(self.json_out.to_path_buf());
        args.hdr_out = self.host_files.map(Path::to_path_buf);
        args.requests_out = self.host_files.map(Path::to_path_buf);
        args.run_time = Some(self.duration);
        args.timeout = settings.timeout;
        args.seed = Some(settings.seed);
        args.tasks = settings.tasks.clone();
        args
    }
}

pub fn spawn(run: &LoadRun<'_>, settings: &LoadSettings) -> Result<Group> {
    let exe = std::env::current_exe().context("cannot find the neurogc binary")?;
    let mut c = Command::new(exe);
    c.arg("load").args(run.args(settings).to_args());
    proc::spawn_group(c, "neurogc load", Some(&run.log()), &settings.cpus)
}

/// Waits for the load generator, calling `tick` about every 250 ms; on Ctrl-C asks it to stop
/// (it then writes its summary, marked interrupted). An error if it failed to run at all.
pub fn wait(mut group: Group, log: &Path, mut tick: impl FnMut()) -> Result<()> {
    let mut forwarded = false;
    let status = loop {
        if let Some(status) = group.try_wait() {
            break status;
        }
        if proc::interrupted() && !forwarded {
            group.signal(libc::SIGINT);
            forwarded = true;
        }
        tick();
        std::thread::sleep(Duration::from_millis(250));
    };
    tick();
    // 0: all requests answered; 1: some failed (counted in its output); 130: interrupted.
    match status.code() {
        Some(0 | 1 | 130) => Ok(()),
        _ if forwarded => Ok(()),
        _ => bail!(
            "neurogc load failed ({status}); its log {}:\n{}",
            log.display(),
            log_tail(log, 10)
        ),
    }
}

/// Reads a `--json-out` file; a killed load generator's half line is skipped.
pub fn read_output(path: &Path) -> Result<Output> {
    read_json_lines(path, &path.display().to_string())
}

/// Where one host's outputs go: its load rows, histogram log and request log.
pub struct HostOutputs {
    pub host: String,
    pub jsonl: PathBuf,
    pub hlog: PathBuf,
    pub requests: PathBuf,
}

/// Splits a multi-host `--json-out` file into one file per host (per-second rows and turns of
/// that host, then the summary narrowed to it), and moves each host's files from `host_dir` to
/// their places.
pub fn split_by_host(combined: &Path, host_dir: &Path, outputs: &[HostOutputs]) -> Result<()> {
    let all = read_output(combined)?;
    for out in outputs {
        let (host, jsonl) = (&out.host, &out.jsonl);
        let mut lines = String::new();
        for row in all
            .rows
            .iter()
            .chain(&all.turns)
            .filter(|r| &r.host == host)
        {
            lines.push_str(&serde_json::to_string(row)?);
            lines.push('\n');
        }
        if let Some(summary) = &all.summary {
            lines.push_str(&serde_json::to_string(&summary.for_host(host))?);
            lines.push('\n');
        }
        std::fs::write(jsonl, lines)
            .with_context(|| format!("cannot write {}", jsonl.display()))?;
        move_host_files(host_dir, out)?;
    }
    Ok(())
}

/// Moves the load generator's histogram log and request log of a host to their places (nothing
/// to move if it never ran).
pub fn move_host_files(host_dir: &Path, to: &HostOutputs) -> Result<()> {
    for (from, to) in [
        (
            neurogc_load::report::hdr_log_path(host_dir, &to.host),
            &to.hlog,
        ),
        (
            neurogc_load::requests::path(host_dir, &to.host),
            &to.requests,
        ),
    ] {
        if from.exists() {
            std::fs::rename(&from, to)
                .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))?;
        }
    }
    Ok(())
}
