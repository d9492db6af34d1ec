//! `--replay`: a recorded run played back into the store at its own pace (or `--speed` times it).
//!
//! Inputs: a run directory of `neurogc collect`/`bench` (its trials' samples, one server per
//! policy label), any other directory (every sample CSV under it; the server is the file's path without
//! `.csv`, e.g. `default`, `with_gc/samples`, unless the file has a `server` column), or one CSV
//! (the server is its stem unless it has a `server` column, as the seed's benchmark CSVs do).
//! A sample CSV has a header with `time` (ours) or `timestamp` (the seed's); other CSVs in a run
//! directory are skipped. Rows go through the same validation as `POST /api/metrics`; a bad or
//! truncated row is reported with its file and line and skipped.

use crate::ingest::{self, Incoming};
use crate::schema::{self, Kind};
use crate::store::Store;
use anyhow::Context as _;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A loaded recording, ordered by sample time.
#[derive(Debug, Default)]
pub struct Recording {
    pub samples: Vec<Incoming>,
    /// Files that held samples.
    pub files: Vec<PathBuf>,
    /// What was skipped and why, each starting with `file:line:` (or `file:` for a whole file).
    pub warnings: Vec<String>,
}

impl Recording {
    /// Server names, in first-seen order.
    pub fn servers(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in &self.samples {
            if !out.contains(&s.server.as_str()) {
                out.push(&s.server);
            }
        }
        out
    }

    /// Seconds of sample time the recording spans.
    pub fn span_s(&self) -> f64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.time - a.time,
            _ => 0.0,
        }
    }
}

/// Loads a run directory or a single CSV.
pub fn load(path: &Path) -> anyhow::Result<Recording> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut rec = Recording::default();
    if meta.is_dir() && path.join("run.json").is_file() {
        load_run(path, &mut rec)?;
    } else if meta.is_dir() {
        let mut files = Vec::new();
        find_csvs(path, &mut files)?;
        files.sort();
        for file in files {
            let rel = file.strip_prefix(path).unwrap_or(&file).with_extension("");
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            load_csv(&file, &name, &mut rec)?;
        }
    } else {
        let stem = path.file_stem().map_or_else(
            || "replay".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        load_csv(path, &stem, &mut rec)?;
    }
    if rec.samples.is_empty() {
        anyhow::bail!(
            "no samples in {} (a sample CSV has a header with `time` or `timestamp`){}",
            path.display(),
            rec.warnings
                .first()
                .map_or(String::new(), |w| format!("; first problem: {w}"))
        );
    }
    // Stable: rows with equal times keep file order.
    rec.samples.sort_by(|a, b| a.time.total_cmp(&b.time));
    Ok(rec)
}

/// A run directory of `neurogc collect`/`bench` (docs/runs.md): each trial's `samples.csv`, as
/// the server named by its policy label, so repetitions of a policy continue one series.
fn load_run(dir: &Path, rec: &mut Recording) -> anyhow::Result<()> {
    let run_json = dir.join("run.json");
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(&run_json)
            .with_context(|| format!("cannot read {}", run_json.display()))?,
    )
    .with_context(|| format!("{} is not JSON", run_json.display()))?;
    let trials = run
        .get("trials")
        .and_then(Value::as_array)
        .with_context(|| format!("{}: no `trials` list", run_json.display()))?;
    for trial in trials {
        let (Some(rel), Some(label)) = (
            trial.get("dir").and_then(Value::as_str),
            trial.get("label").and_then(Value::as_str),
        ) else {
            rec.warnings.push(format!(
                "{}: a trial without dir or label, skipped",
                run_json.display()
            ));
            continue;
        };
        let samples = dir.join(rel).join("samples.csv");
        if samples.is_file() {
            load_csv(&samples, label, rec)?;
        } else {
            rec.warnings
                .push(format!("{}: missing, trial skipped", samples.display()));
        }
    }
    Ok(())
}

