//! One value per metric per trial, from the trial's measured window.

use std::collections::BTreeMap;

use crate::metric::Metric;
use crate::pooled::Counts;
use crate::rundir::{SampleRow, TrialData, TrialStatus};

/// How a trial counts in the aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usable {
    /// Complete: counts.
    Complete,
    /// Measured, but not to the end (interrupted or failed mid-way): counts only when a
    /// policy has no complete trial.
    Partial,
    /// Nothing measured (never reached the measured window, or no trial.json).
    No,
}

/// A trial reduced to numbers.
#[derive(Debug, Clone)]
pub struct TrialMetrics {
    pub name: String,
    pub label: String,
    pub repetition: u32,
    /// What pairs this unit with the other policies' units that ran in the same window:
    /// (repetition, round); the round is 0 except in turns runs, one unit per round.
    pub pair: (u32, u32),
    /// `trial.json`'s status; `None` without one.
    pub status: Option<TrialStatus>,
    pub usable: Usable,
    /// The measured window, Unix seconds.
    pub window: Option<(f64, f64)>,
    pub values: BTreeMap<Metric, f64>,
    /// Requests completed in the window (load generator).
    pub requests: Option<u64>,
    /// The unit's requests' latencies (from `latency.hlog`), for percentiles pooled over units.
    pub latency: Option<Counts>,
    /// What is missing or odd, for the report.
    pub notes: Vec<String>,
    /// A file of the trial is malformed: left out (the reason is the note).
    pub damaged: bool,
}

