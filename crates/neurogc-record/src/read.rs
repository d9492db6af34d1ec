//! Opening a run directory as it is: complete, interrupted or partial. What is missing is a note
//! on the trial; what is malformed is an error naming the file. A trial path that would leave the
//! run directory (absolute, with `..`, or through a symlink) is an error, never followed. A run
//! that says `running` while the process writing it is gone reads as interrupted.

use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::de::DeserializeOwned;

use crate::files;
use crate::record::{
    Liveness, RateSearch, RunInfo, RunStatus, TrialInfo, TrialRef, TrialStatus, SCHEMA,
};

/// A run directory, opened.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub dir: PathBuf,
    pub info: RunInfo,
    pub rate_search: Option<RateSearch>,
    /// The trials whose label is one of the run's policies, in run order.
    pub trials: Vec<TrialEntry>,
    /// What is odd about the run as a whole.
    pub warnings: Vec<String>,
}

/// One trial of a run.
#[derive(Clone, Debug)]
pub struct TrialEntry {
    /// Its entry in `run.json`.
    pub reference: TrialRef,
    /// Its folder (inside the run directory).
    pub dir: PathBuf,
    /// `trial.json`, when there is one.
    pub info: Option<TrialInfo>,
    /// What is missing or odd about this trial.
    pub notes: Vec<String>,
}

impl TrialEntry {
    pub fn label(&self) -> &str {
        &self.reference.label
    }

    /// `NN-label-rR`.
    pub fn name(&self) -> &str {
        self.reference.name()
    }

    /// A file of the trial's folder ([`files`]).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// How a file of this trial is named in messages: `trials/NN-label-rR/<name>`.
    pub fn shown(&self, name: &str) -> String {
        format!("{}/{name}", self.reference.dir)
    }

    /// Every process's copy of a per-process file ([`files::SAMPLES`], [`files::GC_EVENTS`]) that
    /// exists: `name` (the service's first process) first, then `name` with `-<pid>` (its
    /// workers and other processes, [`neurogc_core::csv_sink::child_template`]) by pid. A
    /// service of one process has one; an unreadable folder has none.
    pub fn process_files(&self, name: &str) -> Vec<ProcessFile> {
        let mut out = Vec::new();
        let first = self.file(name);
        if first.exists() {
            out.push(ProcessFile {
                path: first,
                shown: self.shown(name),
                pid: None,
            });
        }
        let mut others: Vec<ProcessFile> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let file = entry.file_name();
                let file = file.to_str()?;
                let pid = neurogc_core::csv_sink::process_of_file(name, file)?;
                Some(ProcessFile {
                    path: entry.path(),
                    shown: self.shown(file),
                    pid: Some(pid),
                })
            })
            .collect();
        others.sort_by_key(|f| f.pid);
        out.extend(others);
        out
    }
}

/// One process's file of a trial ([`TrialEntry::process_files`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessFile {
    pub path: PathBuf,
    /// `trials/NN-label-rR/<file>`, for messages.
    pub shown: String,
    /// The process its name says (`samples-<pid>.csv`); `None` for the first process's file,
    /// whose rows say it in their `pid` column.
    pub pid: Option<u32>,
}

/// Reads a JSON file of the run directory into `T`; errors name the file.
fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: malformed: {e}", path.display()))
}

/// A trial's `dir` from `run.json` as its folder: relative, plain names only (no `..`, no root),
/// and, when it exists, still inside `run_dir` once symlinks are resolved. Errors name the path.
/// Every reader of trial folders goes through here.
pub fn trial_dir(run_dir: &Path, rel: &str) -> Result<PathBuf> {
    let path = Path::new(rel);
    if rel.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!(
            "trial {rel:?} is not a folder inside the run directory (a trial's dir is relative \
             and goes down only, like trials/01-default-r1)"
        );
    }
    let dir = run_dir.join(path);
    if let (Ok(real), Ok(root)) = (dir.canonicalize(), run_dir.canonicalize()) {
        if !real.starts_with(&root) {
            bail!(
                "trial {rel:?} leads to {}, outside the run directory {} (through a symlink)",
                real.display(),
                root.display()
            );
        }
    }
    Ok(dir)
}

/// A run that says `running` whose writer is gone: interrupted, and its unfinished trials too.
fn notice_dead_writer(info: &mut RunInfo, trials: &mut [TrialEntry], warnings: &mut Vec<String>) {
    let Some(writer) = &info.writer else { return };
    if info.status != RunStatus::Running || writer.liveness() != Liveness::Gone {
        return;
    }
    let why = format!(
        "the run's process {} is gone; it was killed or crashed",
        writer.pid
    );
    warnings.push(format!(
        "run.json says running, but {why}: read as interrupted"
    ));
    info.status = RunStatus::Interrupted;
    info.error.get_or_insert(why);
    for t in trials {
        if let Some(ti) = t.info.as_mut().filter(|i| i.status.in_progress()) {
            t.notes.push(format!(
                "{} when the run's process died",
                ti.status.as_str()
            ));
            ti.status = TrialStatus::Interrupted;
        }
    }
}

