//! Running the script: once per configuration per round, rounds one after the other, the
//! configurations' order rotated each round (as `neurogc bench` rotates its policies), each run
//! in its own folder with its step record and its output; `sweep.json` says what ran.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use neurogc_record::files::{STEPS_CSV, STEPS_JSON};
use neurogc_record::steps::{read_steps, read_steps_info, StepsCsv};
use serde::{Deserialize, Serialize};

/// The version of `sweep.json`.
pub const SCHEMA: u32 = 1;
/// `sweep.json`, in the output directory.
pub const SWEEP_JSON: &str = "sweep.json";
/// Each run's output (stdout and stderr), in its folder.
pub const OUTPUT_LOG: &str = "output.log";
/// What the bootstrap reads to wrap a step function (`python/neurogc/training/_step_function.py`).
pub const ENV_STEP_FUNCTION: &str = "NEUROGC_STEP_FUNCTION";
/// The hook's overrides (`neurogc.training`'s `ENV_POLICY` and `ENV_DIR`).
pub const ENV_STEP_POLICY: &str = "NEUROGC_STEP_POLICY";
pub const ENV_STEPS_DIR: &str = "NEUROGC_STEPS_DIR";

/// What a sweep ran, and how each run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRecord {
    pub schema: u32,
    /// The training command.
    pub command: Vec<String>,
    /// The configurations, as the step hook names them; the first is not special (the baseline
    /// is `default` when swept).
    pub configs: Vec<String>,
    /// `--aa`: the name of the baseline's second copy, one of `configs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa: Option<String>,
    pub repeats: u32,
    pub skip_steps: usize,
    pub step_function: Option<String>,
    pub rss_bound: f64,
    /// Unix seconds.
    pub started: f64,
    pub finished: Option<f64>,
    /// `running`, `complete` or `failed`.
    pub status: String,
    pub error: Option<String>,
    pub runs: Vec<RunEntry>,
}

/// One process of the sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunEntry {
    /// 1, 2, … in the order they ran.
    pub index: usize,
    pub config: String,
    pub round: u32,
    /// Its folder, relative to the output directory (`runs/03-learned-r1`).
    pub dir: String,
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub wall_s: f64,
    /// The process's peak resident set size (its `ru_maxrss`, children included), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Rows in its steps.csv.
    pub steps: usize,
}

/// The order of the configurations in round `round` (1-based): rotated left by `round − 1`.
pub fn order(n: usize, round: u32) -> Vec<usize> {
    let mut o: Vec<usize> = (0..n).collect();
    if n > 0 {
        o.rotate_left((round as usize - 1) % n);
    }
    o
}