impl TrialMetrics {
    /// The status in words: `damaged`, else `trial.json`'s, or `missing` without one.
    pub fn status_text(&self) -> &'static str {
        if self.damaged {
            return "damaged";
        }
        self.status.map_or("missing", TrialStatus::as_str)
    }

    pub fn get(&self, m: Metric) -> Option<f64> {
        self.values.get(&m).copied()
    }

    /// Measured seconds of the window.
    pub fn window_s(&self) -> Option<f64> {
        self.window.map(|(a, b)| b - a)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// Reduces a trial. `interval_s` is the run's sample interval, used when a sample has none.
pub fn compute(t: &TrialData, interval_s: Option<f64>) -> TrialMetrics {
    let mut m = TrialMetrics {
        name: t.name().to_string(),
        label: t.label().to_string(),
        repetition: t.reference.repetition,
        pair: (t.reference.repetition, 0),
        status: t.status(),
        usable: Usable::No,
        window: None,
        values: BTreeMap::new(),
        requests: None,
        latency: None,
        notes: t.notes.clone(),
        damaged: t.damaged.is_some(),
    };
    if let Some(reason) = &t.damaged {
        m.notes = vec![reason.clone()];
        return m;
    }
    if let Some(e) = t.info.as_ref().and_then(|i| i.error.as_deref()) {
        m.notes.push(format!("error: {e}"));
    }
    let Some(start) = t.info.as_ref().and_then(|i| i.measure_start) else {
        if t.info.is_some() {
            // Which files are missing does not matter: nothing was measured.
            m.notes.retain(|n| n.starts_with("error:"));
            m.notes
                .push("never reached its measured window: nothing measured".to_string());
        }
        return m;
    };
    let end = match t.info.as_ref().and_then(|i| i.measure_end) {
        Some(e) => e,
        None => {
            // Interrupted mid-measurement: the window ends with the last thing recorded.
            let last_sample = t
                .samples
                .as_ref()
                .and_then(|s| s.rows.last().map(|r| r.time));
            let last_row = t.load_rows.last().map(|r| r.t);
            let end = last_sample
                .into_iter()
                .chain(last_row)
                .fold(start, f64::max);
            m.notes.push(format!(
                "measurement did not end (no measure_end): window cut at the last record, {:.1} s",
                end - start
            ));
            end
        }
    };
    m.window = Some((start, end));
    let said_complete = m.status == Some(TrialStatus::Complete);
    let complete = said_complete && t.info.as_ref().is_some_and(|i| i.measure_end.is_some());
    m.usable = if complete {
        Usable::Complete
    } else {
        Usable::Partial
    };
    if !complete && said_complete {
        m.notes
            .push("complete, but without measure_end".to_string());
    }

    let in_window = |time: f64| time >= start && time <= end;
    let samples: Vec<&SampleRow> = t
        .samples
        .as_ref()
        .map(|s| s.rows.iter().filter(|r| in_window(r.time)).collect())
        .unwrap_or_default();
    if t.gc_events.is_none() {
        m.notes.push(
            if t.samples.as_ref().is_some_and(|s| s.has_generations) {
                "no gc-events.csv: GC counts and pauses from samples.csv"
            } else {
                "no gc-events.csv: no GC counts"
            }
            .to_string(),
        );
    }
    if t.latency.is_none() {
        m.notes.push(
            if t.load_summary.is_some() {
                "no latency.hlog: percentiles from load.jsonl's summary"
            } else {
                "no latency.hlog and no load summary: no latency percentiles"
            }
            .to_string(),
        );
    }
    if t.samples.is_some() && samples.is_empty() {
        m.notes
            .push("samples.csv has no row in the measured window".to_string());
    }
    resources(&mut m, &samples);
    gc(&mut m, t, &samples, start, end, interval_s);
    latency(&mut m, t);
    // The whole trial's requests: the merged histogram rundir already made.
    m.latency = t.latency.as_ref().map(Counts::of);
    cpu_per_request(&mut m, &samples, interval_s);
    if m.requests == Some(0) {
        m.notes
            .push("no request completed in the measured window: no latency".to_string());
    }
    m
}

/// A turns trial, one unit per round: latency from the round's turn line (its own histogram),
/// everything else from what was recorded during that turn. The trial's own unit stands in when
/// it has no turn lines (it never reached its measured window, say).
pub fn compute_rounds(t: &TrialData, interval_s: Option<f64>) -> Vec<TrialMetrics> {
    let whole = compute(t, interval_s);
    if t.turns.is_empty() || whole.usable == Usable::No {
        return vec![whole];
    }
    let half = interval_s.unwrap_or(1.0) / 2.0;
    // Each second of the latency log belongs to the last turn that began before its middle:
    // requests still answered after a turn's end are that turn's.
    let starts: Vec<f64> = t.turns.iter().map(|r| r.t - r.interval_s).collect();
    let mut seconds_of_turn: Vec<Vec<&Counts>> = vec![Vec::new(); t.turns.len()];
    for (start, counts) in &t.latency_seconds {
        let middle = start + 0.5;
        if let Some(i) = starts.iter().rposition(|&s| s <= middle) {
            seconds_of_turn[i].push(counts);
        }
    }
    t.turns
        .iter()
        .zip(seconds_of_turn)
        .map(|(row, seconds)| {
            let round = row.turn.unwrap_or(0);
            let (start, end) = (row.t - row.interval_s, row.t);
            let mut m = TrialMetrics {
                name: format!("{} round {}", whole.name, round + 1),
                pair: (whole.repetition, round as u32 + 1),
                window: Some((start, end)),
                values: BTreeMap::new(),
                requests: Some(row.requests),
                latency: (!seconds.is_empty()).then(|| Counts::merge(seconds)),
                notes: Vec::new(),
                ..whole.clone()
            };
            // A sample covers the interval before its time: those ending in the turn, and
            // the one that ends within half an interval after it.
            let samples: Vec<&SampleRow> = t
                .samples
                .as_ref()
                .map(|s| {
                    s.rows
                        .iter()
                        .filter(|r| r.time > start && r.time <= end + half)
                        .collect()
                })
                .unwrap_or_default();
            resources(&mut m, &samples);
            gc(&mut m, t, &samples, start, end, interval_s);
            m.values.insert(Metric::Failures, row.failures as f64);
            if row.interval_s > 0.0 {
                m.values
                    .insert(Metric::Rps, row.requests as f64 / row.interval_s);
            }
            for (metric, v) in [
                (Metric::P50, row.p50_ms),
                (Metric::P95, row.p95_ms),
                (Metric::P99, row.p99_ms),
                (Metric::P999, row.p999_ms),
                (Metric::Max, row.max_ms),
            ] {
                if let Some(v) = v {
                    m.values.insert(metric, v);
                }
            }
            cpu_per_request(&mut m, &samples, interval_s);
            m
        })
        .collect()
}

/// Process CPU seconds over the window (Σ cpu% / 100 × interval) per request, in ms.
fn cpu_per_request(m: &mut TrialMetrics, samples: &[&SampleRow], interval_s: Option<f64>) {
    let cpu_s: f64 = samples
        .iter()
        .filter_map(|r| Some(r.cpu? / 100.0 * r.interval_s.or(interval_s)?))
        .sum();
    if let Some(n) = m.requests.filter(|&n| n > 0) {
        if cpu_s > 0.0 {
            m.values
                .insert(Metric::CpuPerRequest, 1000.0 * cpu_s / n as f64);
        }
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in xs.filter(|x| x.is_finite()) {
        sum += x;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// A column of a sample row.
type Column = fn(&SampleRow) -> Option<f64>;

/// The rows of each process, in first-seen order (one group where the rows name no process).
pub fn by_process<'a>(samples: &[&'a SampleRow]) -> Vec<(Option<u32>, Vec<&'a SampleRow>)> {
    let mut groups: Vec<(Option<u32>, Vec<&'a SampleRow>)> = Vec::new();
    for &r in samples {
        match groups.iter_mut().find(|(pid, _)| *pid == r.pid) {
            Some((_, rows)) => rows.push(r),
            None => groups.push((r.pid, vec![r])),
        }
    }
    groups
}

/// Resource use of the whole service. One process: the mean of its samples. Several (a
/// service's workers): each process' mean, weighted by the share of the window its rows cover
/// (its rows over the best-covered process' rows: one that started or ended mid-window counts
/// for the time it ran), summed.
fn resources(m: &mut TrialMetrics, samples: &[&SampleRow]) {
    let cols: [(Metric, Column); 7] = [
        (Metric::Cpu, |r| r.cpu),
        (Metric::Mem, |r| r.mem),
        (Metric::DiskRead, |r| r.disk_read),
        (Metric::DiskWrite, |r| r.disk_write),
        (Metric::NetSent, |r| r.net_sent),
        (Metric::NetRecv, |r| r.net_recv),
        (Metric::RssMean, |r| r.rss_bytes.map(|b| b / MIB)),
    ];
    let groups = by_process(samples);
    let most = groups.iter().map(|(_, rows)| rows.len()).max().unwrap_or(0);
    for (metric, get) in cols {
        let mut total = None;
        for (_, rows) in &groups {
            if let Some(v) = mean(rows.iter().filter_map(|r| get(r))) {
                let coverage = rows.len() as f64 / most as f64;
                *total.get_or_insert(0.0) += v * coverage;
            }
        }
        if let Some(v) = total {
            m.values.insert(metric, v);
        }
    }
    let peak = crate::rundir::combined_rss(samples)
        .into_iter()
        .map(|(_, rss)| rss)
        .fold(f64::NEG_INFINITY, f64::max);
    if peak.is_finite() {
        m.values.insert(Metric::RssPeak, peak / MIB);
    }
}

fn gc(
    m: &mut TrialMetrics,
    t: &TrialData,
    samples: &[&SampleRow],
    start: f64,
    end: f64,
    interval_s: Option<f64>,
) {
    // Per generation: count, total ms, max ms.
    let mut per_gen: Option<[(f64, f64, f64); 3]> = None;
    if let Some(events) = &t.gc_events {
        let mut g = [(0.0, 0.0, 0.0); 3];
        for e in events.iter().filter(|e| e.time >= start && e.time <= end) {
            let s = &mut g[usize::from(e.generation.min(2))];
            s.0 += 1.0;
            s.1 += e.pause_ms;
            s.2 = f64::max(s.2, e.pause_ms);
        }
        per_gen = Some(g);
    } else if t.samples.as_ref().is_some_and(|s| s.has_generations) && !samples.is_empty() {
        let mut g = [(0.0, 0.0, 0.0); 3];
        for r in samples {
            for (i, s) in g.iter_mut().enumerate() {
                s.0 += r.gc_collections[i].unwrap_or(0.0);
                s.1 += r.gc_pause_sum[i].unwrap_or(0.0);
                s.2 = f64::max(s.2, r.gc_pause_max[i].unwrap_or(0.0));
            }
        }
        per_gen = Some(g);
    }
    if let Some(g) = per_gen {
        for (i, (count, total, max)) in g.iter().enumerate() {
            let (c, tot, mx) = Metric::generation(i);
            m.values.insert(c, *count);
            m.values.insert(tot, *total);
            m.values.insert(mx, *max);
        }
        m.values
            .insert(Metric::GcEvents, g.iter().map(|x| x.0).sum::<f64>());
        let total_ms: f64 = g.iter().map(|x| x.1).sum();
        m.values.insert(Metric::GcTotal, total_ms);
        // Process CPU seconds = Σ cpu% / 100 × interval.
        let cpu_s: f64 = samples
            .iter()
            .filter_map(|r| Some(r.cpu? / 100.0 * r.interval_s.or(interval_s)?))
            .sum();
        if cpu_s > 0.0 {
            m.values
                .insert(Metric::GcCpuShare, 100.0 * total_ms / 1000.0 / cpu_s);
        }
    }
    if t.samples.as_ref().is_some_and(|s| s.has_overlap) && !samples.is_empty() {
        let sum =
            |f: fn(&SampleRow) -> Option<f64>| samples.iter().filter_map(|r| f(r)).sum::<f64>();
        let any = sum(|r| r.requests_gc_overlap);
        m.values.insert(Metric::GcOverlap, any);
        m.values
            .insert(Metric::Gc2Overlap, sum(|r| r.requests_gc2_overlap));
        let requests = sum(|r| r.requests);
        if requests > 0.0 {
            m.values
                .insert(Metric::GcOverlapShare, 100.0 * any / requests);
        }
    }
}

fn latency(m: &mut TrialMetrics, t: &TrialData) {
    // Requests, failures and RPS from load.jsonl: the summary's "all" total, else the seconds.
    let total = t.load_summary.as_ref().and_then(|s| {
        s.rows
            .iter()
            .find(|r| r.task == "all" && r.kind == "total")
            .cloned()
    });
    let (requests, failures, seconds) = match (&t.load_summary, &total) {
        // The row's interval is the host's loaded time (less than the run's when hosts took turns).
        (Some(s), Some(row)) => {
            let loaded = if row.interval_s > 0.0 {
                row.interval_s
            } else {
                s.duration_s
            };
            (row.requests, row.failures, loaded)
        }
        (Some(s), None) => (s.requests, s.failures, s.duration_s),
        _ if !t.load_rows.is_empty() => (
            t.load_rows.iter().map(|r| r.requests).sum(),
            t.load_rows.iter().map(|r| r.failures).sum(),
            t.load_rows.iter().map(|r| r.interval_s).sum(),
        ),
        _ => return,
    };
    m.requests = Some(requests);
    m.values.insert(Metric::Failures, failures as f64);
    if seconds > 0.0 {
        m.values.insert(Metric::Rps, requests as f64 / seconds);
    }
    if let Some(s) = &t.load_summary {
        if s.late_starts > 0 || s.dropped > 0 {
            m.notes.push(format!(
                "the load generator fell behind: {} late starts, {} dropped arrivals",
                s.late_starts, s.dropped
            ));
        }
        // Queues that outlast a turn show as waits; more than a second of them is worth saying.
        if let Some(waited) = s.turn_waits_s.filter(|&w| w >= 1.0) {
            m.notes.push(format!(
                "the turns of this run waited {waited:.1} s in all for a server's queue to drain \
                 before the next server took the load"
            ));
        }
    }
    // Percentiles from the HDR histogram (µs); the summary's row when there is no log.
    let ms = |us: u64| us as f64 / 1000.0;
    match &t.latency {
        Some(h) if !h.is_empty() => {
            m.values.insert(Metric::P50, ms(h.value_at_quantile(0.5)));
            m.values.insert(Metric::P95, ms(h.value_at_quantile(0.95)));
            m.values.insert(Metric::P99, ms(h.value_at_quantile(0.99)));
            m.values
                .insert(Metric::P999, ms(h.value_at_quantile(0.999)));
            m.values.insert(Metric::Max, ms(h.max()));
            if h.len() != requests {
                m.notes.push(format!(
                    "latency.hlog holds {} requests, load.jsonl {requests}",
                    h.len()
                ));
            }
        }
        _ => {
            if let Some(row) = total.filter(|r| r.requests > 0) {
                for (metric, v) in [
                    (Metric::P50, row.p50_ms),
                    (Metric::P95, row.p95_ms),
                    (Metric::P99, row.p99_ms),
                    (Metric::P999, row.p999_ms),
                    (Metric::Max, row.max_ms),
                ] {
                    if let Some(v) = v {
                        m.values.insert(metric, v);
                    }
                }
            }
        }
    }
}
