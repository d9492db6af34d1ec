//! Weighted task sets: the built-in one that reproduces the seed's locustfile, and TOML files.
//!
//! ```toml
//! [[task]]
//! name = "cpu-heavy"        # optional, defaults to the path (Locust names requests by path)
//! method = "GET"            # optional, defaults to GET
//! path = "/cpu-heavy"
//! weight = 3                # optional, defaults to 1; must be >= 1
//! headers = { "X-Trace" = "1" }
//! body = "..."              # optional; sent with a Content-Length
//!
//! [bursts]                  # optional, open loop only: traffic in on/off bursts
//! on = ["300ms", "2s"]      # each burst lasts a uniform random time in this range
//! off = ["200ms", "3s"]     # each idle gap likewise
//! ```
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_units::parse_duration;
use serde::Deserialize;

use crate::schedule::Bursts;

use neurogc_rng::Rng;

/// One kind of request a user can send.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub name: String,
    pub method: String,
    pub path: String,
    pub weight: u32,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// Tasks plus the cumulative weights used to pick among them, and the file's burst pattern.
#[derive(Debug, Clone)]
pub struct TaskSet {
    tasks: Vec<Task>,
    cumulative: Vec<u64>,
    bursts: Option<Bursts>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    task: Vec<RawTask>,
    bursts: Option<RawBursts>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBursts {
    on: [String; 2],
    off: [String; 2],
}

impl RawBursts {
    fn validate(&self) -> Result<Bursts> {
        let range = |name: &str, [lo, hi]: &[String; 2]| -> Result<(Duration, Duration)> {
            let d = |s: &str| parse_duration(s).map_err(|e| anyhow::anyhow!("bursts.{name}: {e}"));
            Ok((d(lo)?, d(hi)?))
        };
        Bursts::new(range("on", &self.on)?, range("off", &self.off)?)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<String>,
    method: Option<String>,
    path: String,
    weight: Option<i64>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
}

/// The seed's locustfile: `@task(3) cpu_heavy`, `@task(3) memory_heavy`, `@task(2) network_heavy`,
/// `@task(2) io_heavy`, `@task(1) health`, all GET.
const SEED_TASKS: [(&str, u32); 5] = [
    ("/cpu-heavy", 3),
    ("/memory-heavy", 3),
    ("/network-heavy", 2),
    ("/io-heavy", 2),
    ("/health", 1),
];

impl TaskSet {
    pub fn seed() -> Self {
        let tasks = SEED_TASKS
            .iter()
            .map(|&(path, weight)| Task {
                name: path.to_string(),
                method: "GET".to_string(),
                path: path.to_string(),
                weight,
                headers: Vec::new(),
                body: None,
            })
            .collect();
        Self::new(tasks).expect("the built-in task set is valid")
    }

    /// Reads a TOML task file; every error names the file and, where it applies, the task.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read tasks file {}", path.display()))?;
        Self::from_toml(&text).with_context(|| format!("tasks file {}", path.display()))
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        let file: TaskFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        let bursts = file.bursts.as_ref().map(RawBursts::validate).transpose()?;
        let mut tasks = Vec::with_capacity(file.task.len());
        for (i, raw) in file.task.into_iter().enumerate() {
            let name = raw.name.clone().unwrap_or_else(|| raw.path.clone());
            let task = validate(raw, name.clone())
                .with_context(|| format!("task #{} ({name:?})", i + 1))?;
            tasks.push(task);
        }
        Ok(TaskSet {
            bursts,
            ..Self::new(tasks)?
        })
    }

    /// The file's burst pattern (`[bursts]`), if any.
    pub fn bursts(&self) -> Option<Bursts> {
        self.bursts
    }

    /// The same tasks sent steadily: the burst pattern dropped (`--steady`).
    pub fn without_bursts(self) -> Self {
        TaskSet {
            bursts: None,
            ..self
        }
    }

