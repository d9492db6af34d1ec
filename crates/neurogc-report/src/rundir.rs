//! Reading a run directory (`docs/runs.md`) as it is: complete, interrupted or partial.
//!
//! What is missing is recorded as a note on the trial and the report goes on; what is
//! malformed is an error naming the file and line. The one exception is the last line of an
//! append-only file (CSV, JSON lines, interval log) that has no line end: the writer died in
//! the middle of it, so it is skipped with a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use neurogc_load::{Row, Summary};
use serde::Deserialize;
use serde_json::Value;

/// `run.json`. Only `kind`, `name`, `status` and `policies` are required; the rest is shown
/// when present.
#[derive(Debug, Clone, Deserialize)]
pub struct RunInfo {
    #[serde(default)]
    pub schema: Option<u32>,
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub created: Option<f64>,
    #[serde(default)]
    pub finished: Option<f64>,
    pub status: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub app: Value,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub repeat: Option<u32>,
    #[serde(default)]
    pub warmup_s: Option<f64>,
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub interval_s: Option<f64>,
    #[serde(default)]
    pub load: Value,
    pub policies: Vec<PolicyEntry>,
    #[serde(default)]
    pub pinning: Option<Pinning>,
    #[serde(default)]
    pub system: SystemInfo,
    #[serde(default)]
    pub trials: Vec<TrialRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PolicyEntry {
    pub label: String,
    pub spec: String,
    /// The model's `model.json` for model-driven policies.
    #[serde(default)]
    pub model: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TrialRef {
    pub dir: String,
    pub label: String,
    pub repetition: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Pinning {
    #[serde(default)]
    pub server_cpus: Vec<usize>,
    #[serde(default)]
    pub load_cpus: Vec<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
pub struct SystemInfo {
    #[serde(default)]
    pub cpu_model: Option<String>,
    #[serde(default)]
    pub cores: Option<u64>,
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    #[serde(default)]
    pub os: Option<String>,
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub neurogc_version: Option<String>,
}

/// `trial.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct TrialInfo {
    pub label: String,
    #[serde(default)]
    pub spec: Option<String>,
    #[serde(default)]
    pub repetition: Option<u32>,
    #[serde(default)]
    pub order: Option<u32>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub started: Option<f64>,
    #[serde(default)]
    pub ready: Option<f64>,
    #[serde(default)]
    pub measure_start: Option<f64>,
    #[serde(default)]
    pub measure_end: Option<f64>,
    pub status: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub load_summary: Option<Value>,
}

/// `rate-search.json` (written by `--rate auto`).
#[derive(Debug, Clone, Deserialize)]
pub struct RateSearch {
    #[serde(default)]
    pub start_rps: Option<f64>,
    #[serde(default)]
    pub probe_s: Option<f64>,
    #[serde(default)]
    pub fraction: Option<f64>,
    #[serde(default)]
    pub policies: Vec<PolicySearch>,
    #[serde(default)]
    pub sustainable_rps: Option<f64>,
    #[serde(default)]
    pub limited_by: Option<String>,
    #[serde(default)]
    pub rate: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PolicySearch {
    pub label: String,
    #[serde(default)]
    pub probes: Vec<Probe>,
    #[serde(default)]
    pub sustainable_rps: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Probe {
    pub rate: f64,
    #[serde(default)]
    pub achieved: Option<f64>,
    #[serde(default)]
    pub p50_ms: Option<f64>,
    #[serde(default)]
    pub p99_ms: Option<f64>,
    #[serde(default)]
    pub failures: Option<u64>,
    #[serde(default)]
    pub dropped: Option<u64>,
    #[serde(default)]
    pub sustained: Option<bool>,
    #[serde(default)]
    pub verdict: Option<String>,
}

/// One row of `samples.csv`, the columns the report uses. Empty cells are `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleRow {
    pub time: f64,
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

/// `samples.csv`: its rows and which optional columns it had.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub rows: Vec<SampleRow>,
    /// The file has `requests_gc_overlap` / `requests_gc2_overlap` (older agents did not).
    pub has_overlap: bool,
    /// The file has per-generation `gcN_collections` columns (the seed's files do not).
    pub has_generations: bool,
}

/// One row of `gc-events.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct GcEvent {
    pub time: f64,
    pub generation: usize,
    pub pause_ms: f64,
    pub collected: Option<f64>,
    pub reason: String,
}

/// Everything recorded for one trial. Files that are absent are `None` (and noted).
#[derive(Debug, Clone)]
pub struct TrialData {
    /// The entry in `run.json`.
    pub reference: TrialRef,
    pub dir: PathBuf,
    pub info: Option<TrialInfo>,
    pub samples: Option<Samples>,
    pub gc_events: Option<Vec<GcEvent>>,
    /// The per-second `"task": "all"` rows of `load.jsonl`.
    pub load_rows: Vec<Row>,
    pub load_summary: Option<Summary>,
    /// `latency.hlog`'s untagged intervals merged (µs).
    pub latency: Option<Histogram<u64>>,
    /// What is missing or odd about this trial, for the report.
    pub notes: Vec<String>,
}

impl TrialData {
    /// The trial's status: `trial.json`'s, or `missing` without one.
    pub fn status(&self) -> &str {
        self.info.as_ref().map_or("missing", |i| i.status.as_str())
    }

    pub fn label(&self) -> &str {
        &self.reference.label
    }

    /// `trials/NN-label-rR` → `NN-label-rR`.
    pub fn name(&self) -> &str {
        self.reference
            .dir
            .rsplit('/')
            .next()
            .unwrap_or(&self.reference.dir)
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
    /// Reads `dir`. Errors: no or malformed `run.json`, malformed trial files (naming file and
    /// line). Missing trial files are notes.
    pub fn load(dir: &Path) -> Result<RunData> {
        let run_json = dir.join("run.json");
        if !dir.is_dir() {
            bail!("{}: not a run directory (no such directory)", dir.display());
        }
        let text = std::fs::read_to_string(&run_json).with_context(|| {
            format!(
                "{}: cannot read (is {} a run directory?)",
                run_json.display(),
                dir.display()
            )
        })?;
        let info: RunInfo = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{}: malformed: {e}", run_json.display()))?;
        if info.policies.is_empty() {
            bail!("{}: no policies", run_json.display());
        }
        let mut warnings = Vec::new();
        if let Some(s) = info.schema {
            if s != 1 {
                warnings.push(format!(
                    "run.json has schema {s}; this report understands schema 1"
                ));
            }
        }
        let rate_path = dir.join("rate-search.json");
        let rate_search = if rate_path.exists() {
            let text = std::fs::read_to_string(&rate_path)
                .with_context(|| format!("{}: cannot read", rate_path.display()))?;
            Some(
                serde_json::from_str(&text)
                    .map_err(|e| anyhow!("{}: malformed: {e}", rate_path.display()))?,
            )
        } else {
            None
        };
        let mut trials = Vec::new();
        for r in &info.trials {
            if !info.policies.iter().any(|p| p.label == r.label) {
                warnings.push(format!(
                    "trial {} has label {:?}, which is not among the run's policies; left out",
                    r.dir, r.label
                ));
                continue;
            }
            let trial = load_trial(dir, r, &mut warnings)?;
            trials.push(trial);
        }
        Ok(RunData {
            dir: dir.to_path_buf(),
            info,
            rate_search,
            trials,
            warnings,
        })
    }

    /// The baseline: the first policy.
    pub fn baseline(&self) -> &PolicyEntry {
        &self.info.policies[0]
    }

    /// An A/A run: at least two policies, all with the same spec.
    pub fn is_aa(&self) -> bool {
        let p = &self.info.policies;
        p.len() >= 2 && p.iter().all(|x| x.spec == p[0].spec)
    }
}

fn load_trial(run_dir: &Path, r: &TrialRef, warnings: &mut Vec<String>) -> Result<TrialData> {
    let dir = run_dir.join(&r.dir);
    let mut t = TrialData {
        reference: r.clone(),
        dir: dir.clone(),
        info: None,
        samples: None,
        gc_events: None,
        load_rows: Vec::new(),
        load_summary: None,
        latency: None,
        notes: Vec::new(),
    };
    if !dir.is_dir() {
        t.notes.push(format!("no folder {}", r.dir));
        return Ok(t);
    }
    let tj = dir.join("trial.json");
    match std::fs::read_to_string(&tj) {
        Ok(text) => {
            let info: TrialInfo = serde_json::from_str(&text)
                .map_err(|e| anyhow!("{}: malformed: {e}", tj.display()))?;
            t.info = Some(info);
        }
        Err(_) => t.notes.push("no trial.json".to_string()),
    }
    let rel = |name: &str| format!("{}/{name}", r.dir);

    let path = dir.join("samples.csv");
    if path.exists() {
        let (samples, w) = read_samples(&path, &rel("samples.csv"))?;
        warnings.extend(w);
        t.samples = Some(samples);
    } else {
        t.notes.push("no samples.csv".to_string());
    }

    let path = dir.join("gc-events.csv");
    if path.exists() {
        let (events, w) = read_gc_events(&path, &rel("gc-events.csv"))?;
        warnings.extend(w);
        t.gc_events = Some(events);
    }

    let path = dir.join("load.jsonl");
    if path.exists() {
        let port = t.info.as_ref().and_then(|i| i.port);
        let (rows, summary, w) = read_load(&path, &rel("load.jsonl"), port)?;
        warnings.extend(w);
        t.load_rows = rows;
        t.load_summary = summary;
        if t.load_summary.is_none() {
            t.notes
                .push("load.jsonl has no summary (load generator stopped early?)".to_string());
        }
    } else {
        t.notes.push("no load.jsonl".to_string());
    }
    // The summary is also in trial.json; use it when load.jsonl lost its last line.
    if t.load_summary.is_none() {
        if let Some(v) = t.info.as_ref().and_then(|i| i.load_summary.clone()) {
            if let Ok(s) = serde_json::from_value::<Summary>(v) {
                t.load_summary = Some(s);
            }
        }
    }

    let path = dir.join("latency.hlog");
    if path.exists() {
        let (hist, w) = read_hlog(&path, &rel("latency.hlog"))?;
        warnings.extend(w);
        t.latency = Some(hist);
    }
    Ok(t)
}

/// The text of an append-only file, minus a last line without a line end (reported).
fn complete_lines(path: &Path, shown: &str) -> Result<(String, Option<String>)> {
    let mut text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let mut warning = None;
    if !text.is_empty() && !text.ends_with('\n') {
        let cut = text.rfind('\n').map_or(0, |i| i + 1);
        let line_no = text[..cut].lines().count() + 1;
        let partial = text[cut..].to_string();
        text.truncate(cut);
        warning = Some(format!(
            "{shown}: line {line_no} is incomplete ({} bytes, no line end: the writer stopped mid-line); skipped",
            partial.len()
        ));
    }
    Ok((text, warning))
}

/// Column positions by name.
struct Columns {
    index: BTreeMap<String, usize>,
}

impl Columns {
    fn new(headers: &csv::StringRecord) -> Columns {
        Columns {
            index: headers
                .iter()
                .enumerate()
                .map(|(i, h)| (h.trim().to_string(), i))
                .collect(),
        }
    }

    fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }
}

/// Parses a number cell: empty → `None`, `True`/`False` → 1/0, otherwise an f64 or an error.
fn number(shown: &str, rec: &csv::StringRecord, cols: &Columns, name: &str) -> Result<Option<f64>> {
    let Some(&i) = cols.index.get(name) else {
        return Ok(None);
    };
    let line = rec.position().map_or(0, |p| p.line());
    let cell = rec.get(i).unwrap_or("").trim();
    match cell {
        "" => Ok(None),
        "True" | "true" => Ok(Some(1.0)),
        "False" | "false" => Ok(Some(0.0)),
        _ => cell
            .parse::<f64>()
            .map(Some)
            .map_err(|_| anyhow!("{shown}: line {line}, column {name}: {cell:?} is not a number")),
    }
}

fn csv_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(text.as_bytes())
}

fn csv_error(shown: &str, e: csv::Error) -> anyhow::Error {
    match e.position() {
        Some(p) => anyhow!("{shown}: line {}: {e}", p.line()),
        None => anyhow!("{shown}: {e}"),
    }
}

/// Reads `samples.csv` (ours, or the seed's eleven columns). Returns the rows and warnings.
pub fn read_samples(path: &Path, shown: &str) -> Result<(Samples, Vec<String>)> {
    let (text, warning) = complete_lines(path, shown)?;
    let mut warnings: Vec<String> = warning.into_iter().collect();
    let mut rdr = csv_reader(&text);
    let headers = rdr.headers().map_err(|e| csv_error(shown, e))?.clone();
    let cols = Columns::new(&headers);
    let time_col = if cols.has("time") {
        "time"
    } else if cols.has("timestamp") {
        "timestamp"
    } else {
        bail!(
            "{shown}: line 1: no `time` column (header: {})",
            headers.as_slice()
        );
    };
    let mut out = Samples {
        rows: Vec::new(),
        has_overlap: cols.has("requests_gc_overlap"),
        has_generations: cols.has("gc0_collections"),
    };
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_error(shown, e))?;
        let n = |name: &str| number(shown, &rec, &cols, name);
        let line = rec.position().map_or(0, |p| p.line());
        let Some(time) = n(time_col)? else {
            bail!("{shown}: line {line}: empty {time_col}");
        };
        let mut row = SampleRow {
            time,
            cpu: n("cpu")?,
            mem: n("mem")?,
            disk_read: n("disk_read")?,
            disk_write: n("disk_write")?,
            net_sent: n("net_sent")?,
            net_recv: n("net_recv")?,
            interval_s: n("interval_s")?,
            rss_bytes: n("rss_bytes")?,
            requests: n("requests")?,
            requests_gc_overlap: n("requests_gc_overlap")?,
            requests_gc2_overlap: n("requests_gc2_overlap")?,
            ..SampleRow::default()
        };
        for g in 0..3 {
            row.gc_collections[g] = n(&format!("gc{g}_collections"))?;
            row.gc_pause_sum[g] = n(&format!("gc{g}_pause_ms_sum"))?;
            row.gc_pause_max[g] = n(&format!("gc{g}_pause_ms_max"))?;
        }
        out.rows.push(row);
    }
    if out.rows.is_empty() && warnings.is_empty() {
        warnings.push(format!("{shown}: no rows"));
    }
    Ok((out, warnings))
}

