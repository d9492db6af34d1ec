//! Output: the live table, the JSON-lines stream, HdrHistogram interval logs and the summary.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use neurogc_units::fmt_ms;
use serde::{Deserialize, Serialize};

use crate::args::{Config, Mode};
use crate::schedule::{Delays, Turns};
use crate::stats::{Row, RowContext, Snapshot};

/// The last line of `--json-out`: the run's parameters and its totals per host and task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: String,
    /// "closed" or "open".
    pub mode: String,
    pub hosts: Vec<String>,
    pub tasks: Vec<String>,
    pub users: Option<u64>,
    pub spawn_rate: Option<f64>,
    pub wait_min_s: Option<f64>,
    pub wait_max_s: Option<f64>,
    pub target_rate: Option<f64>,
    pub arrivals: Option<String>,
    pub max_in_flight: Option<usize>,
    pub seed: u64,
    pub started_at: f64,
    pub duration_s: f64,
    pub interrupted: bool,
    pub requests: u64,
    pub failures: u64,
    /// Completed requests per second per host (mean over hosts).
    pub achieved_rate: f64,
    /// `--alternate`: the slice length; each host's rates are then over its own slices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate_s: Option<f64>,
    /// `--alternate`: how long the turns waited, in all, for the host before them to answer
    /// every request of its turn (the run lasted that much longer than `duration_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_waits_s: Option<f64>,
    pub late_starts: u64,
    pub dropped: u64,
    /// `"type": "total"` rows: every host × task, then the host's "all".
    pub rows: Vec<Row>,
}

impl Summary {
    /// The whole-run row of `host` (all its tasks).
    pub fn total(&self, host: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.host == host && r.task == "all")
    }

    /// The summary as if `host` had been the only target: its rows, its totals.
    pub fn for_host(&self, host: &str) -> Summary {
        let mut s = self.clone();
        s.hosts = vec![host.to_string()];
        s.rows.retain(|r| r.host == host);
        if let Some(total) = s.total(host).cloned() {
            s.requests = total.requests;
            s.failures = total.failures;
            s.late_starts = total.late_starts;
            s.dropped = total.dropped;
            s.achieved_rate = total.rps;
        }
        s
    }
}

/// What a `--json-out` file holds: the per-second rows and, when the run finished, the summary.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The per-second rows.
    pub rows: Vec<Row>,
    /// With `--alternate`: one row per host and turn.
    pub turns: Vec<Row>,
    pub summary: Option<Summary>,
    /// A skipped incomplete last line, named `shown:line:`.
    pub warnings: Vec<String>,
}

/// Reads a `--json-out` file (`shown` names it in errors). A last line without a line end is
/// what a killed load generator leaves: skipped with a warning. Any other malformed line is an
/// error naming it.
pub fn read_json_lines(path: &Path, shown: &str) -> Result<Output> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{shown}: cannot read"))?;
    let mut out = Output::default();
    let complete = text.is_empty() || text.ends_with('\n');
    let count = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<serde_json::Value>(line)
            .map_err(|e| format!("malformed JSON: {e}"))
            .and_then(
                |v| match v.get("type").and_then(serde_json::Value::as_str) {
                    Some("summary") => serde_json::from_value::<Summary>(v)
                        .map(|s| out.summary = Some(s))
                        .map_err(|e| format!("not a load summary: {e}")),
                    Some(_) => serde_json::from_value::<Row>(v)
                        .map(|r| match r.kind.as_str() {
                            "turn" => out.turns.push(r),
                            _ => out.rows.push(r),
                        })
                        .map_err(|e| format!("not a load row: {e}")),
                    None => Err("no \"type\"".into()),
                },
            );
        match parsed {
            Ok(()) => {}
            Err(e) if line_no == count && !complete => out.warnings.push(format!(
                "{shown}:{line_no}: incomplete last line (no line end: the writer stopped mid-line; {e}); skipped"
            )),
            Err(e) => anyhow::bail!("{shown}:{line_no}: {e}"),
        }
    }
    Ok(out)
}

