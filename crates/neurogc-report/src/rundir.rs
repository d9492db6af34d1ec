//! A run directory read for the report: the run record (`neurogc-record`) plus each trial's
//! measurements, read by the crates that own their formats (samples and GC events by
//! `neurogc-core`, the load generator's output by `neurogc-load`).
//!
//! What is missing is recorded as a note on the trial and the report goes on. A trial file that
//! is malformed (empty, a torn row in the middle, a value that is not a finite number) makes
//! the trial damaged: it is left out with the reason, naming the file and line, and the report
//! goes on with the others. The last line of an append-only file (CSV, JSON lines, interval
//! log) that has no line end is not damage: the writer died in the middle of it, so it is
//! skipped with a warning. Only a bad `run.json` (or `trial.json`, `rate-search.json`) is an
//! error for the whole run.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use neurogc_core::gcstats::{read_events, RecordedEvent};
use neurogc_core::sample::read::{BadRows, CsvTable};
use neurogc_load::{Row, Summary};

use crate::pooled::Counts;
pub use neurogc_record::{
    files, PolicyEntry, RateSearch, RunInfo, RunRecord, SystemInfo, TrialEntry, TrialInfo,
    TrialRef, TrialStatus,
};

/// One row of `samples.csv`, the columns the report uses. Empty cells are `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleRow {
    pub time: f64,
    /// The process that took it: its `pid` column, else the file's name (`samples-<pid>.csv`);
    /// `None` in a file that says neither (the seed's).
    pub pid: Option<u32>,
    pub cpu: Option<f64>,
    pub mem: Option<f64>,
    pub disk_read: Option<f64>,
    pub disk_write: Option<f64>,
    pub net_sent: Option<f64>,
    pub net_recv: Option<f64>,
    pub interval_s: Option<f64>,
    pub rss_bytes: Option<f64>,
    pub requests: Option<f64>,
    pub requests_gc_overlap: Option<f64>,
    pub requests_gc2_overlap: Option<f64>,
    /// Per generation: collections, pause sum (ms), pause max (ms) in the interval.
    pub gc_collections: [Option<f64>; 3],
    pub gc_pause_sum: [Option<f64>; 3],
    pub gc_pause_max: [Option<f64>; 3],
}

/// A trial's samples: every process's (`samples.csv`, then each `samples-<pid>.csv`), and which
/// optional columns they had.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Each file's rows in time order, the files one after the other.
    pub rows: Vec<SampleRow>,
    /// The file has `requests_gc_overlap` / `requests_gc2_overlap` (older agents did not).
    pub has_overlap: bool,
    /// The file has per-generation `gcN_collections` columns (the seed's files do not).
    pub has_generations: bool,
}

impl Samples {
    /// The processes the rows come from, in first-seen order (`None`: rows that name none).
    pub fn processes(&self) -> Vec<Option<u32>> {
        let mut out = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.pid) {
                out.push(r.pid);
            }
        }
        out
    }

    /// Adds another process's file (`has_*` hold only where every file has the column).
    fn extend(&mut self, other: Samples) {
        if self.rows.is_empty() {
            *self = other;
            return;
        }
        self.has_overlap &= other.has_overlap;
        self.has_generations &= other.has_generations;
        self.rows.extend(other.rows);
    }
}

/// The service's resident memory over time: at each row's time, the sum of every process's latest
/// RSS (a process counts from its first row in `rows`). One process: its own RSS.
pub fn combined_rss(rows: &[&SampleRow]) -> Vec<(f64, f64)> {
    let mut order: Vec<&SampleRow> = rows
        .iter()
        .copied()
        .filter(|r| r.rss_bytes.is_some())
        .collect();
    order.sort_by(|a, b| a.time.total_cmp(&b.time));
    let mut latest: Vec<(Option<u32>, f64)> = Vec::new();
    let mut out = Vec::with_capacity(order.len());
    for r in order {
        let rss = r.rss_bytes.unwrap_or(0.0);
        match latest.iter_mut().find(|(pid, _)| *pid == r.pid) {
            Some(slot) => slot.1 = rss,
            None => latest.push((r.pid, rss)),
        }
        out.push((r.time, latest.iter().map(|(_, v)| v).sum()));
    }
    out
}