fn find_csvs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            find_csvs(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Appends one CSV's valid rows to `rec`; `server` names rows without a `server` column.
fn load_csv(path: &Path, server: &str, rec: &mut Recording) -> anyhow::Result<()> {
    let shown = path.display();
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .with_context(|| format!("cannot open {shown}"))?;
    let header = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => {
            rec.warnings
                .push(format!("{shown}: unreadable header: {e}; file skipped"));
            return Ok(());
        }
    };
    let columns: Vec<String> = header.iter().map(|c| c.trim().to_string()).collect();
    if !columns
        .iter()
        .any(|c| c == schema::TIME || c == schema::TIME_ALIAS)
    {
        rec.warnings.push(format!(
            "{shown}: no `time` or `timestamp` column; not a sample CSV, skipped"
        ));
        return Ok(());
    }
    let before = rec.samples.len();
    for result in reader.records() {
        let record = match result {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                rec.warnings
                    .push(format!("{shown}:{line}: unreadable row ({e}); skipped"));
                if e.is_io_error() {
                    break;
                }
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != columns.len() {
            rec.warnings.push(format!(
                "{shown}:{line}: {} fields where the header has {} (truncated row?); skipped",
                record.len(),
                columns.len()
            ));
            continue;
        }
        let mut obj = Map::new();
        for (col, cell) in columns.iter().zip(record.iter()) {
            obj.insert(col.clone(), cell_value(col, cell));
        }
        obj.entry(schema::SERVER)
            .or_insert_with(|| Value::String(server.to_string()));
        match ingest::validate(Value::Object(obj)) {
            Ok(sample) => rec.samples.push(sample),
            Err(e) => rec.warnings.push(format!("{shown}:{line}: {e}; skipped")),
        }
    }
    if rec.samples.len() > before {
        rec.files.push(path.to_path_buf());
    }
    Ok(())
}

/// A CSV cell as the JSON value a client would have posted: empty is unmeasured (null), text
/// columns stay text, anything that reads as a number is one, the rest is left to validation.
fn cell_value(column: &str, cell: &str) -> Value {
    let cell = cell.trim();
    if cell.is_empty() {
        return Value::Null;
    }
    if column == schema::SERVER || schema::kind(column) == Some(Kind::Text) {
        return Value::String(cell.to_string());
    }
    match cell.parse::<f64>() {
        // `nan`/`inf` are how some writers spell "not measured".
        Ok(x) => serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
        Err(_) => Value::String(cell.to_string()),
    }
}

/// Feeds the recording into the store, `speed` times faster than it was recorded; samples due
/// at the same instant go in as one batch. Returns when the last sample is in.
pub async fn play(store: &Store, samples: Vec<Incoming>, speed: f64) {
    let Some(t0) = samples.first().map(|s| s.time) else {
        return;
    };
    let start = tokio::time::Instant::now();
    let due = |s: &Incoming| Duration::from_secs_f64(((s.time - t0) / speed).max(0.0));
    let mut batch: Vec<Incoming> = Vec::new();
    let mut batch_due = Duration::ZERO;
    for s in samples {
        let d = due(&s);
        if !batch.is_empty() && d > batch_due {
            tokio::time::sleep_until(start + batch_due).await;
            store.ingest(std::mem::take(&mut batch));
        }
        batch_due = d;
        batch.push(s);
    }
    tokio::time::sleep_until(start + batch_due).await;
    store.ingest(batch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_become_json_values() {
        assert_eq!(cell_value("cpu", ""), Value::Null);
        assert_eq!(cell_value("cpu", "1.5"), json!(1.5));
        assert_eq!(cell_value("cpu", "nan"), Value::Null);
        assert_eq!(cell_value("gc_triggered", "True"), json!("True"));
        assert_eq!(cell_value("policy", "0"), json!("0"));
        assert_eq!(cell_value("server", "with_gc"), json!("with_gc"));
    }

    #[test]
    fn run_directories_replay_their_trials_by_label() {
        let dir = std::env::temp_dir().join(format!("neurogc-replay-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (trial, t0) in [
            ("trials/01-default-r1", 10.0),
            ("trials/02-default-r2", 20.0),
        ] {
            std::fs::create_dir_all(dir.join(trial)).unwrap();
            std::fs::write(
                dir.join(trial).join("samples.csv"),
                format!("time,cpu\n{t0},1\n{},2\n", t0 + 1.0),
            )
            .unwrap();
            std::fs::write(
                dir.join(trial).join("gc-events.csv"),
                format!("time,generation,pause_ms\n{t0},0,0.1\n"),
            )
            .unwrap();
        }
        std::fs::write(
            dir.join("run.json"),
            r#"{"trials": [{"dir": "trials/01-default-r1", "label": "default", "repetition": 1},
                           {"dir": "trials/02-default-r2", "label": "default", "repetition": 2}]}"#,
        )
        .unwrap();
        let rec = load(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rec.servers(), vec!["default"]);
        let times: Vec<f64> = rec.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, vec![10.0, 11.0, 20.0, 21.0]);
    }
}