/// Turns snapshots into rows and sends them where the flags asked.
pub struct Reporter {
    hosts: Vec<String>,
    tasks: Vec<String>,
    closed_loop: bool,
    started: SystemTime,
    table: bool,
    summary: bool,
    human_to_stderr: bool,
    json: Option<(PathBuf, Box<dyn Write>)>,
    hdr: Vec<HdrLog>,
}

impl Reporter {
    /// Opens every output file up front, so a bad path fails before any load is sent.
    pub fn new(cfg: &Config, started: SystemTime) -> Result<Reporter> {
        let json_to_stdout = cfg.json_out.as_deref() == Some(Path::new("-"));
        let json = match &cfg.json_out {
            None => None,
            Some(p) if json_to_stdout => {
                Some((p.clone(), Box::new(io::stdout()) as Box<dyn Write>))
            }
            Some(p) => {
                let f = File::create(p)
                    .with_context(|| format!("--json-out {}: cannot create", p.display()))?;
                Some((p.clone(), Box::new(BufWriter::new(f)) as Box<dyn Write>))
            }
        };
        let mut hdr = Vec::new();
        if let Some(dir) = &cfg.hdr_out {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--hdr-out {}: cannot create", dir.display()))?;
            for t in &cfg.targets {
                hdr.push(HdrLog::create(dir, &t.url, started)?);
            }
        }
        Ok(Reporter {
            hosts: cfg.targets.iter().map(|t| t.url.clone()).collect(),
            tasks: cfg.tasks.tasks().iter().map(|t| t.name.clone()).collect(),
            closed_loop: matches!(cfg.mode, Mode::Closed { .. }),
            started,
            table: cfg.headless && !cfg.quiet,
            summary: !cfg.quiet,
            human_to_stderr: json_to_stdout,
            json,
            hdr,
        })
    }

    /// Builds the rows of `snaps`, which cover the `interval` ending `elapsed` after the start.
    pub fn rows(
        &self,
        kind: &str,
        snaps: &[Snapshot],
        elapsed: Duration,
        interval: Duration,
    ) -> Vec<Row> {
        let unix_time = neurogc_units::unix(self.started + elapsed);
        snaps
            .iter()
            .map(|s| {
                let ctx = RowContext {
                    kind,
                    unix_time,
                    elapsed_s: elapsed.as_secs_f64(),
                    interval_s: interval.as_secs_f64(),
                    host: &self.hosts[s.host],
                    task: s.task.map_or("all", |t| &self.tasks[t]),
                    closed_loop: self.closed_loop,
                };
                Row::new(&ctx, s)
            })
            .collect()
    }

    /// One second (the last may be shorter): JSON lines flushed, histograms logged, table printed.
    pub fn second(
        &mut self,
        snaps: &[Snapshot],
        elapsed: Duration,
        interval: Duration,
    ) -> Result<()> {
        let rows = self.rows("second", snaps, elapsed, interval);
        if let Some((path, w)) = &mut self.json {
            write_json_lines(w, &rows).with_context(|| format!("--json-out {}", path.display()))?;
        }
        if !self.hdr.is_empty() {
            for s in snaps {
                let tag = s.task.map(|t| self.tasks[t].as_str());
                self.hdr[s.host].write(s, tag, elapsed.saturating_sub(interval), interval)?;
            }
        }
        if self.table {
            let users = rows
                .first()
                .and_then(|r| r.users)
                .map(|u| format!(" · {u} users"))
                .unwrap_or_default();
            let title = format!("{:.0}s elapsed{users} · last second", elapsed.as_secs_f64());
            self.human(&table(&title, &rows));
        }
        Ok(())
    }