/// Everything recorded for one trial. Files that are absent are `None` (and noted).
#[derive(Debug, Clone)]
pub struct TrialData {
    /// The entry in `run.json`.
    pub reference: TrialRef,
    pub dir: PathBuf,
    pub info: Option<TrialInfo>,
    pub samples: Option<Samples>,
    pub gc_events: Option<Vec<RecordedEvent>>,
    /// The per-second `"task": "all"` rows of `load.jsonl`.
    pub load_rows: Vec<Row>,
    /// Taking turns: the trial's turn lines (one per round), in order.
    pub turns: Vec<Row>,
    pub load_summary: Option<Summary>,
    /// `latency.hlog`'s untagged intervals merged (µs).
    pub latency: Option<Histogram<u64>>,
    /// `latency.hlog`'s untagged intervals (one per second), each with its start (Unix s).
    pub latency_seconds: Vec<(f64, Counts)>,
    /// What is missing or odd about this trial, for the report.
    pub notes: Vec<String>,
    /// Why the trial is left out: a file of it is malformed (`file:line: what`).
    pub damaged: Option<String>,
}

impl TrialData {
    /// The trial's status: `trial.json`'s, or `None` without one.
    pub fn status(&self) -> Option<TrialStatus> {
        self.info.as_ref().map(|i| i.status)
    }

    pub fn label(&self) -> &str {
        &self.reference.label
    }

    /// `trials/NN-label-rR` → `NN-label-rR`.
    pub fn name(&self) -> &str {
        self.reference.name()
    }
}

/// A run directory, read.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub info: RunInfo,
    pub rate_search: Option<RateSearch>,
    pub trials: Vec<TrialData>,
    /// Warnings about the run as a whole (truncated lines are also here, with their file).
    pub warnings: Vec<String>,
}

impl RunData {
    /// Reads `dir`. Errors: what [`RunRecord::open`] refuses. Missing trial files are notes,
    /// malformed ones make their trial damaged (and a warning).
    pub fn load(dir: &Path) -> Result<RunData> {
        let record = RunRecord::open(dir)?;
        let mut warnings = record.warnings;
        let trials = record
            .trials
            .into_iter()
            .map(|t| load_trial(t, &mut warnings))
            .collect();
        Ok(RunData {
            dir: record.dir,
            info: record.info,
            rate_search: record.rate_search,
            trials,
            warnings,
        })
    }

    /// The baseline: the first policy.
    pub fn baseline(&self) -> &PolicyEntry {
        self.info.baseline()
    }

    /// An A/A run: at least two policies, all with the same spec.
    pub fn is_aa(&self) -> bool {
        self.info.is_aa()
    }
}

/// Reads a trial's files; the first malformed one makes it damaged.
fn load_trial(entry: TrialEntry, warnings: &mut Vec<String>) -> TrialData {
    let mut t = blank(&entry);
    if let Err(e) = read_trial(&entry, &mut t, warnings) {
        let reason = format!("{e:#}");
        warnings.push(format!(
            "trial {} is damaged and left out: {reason}",
            entry.name()
        ));
        t = TrialData {
            damaged: Some(reason),
            ..blank(&entry)
        };
    }
    t
}

fn blank(entry: &TrialEntry) -> TrialData {
    TrialData {
        dir: entry.dir.clone(),
        info: entry.info.clone(),
        samples: None,
        gc_events: None,
        load_rows: Vec::new(),
        turns: Vec::new(),
        load_summary: None,
        latency: None,
        latency_seconds: Vec::new(),
        notes: entry.notes.clone(),
        reference: entry.reference.clone(),
        damaged: None,
    }
}

/// `name` of the trial when it exists. A 0-byte file is damage (said as such, not as a
/// missing header): every writer puts something in a file it creates.
fn present(entry: &TrialEntry, name: &str) -> Result<Option<(PathBuf, String)>> {
    let (path, shown) = (entry.file(name), entry.shown(name));
    match std::fs::metadata(&path) {
        Err(_) => Ok(None),
        Ok(m) if m.is_file() && m.len() == 0 => Err(anyhow!(
            "{shown}: empty (0 bytes: its writer was stopped before the first line)"
        )),
        Ok(_) => Ok(Some((path, shown))),
    }
}

