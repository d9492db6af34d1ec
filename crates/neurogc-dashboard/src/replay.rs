//! `--replay`: a recorded run played back into the store at its own pace (or `--speed` times it).
//!
//! Inputs: a run directory of `neurogc collect`/`bench` (its trials' samples, one server per
//! policy label), any other directory (every sample CSV under it; the server is the file's path without
//! `.csv`, e.g. `default`, `with_gc/samples`, unless the file has a `server` column), or one CSV
//! (the server is its stem unless it has a `server` column, as the seed's benchmark CSVs do).
//! A sample CSV has a header with `time` (ours) or `timestamp` (the seed's); other CSVs in a run
//! directory are skipped. Rows go through the same validation as `POST /api/metrics`; a bad or
//! truncated row is reported with its file and line and skipped. A `nan` or `inf` is a bad cell
//! in a column of the sample schema (as for every reader); in another column it is read as
//! unmeasured (null), and each file says how many it had and the first one's line.
//!
//! A directory is searched at most [`MAX_DEPTH`] folders down, without following symlinks to
//! folders (one that points up, `a -> ..`, would loop); a run directory's trial folders are
//! where `run.json` says, inside the run (`neurogc_record::trial_dir`).

use crate::ingest::{self, Incoming};
use crate::schema;
use crate::store::Store;
use anyhow::Context as _;
use neurogc_core::sample::read::{BadRows, Cell, CsvTable};
use neurogc_record::{files, RunRecord};
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
        find_csvs(path, 0, &mut files, &mut rec.warnings)?;
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
/// the server named by its policy label, so repetitions of a policy continue one series. A
/// service of several processes (its workers' `samples-<pid>.csv`, or several pids in one file)
/// plays each process as its own server, `label/pid`.
fn load_run(dir: &Path, rec: &mut Recording) -> anyhow::Result<()> {
    let run = RunRecord::open(dir)?;
    rec.warnings.extend(run.warnings);
    for trial in &run.trials {
        let process_files = trial.process_files(files::SAMPLES);
        if process_files.is_empty() {
            rec.warnings.push(format!(
                "{}: missing, trial skipped",
                trial.file(files::SAMPLES).display()
            ));
            continue;
        }
        let first = rec.samples.len();
        for file in &process_files {
            let before = rec.samples.len();
            load_csv(&file.path, trial.label(), rec)?;
            // Rows of an older agent that name no process: the file's name does.
            if let Some(pid) = file.pid {
                for s in &mut rec.samples[before..] {
                    s.fields.entry("pid").or_insert_with(|| Value::from(pid));
                }
            }
        }
        // Numbers arrive as floats (`7.0`): a pid is a whole one.
        let pid = |s: &Incoming| {
            s.fields
                .get("pid")
                .and_then(Value::as_f64)
                .filter(|p| p.fract() == 0.0 && *p >= 1.0 && *p <= f64::from(u32::MAX))
                .map(|p| p as u32)
        };
        let mut pids: Vec<Option<u32>> = rec.samples[first..].iter().map(pid).collect();
        pids.sort_unstable();
        pids.dedup();
        if pids.len() > 1 {
            for s in &mut rec.samples[first..] {
                if let Some(p) = pid(s) {
                    s.server = format!("{}/{p}", s.server);
                }
            }
        }
    }
    Ok(())
}

/// How many folders down a directory is searched for CSVs.
pub const MAX_DEPTH: usize = 8;