/// Reads `gc-events.csv`: `time,generation,pause_ms,collected,uncollectable,reason`.
pub fn read_gc_events(path: &Path, shown: &str) -> Result<(Vec<GcEvent>, Vec<String>)> {
    let (text, warning) = complete_lines(path, shown)?;
    let warnings: Vec<String> = warning.into_iter().collect();
    let mut rdr = csv_reader(&text);
    let headers = rdr.headers().map_err(|e| csv_error(shown, e))?.clone();
    let cols = Columns::new(&headers);
    for required in ["time", "generation", "pause_ms"] {
        if !cols.has(required) {
            bail!(
                "{shown}: line 1: no `{required}` column (header: {})",
                headers.as_slice()
            );
        }
    }
    let mut events = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| csv_error(shown, e))?;
        let n = |name: &str| number(shown, &rec, &cols, name);
        let line = rec.position().map_or(0, |p| p.line());
        let (Some(time), Some(generation), Some(pause_ms)) =
            (n("time")?, n("generation")?, n("pause_ms")?)
        else {
            bail!("{shown}: line {line}: empty time, generation or pause_ms");
        };
        if !(0.0..=2.0).contains(&generation) || generation.fract() != 0.0 {
            bail!("{shown}: line {line}: generation {generation} is not 0, 1 or 2");
        }
        let reason = cols
            .index
            .get("reason")
            .and_then(|&i| rec.get(i))
            .unwrap_or("")
            .to_string();
        events.push(GcEvent {
            time,
            generation: generation as usize,
            pause_ms,
            collected: n("collected")?,
            reason,
        });
    }
    Ok((events, warnings))
}

