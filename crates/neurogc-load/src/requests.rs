//! `--requests-out DIR`: one row per request, per host, for tools that replay the traffic (the
//! trace simulator): when the request was due, when its answer ended, and how it ended. The
//! histograms keep the latencies; only this keeps their order and moments.
//!
//! `DIR/<host>.requests.csv` (the host as in [`crate::report::hdr_log_path`]):
//!
//! ```text
//! intended,done,status
//! 1795698614.548913,1795698614.551020,200
//! 1795698614.552004,1795698614.562004,timeout
//! ```
//!
//! `intended` is the moment the request was due (open loop: its place in the schedule, whatever
//! happened before it; closed loop: when it was sent) and `done` when its answer ended or it
//! failed, both Unix seconds (the clock the agent's GC events are written in); `status` is the
//! HTTP status or the failure's kind. Rows are written in the order requests end, each flushed.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::client::FailKind;

pub const HEADER: &str = "intended,done,status";

/// Where `--requests-out DIR` puts the request log of the host `url`.
pub fn path(dir: &Path, url: &str) -> PathBuf {
    dir.join(format!(
        "{}.requests.csv",
        neurogc_units::slug(url.trim_start_matches("http://"))
    ))
}

/// One request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Unix seconds.
    pub intended: f64,
    pub done: f64,
    /// The HTTP status, or `None` for a failure without one (its kind in `failure`).
    pub status: Option<u16>,
    pub failure: Option<String>,
}

impl RequestRow {
    pub fn latency_s(&self) -> f64 {
        self.done - self.intended
    }
}

/// The open request logs of a run, one per host.
pub struct RequestLog {
    files: Vec<(PathBuf, BufWriter<File>)>,
    /// An instant and the Unix time it was, to turn instants into Unix seconds.
    origin: (Instant, f64),
}

impl RequestLog {
    pub fn create(dir: &Path, urls: &[String]) -> Result<RequestLog> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--requests-out: cannot create {}", dir.display()))?;
        let files =
            urls.iter()
                .map(|url| {
                    let p = path(dir, url);
                    let mut f = BufWriter::new(File::create(&p).with_context(|| {
                        format!("--requests-out: cannot create {}", p.display())
                    })?);
                    writeln!(f, "{HEADER}")?;
                    f.flush()?;
                    Ok((p, f))
                })
                .collect::<Result<_>>()?;
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Ok(RequestLog {
            files,
            origin: (Instant::now(), unix),
        })
    }

    fn unix(&self, at: Instant) -> f64 {
        let (instant, unix) = self.origin;
        if at >= instant {
            unix + (at - instant).as_secs_f64()
        } else {
            unix - (instant - at).as_secs_f64()
        }
    }

    /// Appends one request of host `host` (flushed: a killed run keeps every row it wrote).
    /// A write error is reported once per file, and that file is given up.
    pub fn record(
        &mut self,
        host: usize,
        intended: Instant,
        done: Instant,
        result: Result<u16, FailKind>,
    ) {
        let (i, d) = (self.unix(intended), self.unix(done));
        let Some((path, f)) = self.files.get_mut(host) else {
            return;
        };
        let status = match result {
            Ok(code) | Err(FailKind::Status(code)) => code.to_string(),
            Err(kind) => kind.to_string(),
        };
        if let Err(e) = writeln!(f, "{i:.6},{d:.6},{status}").and_then(|_| f.flush()) {
            eprintln!(
                "neurogc load: --requests-out {}: {e}; not written further",
                path.display()
            );
            self.files.remove(host);
        }
    }
}

/// Reads a request log (`shown` names it in errors). A last line cut short (a killed run) is
/// left out; any other malformed line is an error naming it.
pub fn read(path: &Path, shown: &str) -> Result<Vec<RequestRow>> {
    let f = File::open(path).with_context(|| format!("{shown}: cannot open"))?;
    let mut lines = BufReader::new(f).lines().enumerate().peekable();
    match lines.next() {
        Some((_, Ok(h))) if h.trim_end() == HEADER => {}
        Some((_, Ok(h))) => bail!("{shown}: line 1 is {h:?}, not the header {HEADER:?}"),
        Some((_, Err(e))) => bail!("{shown}: {e}"),
        None => bail!("{shown}: empty, not even the header {HEADER:?}"),
    }
    let mut rows = Vec::new();
    while let Some((i, line)) = lines.next() {
        let line = line.with_context(|| format!("{shown}: line {}", i + 1))?;
        let last = lines.peek().is_none();
        match parse_row(&line) {
            Some(row) => rows.push(row),
            None if last => break, // cut short by a kill
            None => bail!(
                "{shown}: line {} is not `intended,done,status`: {line:?}",
                i + 1
            ),
        }
    }
    Ok(rows)
}

fn parse_row(line: &str) -> Option<RequestRow> {
    let mut parts = line.split(',');
    let intended: f64 = parts.next()?.parse().ok()?;
    let done: f64 = parts.next()?.parse().ok()?;
    let status = parts.next()?.trim();
    if parts.next().is_some() || !intended.is_finite() || !done.is_finite() || status.is_empty() {
        return None;
    }
    let (status, failure) = match status.parse::<u16>() {
        Ok(code) => (Some(code), None),
        Err(_) => (None, Some(status.to_string())),
    };
    Some(RequestRow {
        intended,
        done,
        status,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn written_rows_read_back_in_unix_seconds() {
        let dir = std::env::temp_dir().join(format!("neurogc-requests-{}", std::process::id()));
        let urls = vec!["http://127.0.0.1:8001".to_string()];
        let mut log = RequestLog::create(&dir, &urls).unwrap();
        let t0 = Instant::now();
        log.record(0, t0, t0 + Duration::from_millis(3), Ok(200));
        log.record(
            0,
            t0 + Duration::from_millis(1),
            t0 + Duration::from_millis(9),
            Err(FailKind::Timeout),
        );
        drop(log);
        let p = path(&dir, &urls[0]);
        let rows = read(&p, "r.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert!((rows[0].latency_s() - 0.003).abs() < 2e-6, "{rows:?}");
        assert_eq!(rows[0].status, Some(200));
        assert_eq!(rows[1].failure.as_deref(), Some("timeout"));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!((rows[0].intended - now).abs() < 5.0, "{rows:?}");
        // A torn last line is a killed run's: left out. A torn line before it is an error.
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{text}1795698614.55")).unwrap();
        assert_eq!(read(&p, "r.csv").unwrap().len(), 2);
        std::fs::write(
            &p,
            format!("{HEADER}\n1,2\n{}", text.lines().nth(1).unwrap()),
        )
        .unwrap();
        let err = read(&p, "r.csv").unwrap_err().to_string();
        assert!(err.contains("r.csv: line 2"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
