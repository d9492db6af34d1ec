//! The one-line progress display of a measurement, fed by the load generator's per-second rows.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use neurogc_load::Row;

use crate::tail::Tail;

pub struct Progress {
    prefix: String,
    total_s: f64,
    tail: Tail,
    started: Instant,
    last: Option<Row>,
    requests: u64,
    tty: bool,
    last_print: Option<Instant>,
    last_line: String,
}

impl Progress {
    pub fn new(prefix: String, total_s: f64, jsonl: &Path) -> Progress {
        Progress {
            prefix,
            total_s,
            tail: Tail::new(jsonl),
            started: Instant::now(),
            last: None,
            requests: 0,
            tty: std::io::stderr().is_terminal(),
            last_print: None,
            last_line: String::new(),
        }
    }

    /// Reads new rows and redraws (on a terminal) or prints a line every 10 s (in a log).
    pub fn tick(&mut self) {
        for line in self.tail.poll() {
            if let Ok(row) = serde_json::from_str::<Row>(&line) {
                if row.kind == "second" && row.task == "all" {
                    self.requests += row.requests;
                    // Servers taking turns: the loaded one's row of a second, not the idle one's.
                    let newer = self.last.as_ref().is_none_or(|l| l.t != row.t);
                    if newer || row.requests > 0 {
                        self.last = Some(row);
                    }
                }
            }
        }
        let due = match self.last_print {
            None => true,
            Some(t) => t.elapsed().as_secs_f64() >= if self.tty { 0.5 } else { 10.0 },
        };
        if !due {
            return;
        }
        self.last_print = Some(Instant::now());
        let line = self.line();
        if line == self.last_line {
            return;
        }
        self.last_line = line.clone();
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
    }

    fn line(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64().min(self.total_s);
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
        format!(
            "{} · {:>3.0}/{:.0} s · {now} · {} requests",
            self.prefix, elapsed, self.total_s, self.requests
        )
    }

    /// Ends the line on a terminal.
    pub fn done(&mut self) {
        self.last_print = None;
        self.tick();
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}