    fn new(tasks: Vec<Task>) -> Result<Self> {
        if tasks.is_empty() {
            bail!("no tasks: add at least one [[task]] table");
        }
        let mut seen = HashSet::new();
        for t in &tasks {
            if !seen.insert(t.name.as_str()) {
                bail!(
                    "duplicate task name {:?}: names label the statistics and must be unique",
                    t.name
                );
            }
        }
        let cumulative = tasks
            .iter()
            .scan(0u64, |acc, t| {
                *acc += u64::from(t.weight);
                Some(*acc)
            })
            .collect();
        Ok(TaskSet {
            tasks,
            cumulative,
            bursts: None,
        })
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Picks a task index with probability weight / total weight.
    pub fn pick(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().expect("task set is never empty");
        let x = rng.below(total);
        self.cumulative.partition_point(|&c| c <= x)
    }
}

fn validate(raw: RawTask, name: String) -> Result<Task> {
    let method = raw
        .method
        .unwrap_or_else(|| "GET".to_string())
        .to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
        bail!("method {method:?} is not an HTTP method");
    }
    if !raw.path.starts_with('/') || raw.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        bail!(
            "path {:?} must start with '/' and contain no spaces or control characters",
            raw.path
        );
    }
    let weight = raw.weight.unwrap_or(1);
    if !(1..=1_000_000).contains(&weight) {
        bail!("weight {weight} must be between 1 and 1000000 (remove a task instead of giving it weight 0)");
    }
    if name.is_empty() || name.chars().any(char::is_control) {
        bail!("name {name:?} must be non-empty without control characters");
    }
    let mut headers = Vec::with_capacity(raw.headers.len());
    for (k, v) in raw.headers {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if k.is_empty() || !k.bytes().all(token) {
            bail!("header name {k:?} is not a valid HTTP header name");
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            bail!("header {k:?} has a value with a line break or NUL");
        }
        let lower = k.to_ascii_lowercase();
        if lower == "host" || lower == "content-length" || lower == "transfer-encoding" {
            bail!("header {k:?} is set by the load generator and cannot be overridden");
        }
        headers.push((k, v));
    }
    Ok(Task {
        name,
        method,
        path: raw.path,
        weight: weight as u32,
        headers,
        body: raw.body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_set_matches_the_locustfile() {
        let s = TaskSet::seed();
        let got: Vec<(&str, u32)> = s
            .tasks()
            .iter()
            .map(|t| (t.path.as_str(), t.weight))
            .collect();
        assert_eq!(got, SEED_TASKS.to_vec());
        assert!(s.tasks().iter().all(|t| t.method == "GET"));
    }

    #[test]
    fn pick_follows_weights_within_four_sigma() {
        let s = TaskSet::seed();
        let mut rng = Rng::new(42);
        let n = 110_000u64;
        let mut counts = vec![0u64; s.len()];
        for _ in 0..n {
            counts[s.pick(&mut rng)] += 1;
        }
        for (t, &c) in s.tasks().iter().zip(&counts) {
            let p = t.weight as f64 / 11.0;
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (c as f64 - n as f64 * p).abs() < 4.0 * sigma,
                "{}: {c}",
                t.name
            );
        }
    }

    #[test]
    fn parses_a_full_task_file() {
        let s = TaskSet::from_toml(
            r#"
            [[task]]
            name = "login"
            method = "post"
            path = "/login"
            weight = 2
            headers = { "Content-Type" = "application/json" }
            body = '{"u":"a"}'

            [[task]]
            path = "/health"
            "#,
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        let t = &s.tasks()[0];
        assert_eq!((t.method.as_str(), t.weight), ("POST", 2));
        assert_eq!(
            t.headers,
            vec![("Content-Type".into(), "application/json".into())]
        );
        assert_eq!(s.tasks()[1].name, "/health");
        assert_eq!(s.tasks()[1].weight, 1);
    }

    fn err(text: &str) -> String {
        format!("{:#}", TaskSet::from_toml(text).unwrap_err())
    }

    #[test]
    fn rejects_bad_input_with_reasons() {
        assert!(err("[[task]]\npath = \"/a\"\nweight = 0").contains("weight 0"));
        assert!(err("[[task]]\npath = \"a\"").contains("must start with '/'"));
        assert!(err("[[task]]\npath = \"/a\"\nmethod = \"G T\"").contains("not an HTTP method"));
        assert!(err("[[task]]\npath = \"/a\"\nwieght = 2").contains("wieght"));
        assert!(err("[[task]]\npath = \"/a\"\n[[task]]\npath = \"/a\"").contains("duplicate"));
        assert!(err("task = []").contains("no tasks"));
        assert!(err("[[task]]\npath = \"/a\"\nheaders = { Host = \"x\" }")
            .contains("cannot be overridden"));
        assert!(err("[[task]\n").contains("TOML") || !err("[[task]\n").is_empty());
    }

    #[test]
    fn bursts_come_from_the_task_file() {
        let s = TaskSet::from_toml(
            "[[task]]\npath = \"/a\"\n[bursts]\non = [\"300ms\", \"2s\"]\noff = [\"0.2\", \"3s\"]\n",
        )
        .unwrap();
        let b = s.bursts().unwrap();
        assert_eq!(b.on, (Duration::from_millis(300), Duration::from_secs(2)));
        assert_eq!(b.off, (Duration::from_millis(200), Duration::from_secs(3)));
        assert!(TaskSet::from_toml("[[task]]\npath = \"/a\"")
            .unwrap()
            .bursts()
            .is_none());
        assert!(err(
            "[[task]]\npath = \"/a\"\n[bursts]\non = [\"2s\", \"1s\"]\noff = [\"1s\", \"2s\"]"
        )
        .contains("bursts.on"));
        assert!(err(
            "[[task]]\npath = \"/a\"\n[bursts]\non = [\"soon\", \"1s\"]\noff = [\"1s\", \"2s\"]"
        )
        .contains("bursts.on: \"soon\""));
        assert!(err("[[task]]\npath = \"/a\"\n[bursts]\non = [\"1s\", \"2s\"]").contains("off"));
    }

    #[test]
    fn file_errors_name_the_file() {
        let e = TaskSet::from_file(Path::new("/nonexistent/tasks.toml")).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/tasks.toml"));
    }
}