/// Like [`present`], for one process's file: false when it went away since it was listed.
fn present_file(file: &neurogc_record::ProcessFile) -> Result<bool> {
    match std::fs::metadata(&file.path) {
        Err(_) => Ok(false),
        Ok(m) if m.is_file() && m.len() == 0 => Err(anyhow!(
            "{}: empty (0 bytes: its writer was stopped before the first line)",
            file.shown
        )),
        Ok(m) => Ok(m.is_file()),
    }
}

fn read_trial(entry: &TrialEntry, t: &mut TrialData, warnings: &mut Vec<String>) -> Result<()> {
    if !t.dir.is_dir() {
        return Ok(());
    }
    // Every process of the service: the first's file, then each worker's (`samples-<pid>.csv`).
    // The first process' GC events from before their `pid` column are its samples' process.
    let mut first_pid = None;
    for file in entry.process_files(files::SAMPLES) {
        if present_file(&file)? {
            let (mut samples, w) = read_samples(&file.path, &file.shown)?;
            warnings.extend(w);
            for row in samples.rows.iter_mut() {
                row.pid = row.pid.or(file.pid);
            }
            if file.pid.is_none() {
                first_pid = samples.rows.first().and_then(|r| r.pid);
            }
            t.samples
                .get_or_insert_with(Samples::default)
                .extend(samples);
        }
    }
    if t.samples.is_none() {
        t.notes.push(format!("no {}", files::SAMPLES));
    }

    for file in entry.process_files(files::GC_EVENTS) {
        if present_file(&file)? {
            let (mut events, w) = read_events(&file.path, &file.shown)?;
            warnings.extend(w);
            for e in events.iter_mut() {
                e.pid = e.pid.or(file.pid).or(first_pid);
            }
            t.gc_events.get_or_insert_with(Vec::new).extend(events);
        }
    }

    if let Some((path, shown)) = present(entry, files::LOAD)? {
        let out = neurogc_load::read_json_lines(&path, &shown)?;
        warnings.extend(out.warnings);
        // Each trial's file holds its own host's rows; older runs kept every host's.
        let host = t
            .info
            .as_ref()
            .map(|i| format!("http://127.0.0.1:{}", i.port));
        let hosts: std::collections::BTreeSet<&str> =
            out.rows.iter().map(|r| r.host.as_str()).collect();
        t.load_rows = out
            .rows
            .iter()
            .filter(|r| r.task == "all")
            .filter(|r| hosts.len() < 2 || Some(&r.host) == host.as_ref())
            .cloned()
            .collect();
        t.turns = out
            .turns
            .iter()
            .filter(|r| hosts.len() < 2 || Some(&r.host) == host.as_ref())
            .cloned()
            .collect();
        t.turns.sort_by_key(|r| r.turn);
        t.load_summary = out.summary;
        if t.load_summary.is_none() {
            t.notes
                .push("load.jsonl has no summary (load generator stopped early?)".to_string());
        }
    } else {
        t.notes.push(format!("no {}", files::LOAD));
    }
    // The summary is also in trial.json; use it when load.jsonl lost its last line.
    if t.load_summary.is_none() {
        t.load_summary = t.info.as_ref().and_then(|i| i.load_summary.clone());
    }

    if let Some((path, shown)) = present(entry, files::LATENCY)? {
        let log = read_hlog(&path, &shown)?;
        warnings.extend(log.warnings);
        t.latency = Some(log.merged);
        t.latency_seconds = log.intervals;
    }
    Ok(())
}

/// The text of an append-only file, minus a last line without a line end (reported).
fn complete_lines(path: &Path, shown: &str) -> Result<(String, Option<String>)> {
    let mut text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("{shown}: cannot read: {e}"))?;
    let mut warning = None;
    if !text.is_empty() && !text.ends_with('\n') {
        let cut = text.rfind('\n').map_or(0, |i| i + 1);
        let line_no = text[..cut].lines().count() + 1;
        text.truncate(cut);
        warning = Some(format!(
            "{shown}:{line_no}: incomplete last line (no line end: the writer stopped mid-line); skipped"
        ));
    }
    Ok((text, warning))
}