impl RunRecord {
    /// Opens `dir`. Errors: no directory, no or malformed `run.json` or `rate-search.json`, no
    /// policies, a trial path outside the run directory ([`trial_dir`]), a malformed `trial.json`.
    pub fn open(dir: &Path) -> Result<RunRecord> {
        if !dir.is_dir() {
            bail!("{}: not a run directory (no such directory)", dir.display());
        }
        let run_json = dir.join(files::RUN);
        if !run_json.is_file() {
            bail!(
                "{}: cannot read (is {} a run directory?)",
                run_json.display(),
                dir.display()
            );
        }
        let mut info: RunInfo = read_json(&run_json)?;
        if info.policies.is_empty() {
            bail!("{}: no policies", run_json.display());
        }
        let mut warnings = Vec::new();
        if info.schema > SCHEMA {
            warnings.push(format!(
                "run.json has schema {}; this build understands up to {SCHEMA}",
                info.schema
            ));
        }
        let rate_path = dir.join(files::RATE_SEARCH);
        let rate_search = if rate_path.exists() {
            Some(read_json(&rate_path)?)
        } else {
            None
        };
        let mut trials = Vec::new();
        for r in &info.trials {
            let trial =
                trial_dir(dir, &r.dir).map_err(|e| anyhow!("{}: {e}", run_json.display()))?;
            if !info.policies.iter().any(|p| p.label == r.label) {
                warnings.push(format!(
                    "trial {} has label {:?}, which is not among the run's policies; left out",
                    r.dir, r.label
                ));
                continue;
            }
            let mut entry = TrialEntry {
                reference: r.clone(),
                dir: trial,
                info: None,
                notes: Vec::new(),
            };
            if !entry.dir.is_dir() {
                entry.notes.push(format!("no folder {}", r.dir));
            } else {
                let path = entry.file(files::TRIAL);
                if path.is_file() {
                    entry.info = Some(read_json(&path)?);
                } else {
                    entry.notes.push(format!("no {}", files::TRIAL));
                }
            }
            trials.push(entry);
        }
        notice_dead_writer(&mut info, &mut trials, &mut warnings);
        Ok(RunRecord {
            dir: dir.to_path_buf(),
            info,
            rate_search,
            trials,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::*;
    use crate::write::RunDir;

    fn info(name: &str) -> RunInfo {
        let app = AppInfo::Cmd {
            command: "python -m http.server {port}".into(),
        };
        let policies = vec![PolicyEntry {
            label: "default".into(),
            spec: "default".into(),
            model: None,
        }];
        RunInfo {
            command: vec!["neurogc".into(), "bench".into()],
            mode: Mode::Alternating,
            repeat: 2,
            load: Some(LoadInfo {
                shape: neurogc_load::Shape::Open { rate: 40.0 },
                rate_source: RateSource::Auto,
                auto: Some(AutoRate {
                    sustainable_rps: 66.0,
                    fraction: 0.6,
                    limited_by: "default".into(),
                }),
                alternate_s: Some(2.0),
            }),
            ..RunInfo::new(RunKind::Bench, name, app, policies)
        }
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("neurogc-record-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn what_is_written_reads_back() {
        let root = temp("roundtrip");
        let mut run = RunDir::create(&root, info("bench")).unwrap();
        let mut trial = run.add_trial("default", "default", 1).unwrap();
        trial.info.status = TrialStatus::WarmingUp;
        trial.info.port = 8123;
        trial.save().unwrap();
        run.finish(RunStatus::Interrupted, None).unwrap();
        let text = std::fs::read_to_string(run.path.join("run.json")).unwrap();
        assert!(text.contains("\"mode\": \"alternating\""), "{text}");
        assert!(text.contains("\"rate_source\": \"auto\""), "{text}");
        let back = RunRecord::open(&run.path).unwrap();
        assert_eq!(back.info, run.info);
        assert_eq!(back.trials.len(), 1);
        assert_eq!(back.trials[0].name(), "01-default-r1");
        assert_eq!(
            back.trials[0].info.as_ref().unwrap().status,
            TrialStatus::WarmingUp
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn trial_paths_never_leave_the_run_directory() {
        let root = temp("escape");
        let mut run = RunDir::create(&root, info("bench")).unwrap();
        assert!(trial_dir(&run.path, "trials/01-a-r1").is_ok());
        for bad in ["../../etc", "/etc", "trials/../../x", "", "./x"] {
            let e = trial_dir(&run.path, bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a folder inside the run directory"),
                "{bad}: {e}"
            );
        }
        // A plain name that is a symlink out of the run is refused too.
        std::os::unix::fs::symlink("/etc", run.path.join("trials/01-default-r1")).unwrap();
        run.info.trials.push(TrialRef {
            dir: "trials/01-default-r1".into(),
            label: "default".into(),
            repetition: 1,
        });
        run.save().unwrap();
        let e = RunRecord::open(&run.path).unwrap_err().to_string();
        assert!(
            e.contains(
                "run.json: trial \"trials/01-default-r1\" leads to /etc, outside the run directory"
            ),
            "{e}"
        );
        run.info.trials[0].dir = "../../etc".into();
        run.save().unwrap();
        let e = RunRecord::open(&run.path).unwrap_err().to_string();
        assert!(
            e.contains("trial \"../../etc\" is not a folder inside"),
            "{e}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A process that was running and is gone, as `kill -9` leaves the writer of a run.
    fn dead_writer() -> Writer {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let writer = Writer::of(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        writer
    }

    #[test]
    fn a_running_run_whose_process_is_gone_reads_as_interrupted() {
        let root = temp("killed");
        let mut run = RunDir::create(&root, info("bench")).unwrap();
        let mut trial = run.add_trial("default", "default", 1).unwrap();
        trial.info.status = TrialStatus::Measuring;
        trial.save().unwrap();
        // This process writes it and lives: still running.
        let back = RunRecord::open(&run.path).unwrap();
        assert_eq!(back.info.status, RunStatus::Running);
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);

        let writer = dead_writer();
        assert_eq!(writer.liveness(), Liveness::Gone);
        run.info.writer = Some(writer.clone());
        run.save().unwrap();
        let back = RunRecord::open(&run.path).unwrap();
        let why = format!(
            "the run's process {} is gone; it was killed or crashed",
            writer.pid
        );
        assert_eq!(back.info.status, RunStatus::Interrupted);
        assert_eq!(back.info.error.as_deref(), Some(why.as_str()));
        assert!(back.warnings[0].contains(&why), "{:?}", back.warnings);
        let t = &back.trials[0];
        assert_eq!(t.info.as_ref().unwrap().status, TrialStatus::Interrupted);
        assert_eq!(t.notes, ["measuring when the run's process died"]);

        // Records from before the writer was kept, and other machines' runs, are left as they say.
        for other in [
            None,
            Some(Writer {
                host: Some("elsewhere".into()),
                ..writer
            }),
        ] {
            run.info.writer = other;
            run.save().unwrap();
            let back = RunRecord::open(&run.path).unwrap();
            assert_eq!(back.info.status, RunStatus::Running);
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn malformed_files_are_errors_naming_them() {
        let root = temp("malformed");
        std::fs::create_dir_all(&root).unwrap();
        let e = RunRecord::open(&root).unwrap_err().to_string();
        assert!(e.contains("run.json: cannot read"), "{e}");
        std::fs::write(root.join("run.json"), "{\"kind\": \"bench\"").unwrap();
        let e = RunRecord::open(&root).unwrap_err().to_string();
        assert!(e.contains("run.json: malformed"), "{e}");
        let e = RunRecord::open(&root.join("nope")).unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_trial_lists_each_process_file_first_process_first() {
        let root = temp("processes");
        let mut run = RunDir::create(&root, info("p")).unwrap();
        let trial = run.add_trial("default", "default", 1).unwrap();
        for name in [
            "samples-20.csv",
            "samples.csv",
            "samples-3.csv",
            "samples-x.csv",
            "gc-events-20.csv",
        ] {
            std::fs::write(trial.dir.join(name), "time\n").unwrap();
        }
        let back = RunRecord::open(&run.path).unwrap();
        let entry = &back.trials[0];
        let files: Vec<(String, Option<u32>)> = entry
            .process_files(files::SAMPLES)
            .into_iter()
            .map(|f| (f.shown, f.pid))
            .collect();
        let shown = |n: &str| format!("{}/{n}", entry.reference.dir);
        assert_eq!(
            files,
            vec![
                (shown("samples.csv"), None),
                (shown("samples-3.csv"), Some(3)),
                (shown("samples-20.csv"), Some(20)),
            ]
        );
        // Workers' files without the first process's.
        let events = entry.process_files(files::GC_EVENTS);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].pid, Some(20));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