/// The command as a shell would show it.
pub fn shown(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
            {
                s.into_owned()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a run went.
pub struct Finished {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_s: f64,
    pub peak_rss_bytes: Option<u64>,
}

/// Everything one run needs.
pub struct RunSpec<'a> {
    pub command: &'a [OsString],
    /// The step policy, as the hook names it.
    pub policy: &'a str,
    pub dir: &'a Path,
    pub step_function: Option<&'a str>,
}

/// Runs the command once under `spec.policy`, its output into `dir/output.log`, and waits for
/// it (with its resource usage: the peak RSS).
pub fn run_once(spec: &RunSpec) -> Result<Finished> {
    let (program, rest) = spec.command.split_first().expect("clap requires a command");
    std::fs::create_dir_all(spec.dir)
        .with_context(|| format!("cannot create {}", spec.dir.display()))?;
    let dir = std::path::absolute(spec.dir)?;
    let log_path = dir.join(OUTPUT_LOG);
    let mut command = Command::new(program);
    command
        .args(rest)
        .env(ENV_STEP_POLICY, spec.policy)
        .env(ENV_STEPS_DIR, &dir)
        // The agent's own policy would act on the collector too: the sweep compares step
        // policies alone.
        .env_remove("NEUROGC_POLICY");
    match spec.step_function {
        Some(target) => {
            neurogc_bench::inject::bootstrap_pythonpath(&mut command)?;
            command.env(ENV_STEP_FUNCTION, target);
        }
        None => {
            command.env_remove(ENV_STEP_FUNCTION);
        }
    }
    let started = Instant::now();
    // In a process group under a keeper, as bench's services are: if the sweep dies (kill -9
    // included), the script and everything it started die with it.
    let mut group =
        neurogc_bench::proc::spawn_group(command, "training command", Some(&log_path), &[])
            .with_context(|| format!("cannot run {:?}", program))?;
    let (status, rusage) = group
        .wait_with_usage()
        .context("waiting for the training command")?;
    let wall_s = started.elapsed().as_secs_f64();
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    // ru_maxrss is in KiB on Linux.
    let peak_rss_bytes = u64::try_from(rusage.ru_maxrss)
        .ok()
        .filter(|&k| k > 0)
        .map(|k| k * 1024);
    Ok(Finished {
        exit_code,
        signal,
        wall_s,
        peak_rss_bytes,
    })
}

/// The last `n` lines of a run's output, for an error message.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A run's step record, checked: present, with steps, under the policy it was given.
/// `what` describes the run and `hint` what to do when it recorded nothing.
pub fn read_record(
    dir: &Path,
    shown_dir: &str,
    policy: &str,
    what: &str,
    hint: &str,
) -> Result<StepsCsv> {
    let csv = dir.join(STEPS_CSV);
    if !csv.exists() {
        bail!("{what} recorded no steps (no {shown_dir}/{STEPS_CSV}). {hint}");
    }
    let steps = read_steps(&csv, &format!("{shown_dir}/{STEPS_CSV}"))?;
    if steps.rows.is_empty() {
        bail!("{what} recorded no steps ({shown_dir}/{STEPS_CSV} has no rows). {hint}");
    }
    if let Some(r) = steps.rows.iter().find(|r| r.policy != policy) {
        bail!(
            "{what}: {shown_dir}/{STEPS_CSV} step {} ran policy {:?}, not the sweep's {policy:?} \
             (NEUROGC_STEP_POLICY is the hook's override; was it cleared?)",
            r.step,
            r.policy
        );
    }
    let json = dir.join(STEPS_JSON);
    if json.exists() {
        let info = read_steps_info(&json, &format!("{shown_dir}/{STEPS_JSON}"))?;
        if info.status == "failed" {
            bail!(
                "{what}: the step hook says the training failed: {}",
                info.error.unwrap_or_default()
            );
        }
    }
    Ok(steps)
}

/// Writes `sweep.json` (atomically).
pub fn write_record(out: &Path, record: &SweepRecord) -> Result<()> {
    neurogc_record::write_json_atomic(&out.join(SWEEP_JSON), record)
}

/// The output directory: `--out`, or `runs/sweep-<UTC stamp>`; it must be new or empty.
pub fn output_dir(out: Option<&Path>, now: f64) -> Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("runs").join(format!("sweep-{}", neurogc_units::utc_stamp(now))),
    };
    if dir.exists() {
        let empty = std::fs::read_dir(&dir)
            .with_context(|| format!("--out {}: not a readable directory", dir.display()))?
            .next()
            .is_none();
        if !empty {
            bail!(
                "--out {}: already holds files; a sweep writes into a new or empty directory",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_the_order() {
        assert_eq!(order(3, 1), [0, 1, 2]);
        assert_eq!(order(3, 2), [1, 2, 0]);
        assert_eq!(order(3, 4), [0, 1, 2]);
        assert_eq!(order(1, 7), [0]);
    }

    #[test]
    fn commands_are_shown_quoted() {
        let c: Vec<OsString> = ["python", "train.py", "--lr", "1e-3", "a b", "it's"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(shown(&c), "python train.py --lr 1e-3 'a b' 'it'\\''s'");
    }
}
