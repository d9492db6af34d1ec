//! Runs `neurogc load` as its own process (pinned to its own CPU when the server has the other),
//! and reads back what it wrote.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_load::Row;
use serde_json::{json, Value};

use crate::app::log_tail;
use crate::proc::{self, Group};

/// How load is offered.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Locust's closed loop.
    Closed {
        users: u64,
        spawn_rate: f64,
        wait_min_s: f64,
        wait_max_s: f64,
    },
    /// wrk2's open loop at a constant rate per host.
    Open { rate: f64 },
}

impl Shape {
    pub fn describe(&self) -> Value {
        match self {
            Shape::Closed {
                users,
                spawn_rate,
                wait_min_s,
                wait_max_s,
            } => json!({"mode": "closed", "users": users, "spawn_rate": spawn_rate,
                        "wait_min_s": wait_min_s, "wait_max_s": wait_max_s}),
            Shape::Open { rate } => json!({"mode": "open", "rate": rate}),
        }
    }
}

/// One invocation of the load generator.
pub struct LoadRun<'a> {
    pub hosts: &'a [String],
    pub shape: &'a Shape,
    pub duration: Duration,
    pub tasks: Option<&'a Path>,
    pub timeout: Duration,
    pub json_out: &'a Path,
    pub hdr_out: Option<&'a Path>,
    pub log: &'a Path,
    pub cpus: &'a [usize],
    pub seed: u64,
    /// Hosts take turns in slices of this length (`neurogc load --alternate`).
    pub alternate: Option<Duration>,
}

pub fn spawn(run: &LoadRun<'_>) -> Result<Group> {
    let exe = std::env::current_exe().context("cannot find the neurogc binary")?;
    let mut c = Command::new(exe);
    c.arg("load");
    for h in run.hosts {
        c.args(["--host", h]);
    }
    c.arg("--quiet")
        .arg("--json-out")
        .arg(run.json_out)
        .args(["--run-time", &format!("{}ms", run.duration.as_millis())])
        .args(["--timeout", &format!("{}ms", run.timeout.as_millis())])
        .args(["--seed", &run.seed.to_string()]);
    if let Some(dir) = run.hdr_out {
        c.arg("--hdr-out").arg(dir);
    }
    if let Some(t) = run.tasks {
        c.arg("--tasks").arg(t);
    }
    match run.shape {
        Shape::Closed {
            users,
            spawn_rate,
            wait_min_s,
            wait_max_s,
        } => {
            c.args(["--users", &users.to_string()])
                .args(["--spawn-rate", &spawn_rate.to_string()])
                .args(["--wait-min", &wait_min_s.to_string()])
                .args(["--wait-max", &wait_max_s.to_string()]);
        }
        Shape::Open { rate } => {
            c.args(["--rate", &rate.to_string()]);
            if let Some(slice) = run.alternate.filter(|_| run.hosts.len() > 1) {
                c.args(["--alternate", &format!("{}ms", slice.as_millis())]);
            }
        }
    }
    proc::spawn_group(c, "neurogc load", Some(run.log), run.cpus)
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

/// The per-second rows and the summary of a `--json-out` file.
pub struct Output {
    pub rows: Vec<Row>,
    pub summary: Option<Value>,
}

pub fn read_output(path: &Path) -> Result<Output> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Output {
        rows: Vec::new(),
        summary: None,
    };
    for (i, line) in text.lines().enumerate() {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            // A killed load generator may leave half a line: what came before it stands.
            Err(_) if i + 1 == text.lines().count() => break,
            Err(e) => bail!("{}:{}: {e}", path.display(), i + 1),
        };
        if v.get("type").and_then(Value::as_str) == Some("summary") {
            out.summary = Some(v);
        } else {
            out.rows.push(
                serde_json::from_value(v)
                    .with_context(|| format!("{}:{}: not a load row", path.display(), i + 1))?,
            );
        }
    }
    Ok(out)
}

impl Output {
    /// The summary's whole-run row ("total", all tasks) of `host`.
    pub fn total(&self, host: &str) -> Option<Row> {
        let rows = self.summary.as_ref()?.get("rows")?.as_array()?;
        rows.iter()
            .filter_map(|r| serde_json::from_value::<Row>(r.clone()).ok())
            .find(|r| r.host == host && r.task == "all")
    }
}

/// Splits a multi-host `--json-out` file into one file per host (rows of that host, then the
/// summary narrowed to it), and moves each host's `.hlog` from `hdr_dir` to its place.
pub fn split_by_host(
    combined: &Path,
    hdr_dir: &Path,
    outputs: &[(String, PathBuf, PathBuf)],
) -> Result<()> {
    let text = std::fs::read_to_string(combined).unwrap_or_default();
    for (host, jsonl, hlog) in outputs {
        let mut lines = String::new();
        for line in text.lines() {
            let Ok(mut v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v.get("type").and_then(Value::as_str) == Some("summary") {
                narrow_summary(&mut v, host);
            } else if v.get("host").and_then(Value::as_str) != Some(host) {
                continue;
            }
            lines.push_str(&v.to_string());
            lines.push('\n');
        }
        std::fs::write(jsonl, lines)
            .with_context(|| format!("cannot write {}", jsonl.display()))?;
        move_hlog(hdr_dir, host, hlog)?;
    }
    Ok(())
}

/// Moves the load generator's histogram log of `host` to `to` (nothing to move if it never ran).
pub fn move_hlog(hdr_dir: &Path, host: &str, to: &Path) -> Result<()> {
    let from = neurogc_load::report::hdr_log_path(hdr_dir, host);
    if !from.exists() {
        return Ok(());
    }
    std::fs::rename(&from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}

fn narrow_summary(summary: &mut Value, host: &str) {
    let Some(obj) = summary.as_object_mut() else {
        return;
    };
    obj.insert("hosts".into(), json!([host]));
    let rows: Vec<Value> = obj
        .get("rows")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .filter(|r| r.get("host").and_then(Value::as_str) == Some(host))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if let Some(total) = rows
        .iter()
        .find(|r| r.get("task").and_then(Value::as_str) == Some("all"))
    {
        for key in ["requests", "failures", "late_starts", "dropped"] {
            if let Some(v) = total.get(key) {
                obj.insert(key.into(), v.clone());
            }
        }
        if let Some(rps) = total.get("rps") {
            obj.insert("achieved_rate".into(), rps.clone());
        }
    }
    obj.insert("rows".into(), Value::Array(rows));
}
