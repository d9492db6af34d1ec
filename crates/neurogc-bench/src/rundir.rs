//! The run directory (`docs/runs.md`): `run.json`, one folder per trial, written so that a crash
//! or Ctrl-C keeps what was measured. JSON files are replaced atomically.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::system::SystemInfo;

pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Writes `value` as pretty JSON to `path` through a temporary file and a rename.
pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

#[derive(Serialize, Clone, Debug)]
pub struct PolicyEntry {
    pub label: String,
    pub spec: String,
    /// `model.json` of a `neurogc-seed:` policy's model.
    pub model: Option<Value>,
}

#[derive(Serialize, Clone, Debug)]
pub struct TrialRef {
    pub dir: String,
    pub label: String,
    pub repetition: usize,
}

#[derive(Serialize, Clone, Debug)]
pub struct Pinning {
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
}

/// `run.json`.
#[derive(Serialize, Clone, Debug)]
pub struct RunInfo {
    pub schema: u32,
    pub kind: String,
    pub name: String,
    pub command: Vec<String>,
    pub created: f64,
    pub finished: Option<f64>,
    pub status: String,
    pub error: Option<String>,
    pub app: Value,
    pub mode: String,
    pub repeat: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub interval_s: f64,
    pub load: Value,
    pub policies: Vec<PolicyEntry>,
    pub pinning: Option<Pinning>,
    pub system: SystemInfo,
    pub trials: Vec<TrialRef>,
}

/// `trial.json`.
#[derive(Serialize, Clone, Debug)]
pub struct TrialInfo {
    pub label: String,
    pub spec: String,
    pub repetition: usize,
    pub order: usize,
    pub port: u16,
    pub pid: Option<u32>,
    pub started: Option<f64>,
    pub ready: Option<f64>,
    pub measure_start: Option<f64>,
    pub measure_end: Option<f64>,
    pub status: String,
    pub error: Option<String>,
    pub load_summary: Option<Value>,
}

/// A run directory being written.
pub struct RunDir {
    pub path: PathBuf,
    pub info: RunInfo,
}

impl RunDir {
    /// Creates `runs_dir/<UTC timestamp>-<name>/` (with a numeric suffix if it exists).
    pub fn create(runs_dir: &Path, info: RunInfo) -> Result<RunDir> {
        std::fs::create_dir_all(runs_dir)
            .with_context(|| format!("cannot create {}", runs_dir.display()))?;
        let base = format!("{}-{}", utc_stamp(info.created), info.name);
        let mut path = runs_dir.join(&base);
        let mut n = 2;
        while path.exists() {
            path = runs_dir.join(format!("{base}-{n}"));
            n += 1;
        }
        std::fs::create_dir_all(path.join("trials"))
            .with_context(|| format!("cannot create {}", path.display()))?;
        let run = RunDir { path, info };
        run.save()?;
        Ok(run)
    }

    pub fn save(&self) -> Result<()> {
        write_json_atomic(&self.path.join("run.json"), &self.info)
    }

    /// Adds a trial folder `trials/NN-<label>-rR` and returns it.
    pub fn add_trial(&mut self, label: &str, repetition: usize) -> Result<Trial> {
        let order = self.info.trials.len() + 1;
        let rel = format!("trials/{order:02}-{}-r{repetition}", slug(label));
        let dir = self.path.join(&rel);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        self.info.trials.push(TrialRef {
            dir: rel,
            label: label.to_string(),
            repetition,
        });
        self.save()?;
        Ok(Trial { dir, order })
    }

    pub fn finish(&mut self, status: &str, error: Option<String>) -> Result<()> {
        self.info.finished = Some(unix_now());
        self.info.status = status.to_string();
        self.info.error = error;
        self.save()
    }
}

/// A trial's folder.
pub struct Trial {
    pub dir: PathBuf,
    pub order: usize,
}

impl Trial {
    pub fn samples(&self) -> PathBuf {
        self.dir.join("samples.csv")
    }
    pub fn gc_events(&self) -> PathBuf {
        self.dir.join("gc-events.csv")
    }
    pub fn load_jsonl(&self) -> PathBuf {
        self.dir.join("load.jsonl")
    }
    pub fn hlog(&self) -> PathBuf {
        self.dir.join("latency.hlog")
    }
    pub fn server_log(&self) -> PathBuf {
        self.dir.join("server.log")
    }
    pub fn save(&self, info: &TrialInfo) -> Result<()> {
        write_json_atomic(&self.dir.join("trial.json"), info)
    }
}

/// A label as a file-name part: letters, digits, `-`, `_`, `.`; anything else becomes `_`.
pub fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `YYYYmmdd-HHMMSS` in UTC.
pub fn utc_stamp(unix: f64) -> String {
    let [y, mo, d, h, mi, s] = neurogc_load::report::utc_fields(unix);
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0.0), "19700101-000000");
        assert_eq!(utc_stamp(1_795_329_015.5), "20261122-063015");
        assert_eq!(utc_stamp(951_782_400.0), "20000229-000000");
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("neurogc-seed"), "neurogc-seed");
        assert_eq!(slug("a/b c:d"), "a_b_c_d");
    }
}