    /// The turns that are over (`--alternate`): one line per host and slice, `t` at its end.
    /// A turn ends when the next one begins: after the wait for its own queue to drain, which
    /// its interval includes (its rates are over it too).
    pub fn turns(&mut self, turns: &[(u64, Snapshot)], t: Turns, delays: &Delays) -> Result<()> {
        let Some((path, w)) = &mut self.json else {
            return Ok(());
        };
        let rows: Vec<Row> = turns
            .iter()
            .map(|(slice, s)| {
                let drained = delays.of(slice + 1) - delays.of(*slice);
                let end = t.slice.mul_f64((*slice + 1) as f64) + delays.of(slice + 1);
                let ctx = RowContext {
                    kind: "turn",
                    unix_time: neurogc_units::unix(self.started + end),
                    elapsed_s: end.as_secs_f64(),
                    interval_s: (t.slice + drained).as_secs_f64(),
                    host: &self.hosts[s.host],
                    task: "all",
                    closed_loop: false,
                };
                Row {
                    turn: Some(slice / t.hosts as u64),
                    ..Row::new(&ctx, s)
                }
            })
            .collect();
        write_json_lines(w, &rows).with_context(|| format!("--json-out {}", path.display()))
    }

    pub fn finish(&mut self, summary: &Summary) -> Result<()> {
        if let Some((path, w)) = &mut self.json {
            (|| -> io::Result<()> {
                serde_json::to_writer(&mut *w, summary)?;
                w.write_all(b"\n")?;
                w.flush()
            })()
            .with_context(|| format!("--json-out {}", path.display()))?;
        }
        for log in &mut self.hdr {
            log.file
                .flush()
                .with_context(|| format!("--hdr-out {}", log.path.display()))?;
        }
        if self.summary {
            self.human(&summary_text(summary));
        }
        Ok(())
    }

    fn human(&self, text: &str) {
        // A closed stdout (e.g. piped into `head`) must not abort the run.
        let _ = if self.human_to_stderr {
            io::stderr().lock().write_all(text.as_bytes())
        } else {
            io::stdout().lock().write_all(text.as_bytes())
        };
    }
}

fn write_json_lines(w: &mut Box<dyn Write>, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        serde_json::to_writer(&mut *w, r)?;
        w.write_all(b"\n")?;
    }
    // Flushed every second: a crash loses at most the current second.
    w.flush()
}

/// One HdrHistogram interval log per host: untagged intervals are all of the host's requests,
/// intervals tagged with a task name are that task's. Values are microseconds.
struct HdrLog {
    path: PathBuf,
    file: BufWriter<File>,
    serializer: V2DeflateSerializer,
}

impl HdrLog {
    fn create(dir: &Path, url: &str, started: SystemTime) -> Result<HdrLog> {
        let path = hdr_log_path(dir, url);
        let file = File::create(&path)
            .with_context(|| format!("--hdr-out: cannot create {}", path.display()))?;
        let mut log = HdrLog {
            path,
            file: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
        };
        IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "neurogc load: latency of {url} in microseconds; untagged = all tasks"
            ))
            .with_start_time(started)
            .with_base_time(started)
            .begin_log_with(&mut log.file, &mut log.serializer)
            .with_context(|| format!("--hdr-out {}", log.path.display()))?;
        Ok(log)
    }

    fn write(
        &mut self,
        s: &Snapshot,
        task: Option<&str>,
        start: Duration,
        length: Duration,
    ) -> Result<()> {
        let tag_text = task.map(|t| t.replace([',', ' ', '\r', '\n'], "_"));
        // A builder with no headers configured writes nothing: it is only a handle for one write.
        let mut w =
            IntervalLogWriterBuilder::new().begin_log_with(&mut self.file, &mut self.serializer)?;
        w.write_histogram(
            &s.window.hist,
            start,
            length,
            tag_text.as_deref().and_then(Tag::new),
        )
        .map_err(|e| anyhow::anyhow!("--hdr-out {}: {e}", self.path.display()))?;
        Ok(())
    }
}

/// `http://127.0.0.1:8001/api` → `127.0.0.1_8001_api`.
/// Where `--hdr-out DIR` puts the histogram log of the host `url`.
pub fn hdr_log_path(dir: &Path, url: &str) -> PathBuf {
    dir.join(format!(
        "{}.hlog",
        neurogc_units::slug(url.trim_start_matches("http://"))
    ))
}