/// Reads `samples.csv` (ours, or the seed's eleven columns). Returns the rows and warnings.
pub fn read_samples(path: &Path, shown: &str) -> Result<(Samples, Vec<String>)> {
    let table = CsvTable::read(path, shown, BadRows::Fail)?;
    let mut warnings = table.warnings.clone();
    let mut out = Samples {
        rows: Vec::with_capacity(table.rows.len()),
        has_overlap: table.has("requests_gc_overlap"),
        has_generations: table.has("gc0_collections"),
    };
    for r in &table.rows {
        let n = |name: &str| table.number(r, name);
        let mut row = SampleRow {
            time: table.time(r),
            pid: n("pid")
                .filter(|p| p.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(p))
                .map(|p| p as u32),
            cpu: n("cpu"),
            mem: n("mem"),
            disk_read: n("disk_read"),
            disk_write: n("disk_write"),
            net_sent: n("net_sent"),
            net_recv: n("net_recv"),
            interval_s: n("interval_s"),
            rss_bytes: n("rss_bytes"),
            requests: n("requests"),
            requests_gc_overlap: n("requests_gc_overlap"),
            requests_gc2_overlap: n("requests_gc2_overlap"),
            ..SampleRow::default()
        };
        for g in 0..3 {
            row.gc_collections[g] = n(&format!("gc{g}_collections"));
            row.gc_pause_sum[g] = n(&format!("gc{g}_pause_ms_sum"));
            row.gc_pause_max[g] = n(&format!("gc{g}_pause_ms_max"));
        }
        out.rows.push(row);
    }
    if out.rows.is_empty() && warnings.is_empty() {
        warnings.push(format!("{shown}: no rows"));
    }
    Ok((out, warnings))
}
/// A `latency.hlog` read: its untagged intervals (all of the host's requests) merged and one by one.
pub struct HdrLog {
    pub merged: Histogram<u64>,
    /// Each interval's start (Unix s, from the log's base or start time) and its requests.
    pub intervals: Vec<(f64, Counts)>,
    pub warnings: Vec<String>,
}

/// Reads `latency.hlog`.
pub fn read_hlog(path: &Path, shown: &str) -> Result<HdrLog> {
    use base64::Engine as _;
    let (text, warning) = complete_lines(path, shown)?;
    let warnings: Vec<String> = warning.into_iter().collect();
    let mut merged = Histogram::<u64>::new(3).expect("3 significant digits is valid");
    let mut intervals = Vec::new();
    let (mut start_time, mut base_time) = (None, None);
    let mut de = Deserializer::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let with_end = format!("{line}\n");
        let Some(entry) = IntervalLogIterator::new(with_end.as_bytes()).next() else {
            continue; // comments
        };
        let entry = entry.map_err(|e| anyhow!("{shown}: line {line_no}: {e:?}"))?;
        if let LogEntry::StartTime(t) = entry {
            start_time = Some(t.as_secs_f64());
        }
        if let LogEntry::BaseTime(t) = entry {
            base_time = Some(t.as_secs_f64());
        }
        if let LogEntry::Interval(h) = entry {
            if h.tag().is_some() {
                continue;
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .map_err(|e| anyhow!("{shown}: line {line_no}: bad base64: {e}"))?;
            let hist: Histogram<u64> = de
                .deserialize(&mut bytes.as_slice())
                .map_err(|e| anyhow!("{shown}: line {line_no}: bad histogram: {e:?}"))?;
            merged
                .add(&hist)
                .map_err(|e| anyhow!("{shown}: line {line_no}: cannot merge: {e:?}"))?;
            let origin = base_time.or(start_time).unwrap_or(0.0);
            intervals.push((
                origin + h.start_timestamp().as_secs_f64(),
                Counts::of(&hist),
            ));
        }
    }
    Ok(HdrLog {
        merged,
        intervals,
        warnings,
    })
}
