//! The progress display of a measurement, fed by the load generator's per-second rows.
//!
//! On a terminal: an `indicatif` bar in the trainer's look (`neurogc train`), seconds of load
//! done out of the measurement's, its ETA, and the latest second's rate and latencies. When
//! stderr is not a terminal the bar draws nothing, and a plain line goes to the log every 10 s.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neurogc_load::Row;

use crate::tail::Tail;

/// How often a log (stderr not a terminal) gets a line.
const LOG_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    bar: ProgressBar,
    prefix: String,
    total_s: f64,
    tail: Tail,
    started: Instant,
    last: Option<Row>,
    requests: u64,
    last_log: Option<Instant>,
    last_line: String,
}

impl Progress {
    pub fn new(prefix: String, total_s: f64, jsonl: &Path) -> Progress {
        Progress {
            bar: bar(&prefix, total_s),
            prefix,
            total_s,
            tail: Tail::new(jsonl),
            started: Instant::now(),
            last: None,
            requests: 0,
            last_log: None,
            last_line: String::new(),
        }
    }

    /// Reads new rows and redraws the bar (on a terminal) or prints a line every 10 s (in a log).
    pub fn tick(&mut self) {
        for line in self.tail.poll() {
            if let Ok(row) = serde_json::from_str::<Row>(&line) {
                self.add(row);
            }
        }
        let elapsed = self.started.elapsed().as_secs_f64().min(self.total_s);
        if !self.bar.is_hidden() {
            self.bar.set_message(self.now());
            self.bar.set_position(elapsed as u64);
            return;
        }
        if self.last_log.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return;
        }
        self.last_log = Some(Instant::now());
        let line = format!(
            "{} · {:>3.0}/{:.0} s · {}",
            self.prefix,
            elapsed,
            self.total_s,
            self.now()
        );
        if line != self.last_line {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
            self.last_line = line;
        }
    }

    fn add(&mut self, row: Row) {
        if row.kind == "second" && row.task == "all" {
            self.requests += row.requests;
            // Servers taking turns: the loaded one's row of a second, not the idle one's.
            let newer = self.last.as_ref().is_none_or(|l| l.t != row.t);
            if newer || row.requests > 0 {
                self.last = Some(row);
            }
        }
    }

    /// The latest second and the count so far.
    fn now(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} ms"));
        let now = match &self.last {
            Some(r) => format!(
                "{:.1} req/s · p50 {} · p99 {}",
                r.rps,
                ms(r.p50_ms),
                ms(r.p99_ms)
            ),
            None => "waiting for the first second".to_string(),
        };
        format!("{now} · {} requests", self.requests)
    }

    /// Draws the last state and ends the line (the bar stays where it got to, also when the
    /// measurement was cut short).
    pub fn done(&mut self) {
        self.last_log = None;
        self.tick();
        self.bar.abandon();
    }
}

/// The bar: the trainer's `[=====>    ]` over the seconds of the measurement; hidden (draws
/// nothing) when stderr is not a terminal. The message is cut to the terminal's width.
fn bar(prefix: &str, total_s: f64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total_s.ceil().max(1.0) as u64),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} s (eta {eta}) {wide_msg}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: f64, requests: u64, p99: f64) -> String {
        format!(
            r#"{{"type":"second","t":{t},"elapsed_s":1,"interval_s":1,"host":"h","task":"all","users":null,"in_flight":0,"requests":{requests},"failures":0,"failures_by_kind":{{}},"rps":{requests},"p50_ms":1.0,"p90_ms":null,"p95_ms":null,"p99_ms":{p99},"p999_ms":null,"max_ms":null,"mean_ms":null,"late_starts":0,"dropped":0}}"#
        )
    }

    #[test]
    fn rows_feed_the_line_and_the_loaded_host_wins_its_second() {
        let dir = std::env::temp_dir().join(format!("neurogc-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jsonl = dir.join("load.jsonl");
        let mut p = Progress::new("[1/2] default r1".into(), 59.5, &jsonl);
        assert_eq!(p.bar.length(), Some(60));
        assert_eq!(p.now(), "waiting for the first second · 0 requests");
        let poll = |p: &mut Progress, rows: &[String]| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&jsonl)
                .unwrap();
            for r in rows {
                writeln!(f, "{r}").unwrap();
            }
            for line in p.tail.poll() {
                p.add(serde_json::from_str(&line).unwrap());
            }
        };
        // Second 1: the idle host's row, then the loaded one's, which wins.
        poll(&mut p, &[second(1.0, 0, 0.0), second(1.0, 140, 27.6)]);
        assert_eq!(p.now(), "140.0 req/s · p50 1 ms · p99 28 ms · 140 requests");
        poll(&mut p, &[second(2.0, 150, 30.2)]);
        assert_eq!(p.now(), "150.0 req/s · p50 1 ms · p99 30 ms · 290 requests");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