/// Reads `load.jsonl`: the `"all"` per-second rows (of the trial's host when there are several)
/// and the summary.
pub fn read_load(
    path: &Path,
    shown: &str,
    port: Option<u16>,
) -> Result<(Vec<Row>, Option<Summary>, Vec<String>)> {
    let (text, warning) = complete_lines(path, shown)?;
    let warnings: Vec<String> = warning.into_iter().collect();
    let mut rows = Vec::new();
    let mut summary = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| anyhow!("{shown}: line {line_no}: malformed JSON: {e}"))?;
        match v.get("type").and_then(Value::as_str) {
            Some("second") => {
                let row: Row = serde_json::from_value(v)
                    .map_err(|e| anyhow!("{shown}: line {line_no}: not a load row: {e}"))?;
                if row.task == "all" {
                    rows.push(row);
                }
            }
            Some("summary") => {
                let s: Summary = serde_json::from_value(v)
                    .map_err(|e| anyhow!("{shown}: line {line_no}: not a load summary: {e}"))?;
                summary = Some(s);
            }
            Some(_) => {}
            None => bail!("{shown}: line {line_no}: no \"type\""),
        }
    }
    let mut hosts: Vec<&str> = rows.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.len() > 1 {
        if let Some(port) = port {
            let suffix = format!(":{port}");
            let host = hosts
                .iter()
                .find(|h| h.ends_with(&suffix))
                .map(|h| h.to_string());
            if let Some(host) = host {
                rows.retain(|r| r.host == host);
            }
        }
    }
    Ok((rows, summary, warnings))
}

