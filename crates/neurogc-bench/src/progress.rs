//! The progress display of a measurement, fed by the load generator's per-second rows.
//!
//! On a terminal: an `indicatif` bar in the trainer's look (`neurogc train`), seconds of load
//! done out of the measurement's, the whole run's ETA ([`Eta`]: every trial, the rate search,
//! and whatever the caller runs after, such as the suite's later workloads), the latest second's
//! rate and latencies, and the requests so far with how many failed. When stderr is not a
//! terminal the bar draws nothing, and a plain line goes to the log every 10 s.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neurogc_load::Row;
use neurogc_units::fmt_clock;

use crate::tail::Tail;

/// How often a log (stderr not a terminal) gets a line.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Seconds a server takes to start and, at the end, to stop: what a plan adds per server.
pub const START_STOP_S: f64 = 3.0;

/// The time left for the whole run: planned up front, corrected as steps finish
/// ([`Eta::replan`]), and counted down by the clock in between. The default knows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Eta {
    planned: Option<(Instant, f64)>,
}

impl Eta {
    /// `left_s` seconds from now.
    pub fn start(left_s: f64) -> Eta {
        Eta {
            planned: Some((Instant::now(), left_s.max(0.0))),
        }
    }

    /// A better estimate: `left_s` seconds from now.
    pub fn replan(&mut self, left_s: f64) {
        *self = Eta::start(left_s);
    }

    /// Seconds left (never below zero: a run late on its plan shows 0:00 until replanned).
    pub fn left_s(&self) -> Option<f64> {
        self.planned
            .map(|(at, left)| (left - at.elapsed().as_secs_f64()).max(0.0))
    }

    /// `run ETA 4:10`, or nothing without a plan.
    pub fn label(&self) -> Option<String> {
        self.left_s().map(|s| format!("run ETA {}", fmt_clock(s)))
    }
}

pub struct Progress {
    bar: ProgressBar,
    prefix: String,
    total_s: f64,
    tail: Tail,
    started: Instant,
    last: Option<Row>,
    requests: u64,
    failures: u64,
    eta: Eta,
    last_log: Option<Instant>,
    last_line: String,
}

impl Progress {
    /// A measurement of `total_s` seconds whose rows the load generator writes to `jsonl`;
    /// `eta` is the whole run's.
    pub fn new(prefix: String, total_s: f64, jsonl: &Path, eta: Eta) -> Progress {
        Progress {
            bar: bar(&prefix, total_s),
            prefix,
            total_s,
            tail: Tail::new(jsonl),
            started: Instant::now(),
            last: None,
            requests: 0,
            failures: 0,
            eta,
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
            self.failures += row.failures;
            // Servers taking turns: the loaded one's row of a second, not the idle one's.
            let newer = self.last.as_ref().is_none_or(|l| l.t != row.t);
            if newer || row.requests > 0 {
                self.last = Some(row);
            }
        }
    }

    /// The whole run's ETA, the latest second, and the counts so far.
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
        let failed = match self.failures {
            0 => "0 failed".to_string(),
            f => format!(
                "{f} failed ({:.1} %)",
                100.0 * f as f64 / self.requests.max(1) as f64
            ),
        };
        let line = format!("{now} · {} requests, {failed}", self.requests);
        match self.eta.label() {
            Some(eta) => format!("{eta} · {line}"),
            None => line,
        }
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
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} s · {wide_msg}")
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

    fn second_failing(t: f64, requests: u64, failures: u64) -> String {
        second(t, requests, 5.0).replace(r#""failures":0"#, &format!(r#""failures":{failures}"#))
    }

    #[test]
    fn rows_feed_the_line_and_the_loaded_host_wins_its_second() {
        let dir = std::env::temp_dir().join(format!("neurogc-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jsonl = dir.join("load.jsonl");
        let mut p = Progress::new("[1/2] default r1".into(), 59.5, &jsonl, Eta::default());
        assert_eq!(p.bar.length(), Some(60));
        assert_eq!(
            p.now(),
            "waiting for the first second · 0 requests, 0 failed"
        );
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
        assert_eq!(
            p.now(),
            "140.0 req/s · p50 1 ms · p99 28 ms · 140 requests, 0 failed"
        );
        poll(&mut p, &[second(2.0, 150, 30.2)]);
        assert_eq!(
            p.now(),
            "150.0 req/s · p50 1 ms · p99 30 ms · 290 requests, 0 failed"
        );
        // Failures: counted, with their share of the requests.
        poll(&mut p, &[second_failing(3.0, 10, 3)]);
        assert_eq!(
            p.now(),
            "10.0 req/s · p50 1 ms · p99 5 ms · 300 requests, 3 failed (1.0 %)"
        );
        // The whole run's ETA leads the line.
        p.eta = Eta::start(125.4);
        assert!(p.now().starts_with("run ETA 2:0"), "{}", p.now());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_eta_counts_down_from_its_plan() {
        assert_eq!(Eta::default().label(), None);
        let mut eta = Eta::start(3725.0);
        assert_eq!(eta.label().unwrap(), "run ETA 1:02:05");
        eta.replan(-5.0);
        assert_eq!(eta.label().unwrap(), "run ETA 0:00");
        let late = Eta {
            planned: Some((Instant::now() - Duration::from_secs(10), 4.0)),
        };
        assert_eq!(late.left_s(), Some(0.0));
        let on_time = Eta {
            planned: Some((Instant::now() - Duration::from_secs(10), 70.0)),
        };
        assert!((on_time.left_s().unwrap() - 60.0).abs() < 1.0);
    }
}