fn find_csvs(
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        // The entry itself, not what a symlink points to: links to folders are not followed.
        let kind = entry.file_type()?;
        if kind.is_symlink() && path.is_dir() {
            warnings.push(format!(
                "{}: a symlink to a folder; not followed",
                path.display()
            ));
        } else if kind.is_dir() {
            if depth + 1 > MAX_DEPTH {
                warnings.push(format!(
                    "{}: more than {MAX_DEPTH} folders down; not searched",
                    path.display()
                ));
            } else {
                find_csvs(&path, depth + 1, out, warnings)?;
            }
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
    let shown = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            rec.warnings
                .push(format!("{shown}: cannot read: {e}; file skipped"));
            return Ok(());
        }
    };
    let table = match CsvTable::parse(&shown, &bytes, BadRows::Skip) {
        Ok(t) => t,
        Err(e) => {
            rec.warnings.push(format!("{e}; file skipped"));
            return Ok(());
        }
    };
    rec.warnings.extend(table.warnings.iter().cloned());
    let before = rec.samples.len();
    // Non-finite numbers in columns the schema does not know: how many, and the first's place.
    let (mut non_finite, mut first) = (0usize, None);
    for row in &table.rows {
        let mut obj = Map::new();
        for (column, cell) in table.header.columns.iter().zip(&row.cells) {
            let value = match cell {
                // Read as text, which validation would drop without a word.
                Cell::Text(t)
                    if schema::kind(column).is_none()
                        && t.parse::<f64>().is_ok_and(|v| !v.is_finite()) =>
                {
                    non_finite += 1;
                    first.get_or_insert((row.line, column.clone()));
                    Value::Null
                }
                _ => schema::cell_json(cell),
            };
            obj.insert(column.clone(), value);
        }
        obj.entry(schema::SERVER)
            .or_insert_with(|| Value::String(server.to_string()));
        match ingest::validate(Value::Object(obj)) {
            Ok(sample) => rec.samples.push(sample),
            Err(e) => rec
                .warnings
                .push(format!("{shown}:{}: {e}; skipped", row.line)),
        }
    }
    if let Some((line, column)) = first {
        rec.warnings.push(format!(
            "{shown}:{line}: {non_finite} non-finite value(s) (nan/inf) read as unmeasured (null), \
             the first in column {column:?}"
        ));
    }
    if rec.samples.len() > before {
        rec.files.push(path.to_path_buf());
    }
    Ok(())
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
            ingest(store, std::mem::take(&mut batch));
        }
        batch_due = d;
        batch.push(s);
    }
    tokio::time::sleep_until(start + batch_due).await;
    ingest(store, batch);
}

/// A replayed batch the store refuses (past its server limit) is said, not silently lost.
fn ingest(store: &Store, batch: Vec<Incoming>) {
    if let Err(reason) = store.ingest(batch) {
        eprintln!("neurogc dashboard: replay: {reason}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_replay_their_trials_by_label() {
        use neurogc_record::*;
        let root = std::env::temp_dir().join(format!("neurogc-replay-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let app = AppInfo::Cmd {
            command: "app {port}".into(),
        };
        let policy = PolicyEntry {
            label: "default".into(),
            spec: "default".into(),
            model: None,
        };
        let info = RunInfo::new(RunKind::Bench, "r", app, vec![policy]);
        let mut run = RunDir::create(&root, info).unwrap();
        for (rep, t0) in [(1, 10.0), (2, 20.0)] {
            let trial = run.add_trial("default", "default", rep).unwrap();
            std::fs::write(
                trial.samples(),
                format!("time,cpu\n{t0},1\n{},2\n", t0 + 1.0),
            )
            .unwrap();
        }
        let rec = load(&run.path).unwrap();
        assert_eq!(rec.servers(), vec!["default"]);
        let times: Vec<f64> = rec.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, vec![10.0, 11.0, 20.0, 21.0]);

        // A service of three processes: the first's file and two workers' (one written before
        // samples had a pid column: its name says it). Each plays as its own server.
        let trial = run.add_trial("default", "default", 3).unwrap();
        std::fs::write(trial.samples(), "time,cpu,pid\n30,1,7\n31,1,7\n").unwrap();
        std::fs::write(trial.dir.join("samples-8.csv"), "time,cpu,pid\n30.5,2,8\n").unwrap();
        std::fs::write(trial.dir.join("samples-9.csv"), "time,cpu\n30.7,3\n").unwrap();
        let rec = load(&run.path).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            rec.servers(),
            vec!["default", "default/7", "default/8", "default/9"]
        );
        let nine = rec
            .samples
            .iter()
            .find(|s| s.server == "default/9")
            .unwrap();
        assert_eq!(nine.fields.get("pid").and_then(Value::as_f64), Some(9.0));
    }
}