/// A plain-text table of rows, Locust-like: one line per host and task.
pub fn table(title: &str, rows: &[Row]) -> String {
    let head = [
        "host", "task", "reqs", "fails", "rps", "p50", "p95", "p99", "p99.9", "max", "mean",
    ];
    let cells: Vec<[String; 11]> = rows
        .iter()
        .map(|r| {
            [
                r.host.clone(),
                r.task.clone(),
                r.requests.to_string(),
                r.failures.to_string(),
                format!("{:.1}", r.rps),
                fmt_ms(r.p50_ms),
                fmt_ms(r.p95_ms),
                fmt_ms(r.p99_ms),
                fmt_ms(r.p999_ms),
                fmt_ms(r.max_ms),
                fmt_ms(r.mean_ms),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in c.iter().zip(width).enumerate() {
            if i < 2 {
                s.push_str(&format!("{cell:<w$}  "));
            } else {
                s.push_str(&format!("{cell:>w$} "));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = format!("── {title} (latency in ms) ──\n");
    out.push_str(&line(&head.map(String::from)));
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}

fn summary_text(s: &Summary) -> String {
    let what = match (s.mode.as_str(), s.alternate_s) {
        ("open", Some(slice)) => format!(
            "open loop, {} req/s to one host at a time, turns of {slice} s ({} arrivals)",
            s.target_rate.unwrap_or(0.0),
            s.arrivals.as_deref().unwrap_or("uniform")
        ),
        ("open", None) => format!(
            "open loop, {} req/s per host ({} arrivals)",
            s.target_rate.unwrap_or(0.0),
            s.arrivals.as_deref().unwrap_or("uniform")
        ),
        _ => format!("closed loop, {} users per host", s.users.unwrap_or(0)),
    };
    let flag = if s.interrupted { ", interrupted" } else { "" };
    let title = format!("Summary: {what}, {:.1} s{flag}", s.duration_s);
    let mut out = table(&title, &s.rows);
    for r in s.rows.iter().filter(|r| r.failures > 0 && r.task != "all") {
        let kinds: Vec<String> = r
            .failures_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        out.push_str(&format!(
            "failures  {} {}: {}\n",
            r.host,
            r.task,
            kinds.join(", ")
        ));
    }
    out.push_str(&format!(
        "requests {}  failures {}  achieved {:.1} req/s per host",
        s.requests, s.failures, s.achieved_rate
    ));
    if s.mode == "open" {
        out.push_str(&format!(
            "  late starts {}  dropped {}",
            s.late_starts, s.dropped
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_logs_are_named_after_their_host() {
        let p = |url| hdr_log_path(Path::new("d"), url);
        assert_eq!(
            p("http://127.0.0.1:8001/api"),
            Path::new("d/127.0.0.1_8001_api.hlog")
        );
        assert_eq!(p("http://[::1]:80"), Path::new("d/___1__80.hlog"));
    }

    #[test]
    fn table_aligns_columns() {
        let row = |task: &str, p: Option<f64>| Row {
            kind: "second".into(),
            turn: None,
            t: 0.0,
            elapsed_s: 1.0,
            interval_s: 1.0,
            host: "http://h".into(),
            task: task.into(),
            users: None,
            in_flight: 0,
            requests: 12,
            failures: 1,
            failures_by_kind: Default::default(),
            rps: 12.0,
            p50_ms: p,
            p90_ms: p,
            p95_ms: p,
            p99_ms: p,
            p999_ms: p,
            max_ms: p,
            mean_ms: p,
            late_starts: 0,
            dropped: 0,
        };
        let t = table("x", &[row("/cpu-heavy", Some(123.4)), row("all", None)]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[2].contains("/cpu-heavy") && lines[2].contains("123"));
        assert!(lines[3].trim_end().ends_with('-'));
        assert_eq!(
            lines[1].find("reqs").map(|i| i + 4),
            lines[2].find("12 ").map(|i| i + 2)
        );
    }
}
