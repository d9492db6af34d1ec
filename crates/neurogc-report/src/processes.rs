//! The processes of a service, one row each: a trial whose service ran several (gunicorn's
//! master and workers, uvicorn's spawned workers) has a file per process (`samples-<pid>.csv`,
//! `gc-events-<pid>.csv`); the trial's metrics are the whole service's, and this section shows
//! what each process did in the measured window.

use std::fmt::Write as _;

use crate::format::cell_text;
use crate::rundir::{RunData, SampleRow, TrialData};
use crate::trial::by_process;

const MIB: f64 = 1024.0 * 1024.0;

/// One process of one trial, over the trial's measured window.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessRow {
    pub pid: Option<u32>,
    pub samples: usize,
    pub cpu_mean: Option<f64>,
    pub rss_mean_mib: Option<f64>,
    pub rss_peak_mib: Option<f64>,
    /// Requests its middleware counted (`None`: it counted none, e.g. gunicorn's master).
    pub requests: Option<f64>,
    /// Collections per generation, and the longest full collection (ms), from its GC events.
    pub collections: Option<[u64; 3]>,
    pub gen2_max_ms: Option<f64>,
}

/// Each process of `t` in its measured window, in the order their files were read (the first
/// process, then the others by pid). Empty when the trial has no window or no samples.
pub fn of_trial(t: &TrialData) -> Vec<ProcessRow> {
    let Some(info) = &t.info else { return vec![] };
    let Some(start) = info.measure_start else {
        return vec![];
    };
    let end = info.measure_end.unwrap_or(f64::INFINITY);
    let inside = |time: f64| time >= start && time <= end;
    let rows: Vec<&SampleRow> = t
        .samples
        .as_ref()
        .map(|s| s.rows.iter().filter(|r| inside(r.time)).collect())
        .unwrap_or_default();
    by_process(&rows)
        .into_iter()
        .map(|(pid, rows)| {
            let mean =
                |xs: Vec<f64>| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
            let rss: Vec<f64> = rows.iter().filter_map(|r| r.rss_bytes).collect();
            let requests: Vec<f64> = rows.iter().filter_map(|r| r.requests).collect();
            let (collections, gen2_max_ms) = match &t.gc_events {
                Some(events) => {
                    let mine = events
                        .iter()
                        .filter(|e| e.pid == pid && inside(e.time))
                        .collect::<Vec<_>>();
                    let mut counts = [0u64; 3];
                    for e in &mine {
                        counts[usize::from(e.generation.min(2))] += 1;
                    }
                    let max = mine
                        .iter()
                        .filter(|e| e.generation == 2)
                        .map(|e| e.pause_ms)
                        .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
                    (Some(counts), max)
                }
                None => (None, None),
            };
            ProcessRow {
                pid,
                samples: rows.len(),
                cpu_mean: mean(rows.iter().filter_map(|r| r.cpu).collect()),
                rss_mean_mib: mean(rss.clone()).map(|b| b / MIB),
                rss_peak_mib: rss.iter().copied().reduce(f64::max).map(|b| b / MIB),
                requests: (!requests.is_empty()).then(|| requests.iter().sum()),
                collections,
                gen2_max_ms,
            }
        })
        .collect()
}

/// The section, when any trial's service ran more than one process; nothing otherwise.
pub fn section(md: &mut String, run: &RunData) {
    let trials: Vec<(&TrialData, Vec<ProcessRow>)> = run
        .trials
        .iter()
        .map(|t| (t, of_trial(t)))
        .filter(|(_, rows)| rows.len() > 1)
        .collect();
    if trials.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Processes\n");
    let _ = writeln!(
        md,
        "The service ran several processes (a master and its workers): each wrote its own \
         samples and GC events, and the tables above are the whole service's (CPU, memory and \
         RSS summed over its processes, collections and overlaps counted over all of them). \
         Here each process of the measured window on its own; `requests` is empty for a \
         process no middleware counted requests in (gunicorn's master).\n"
    );
    let _ = writeln!(
        md,
        "| trial | pid | samples | CPU % | RSS MiB (mean) | RSS MiB (peak) | requests | collections gen 0 / 1 / 2 | longest gen 2 ms |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let num =
        |v: Option<f64>, digits: usize| v.map_or_else(|| "—".into(), |v| format!("{v:.digits$}"));
    for (t, rows) in trials {
        for p in rows {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell_text(t.name()),
                p.pid.map_or_else(|| "?".into(), |p| p.to_string()),
                p.samples,
                num(p.cpu_mean, 1),
                num(p.rss_mean_mib, 1),
                num(p.rss_peak_mib, 1),
                num(p.requests, 0),
                p.collections
                    .map_or_else(|| "—".into(), |c| format!("{} / {} / {}", c[0], c[1], c[2])),
                num(p.gen2_max_ms, 1),
            );
        }
    }
    md.push('\n');
}
