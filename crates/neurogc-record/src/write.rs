//! Creating and updating a run directory. Every JSON file is replaced atomically (a temporary
//! file, then a rename), so a crash or Ctrl-C leaves the last complete version.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::files;
use crate::record::{RunInfo, RunStatus, TrialInfo, TrialRef};

/// Writes `value` as pretty JSON to `path` through a temporary file and a rename.
pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// A run directory being written.
pub struct RunDir {
    pub path: PathBuf,
    pub info: RunInfo,
}

impl RunDir {
    /// Creates `runs_dir/<UTC timestamp>-<name>/` (with a numeric suffix if it exists) and
    /// writes `run.json`.
    pub fn create(runs_dir: &Path, info: RunInfo) -> Result<RunDir> {
        std::fs::create_dir_all(runs_dir)
            .with_context(|| format!("cannot create {}", runs_dir.display()))?;
        let base = format!(
            "{}-{}",
            neurogc_units::utc_stamp(info.created),
            neurogc_units::slug(&info.name)
        );
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
        write_json_atomic(&self.path.join(files::RUN), &self.info)
    }

    /// Adds a trial folder `trials/NN-<label>-rR`, records it in run.json, and writes its
    /// trial.json (status `starting`).
    pub fn add_trial(&mut self, label: &str, spec: &str, repetition: u32) -> Result<Trial> {
        let order = self.info.trials.len() as u32 + 1;
        let rel = format!(
            "trials/{order:02}-{}-r{repetition}",
            neurogc_units::slug(label)
        );
        let dir = self.path.join(&rel);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        self.info.trials.push(TrialRef {
            dir: rel,
            label: label.to_string(),
            repetition,
        });
        self.save()?;
        let trial = Trial {
            dir,
            info: TrialInfo::starting(label, spec, repetition, order),
        };
        trial.save()?;
        Ok(trial)
    }

    /// Records how the run ended.
    pub fn finish(&mut self, status: RunStatus, error: Option<String>) -> Result<()> {
        self.info.finished = Some(neurogc_units::unix_now());
        self.info.status = status;
        self.info.error = error;
        self.save()
    }
}

/// A trial's folder and its `trial.json`.
pub struct Trial {
    pub dir: PathBuf,
    pub info: TrialInfo,
}

impl Trial {
    pub fn samples(&self) -> PathBuf {
        self.dir.join(files::SAMPLES)
    }
    pub fn gc_events(&self) -> PathBuf {
        self.dir.join(files::GC_EVENTS)
    }
    pub fn load_jsonl(&self) -> PathBuf {
        self.dir.join(files::LOAD)
    }
    pub fn hlog(&self) -> PathBuf {
        self.dir.join(files::LATENCY)
    }
    pub fn requests_csv(&self) -> PathBuf {
        self.dir.join(files::REQUESTS)
    }
    pub fn server_log(&self) -> PathBuf {
        self.dir.join(files::SERVER_LOG)
    }
    /// Writes `trial.json` as `self.info` says.
    pub fn save(&self) -> Result<()> {
        write_json_atomic(&self.dir.join(files::TRIAL), &self.info)
    }
}