/// Reads `latency.hlog` and merges its untagged intervals (all of the host's requests).
pub fn read_hlog(path: &Path, shown: &str) -> Result<(Histogram<u64>, Vec<String>)> {
    use base64::Engine as _;
    let (text, warning) = complete_lines(path, shown)?;
    let warnings: Vec<String> = warning.into_iter().collect();
    let mut merged = Histogram::<u64>::new(3).expect("3 significant digits is valid");
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
        }
    }
    Ok((merged, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in its own temporary directory, removed when dropped.
    struct TempFile(PathBuf);

    impl std::ops::Deref for TempFile {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn temp(name: &str, text: &str) -> TempFile {
        let dir = std::env::temp_dir().join(format!(
            "neurogc-report-rundir-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        TempFile(p)
    }

    #[test]
    fn truncated_last_line_is_a_warning() {
        let p = temp("s1.csv", "time,cpu,rss_bytes\n1.0,5,100\n2.0,6,200\n3.0,7");
        let (s, w) = read_samples(&p, "samples.csv").unwrap();
        assert_eq!(s.rows.len(), 2);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("samples.csv: line 4 is incomplete"), "{w:?}");
        assert!(!s.has_overlap);
    }

    #[test]
    fn malformed_middle_line_is_an_error_with_its_line() {
        let p = temp("s2.csv", "time,cpu\n1.0,5\n2.0,abc\n3.0,7\n");
        let e = read_samples(&p, "t/samples.csv").unwrap_err().to_string();
        assert!(e.contains("t/samples.csv: line 3, column cpu"), "{e}");
        let p = temp("s3.csv", "time,cpu\n1.0,5\n2.0\n3.0,7\n");
        let e = read_samples(&p, "t/samples.csv").unwrap_err().to_string();
        assert!(e.contains("t/samples.csv: line 3"), "{e}");
    }

    #[test]
    fn seed_csv_reads() {
        let p = temp(
            "seed.csv",
            "timestamp,cpu,mem,disk_read,disk_write,net_sent,net_recv,rps,p95,p99,gc_triggered,server\n1.0,5,50,1,2,3,4,5,6,7,True,with_gc\n",
        );
        let (s, w) = read_samples(&p, "x").unwrap();
        assert!(w.is_empty());
        assert_eq!(s.rows[0].cpu, Some(5.0));
        assert!(!s.has_generations);
    }

    #[test]
    fn gc_events() {
        let p = temp(
            "gc.csv",
            "time,generation,pause_ms,collected,uncollectable,reason\n1.5,0,0.2,10,0,runtime\n2.5,2,12.5,,0,policy\n",
        );
        let (ev, w) = read_gc_events(&p, "gc").unwrap();
        assert!(w.is_empty());
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[1].generation, 2);
        assert_eq!(ev[1].collected, None);
        assert_eq!(ev[1].reason, "policy");
        let p = temp("gc2.csv", "time,generation,pause_ms\n1.5,3,0.2\n");
        let e = read_gc_events(&p, "gc").unwrap_err().to_string();
        assert!(e.contains("gc: line 2: generation 3"), "{e}");
    }
}
