//! The noise floor: how far apart two identical policies land with this method on this machine.
//!
//! A floor holds only for the design that measured it ([`Design`]: the mode, how many units —
//! trials, or rounds of a turns run — are compared per policy, and how long each is). A floor
//! file gives one relative fraction per metric key; differences smaller than that are "within
//! noise". The report uses `--noise-floor FILE` if given (warning when its design differs from
//! the run's), else a committed floor of the run's design (`crates/neurogc-report/floors/`,
//! compiled in), else none: differences are then shown but not marked 🟢/🔴.
//! `neurogc report A_A_RUN --write-noise-floor FILE` writes one from an A/A run.
//!
//! ```json
//! {
//!   "schema": 1,
//!   "measured": "2026-11-22T08:15:00Z",
//!   "run": "aa",
//!   "command": "neurogc bench --policy default --policy default --repeat 5 --rate auto",
//!   "protocol": "sequential, 5 repetitions per policy, warm-up 10 s, 60 s per trial, open loop 24 req/s",
//!   "system": {"cpu_model": "…", "cores": 2, …},
//!   "metrics": {"p99": 0.034, "p95": 0.021, "rps": 0.004, …},
//!   "aa": {"p99_change": 0.012, "p99_significant": false, "pass": true}
//! }
//! ```
//!
//! Only `metrics` is required. Its keys are the report's metric keys ([`Metric::key`]); values
//! are fractions of the baseline (0.034 = 3.4 %).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use neurogc_stats::NoiseFloor;
use serde::{Deserialize, Serialize};

use crate::metric::Metric;
use crate::rundir::{RunInfo, SystemInfo};
use neurogc_record::Mode;

/// The committed floors, one per design measured on this machine type (written by the A/A
/// scripts: `bench/aa/run.sh`, `bench/suite/aa.sh`), as (file name, JSON).
const BUILT_IN: &[(&str, &str)] = &[
    ("turns-5x6s.json", include_str!("../floors/turns-5x6s.json")),
    (
        "turns-2x2.5s.json",
        include_str!("../floors/turns-2x2.5s.json"),
    ),
];

/// Where the built-in floors live in the repository, for messages.
pub const BUILT_IN_DIR: &str = "crates/neurogc-report/floors";

/// What a floor holds for: the design of the runs that measured it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Design {
    pub mode: Mode,
    /// Units compared per policy: trials, or rounds (turns runs).
    pub units: u32,
    /// Measured seconds per unit: a trial's duration, or a round's turn.
    pub unit_s: f64,
}

impl Design {
    pub fn of(info: &RunInfo) -> Design {
        match (info.mode, info.load.as_ref().and_then(|l| l.alternate_s)) {
            (Mode::Turns, Some(turn)) if turn > 0.0 => Design {
                mode: info.mode,
                units: info.repeat * (info.duration_s / turn).round() as u32,
                unit_s: turn,
            },
            _ => Design {
                mode: info.mode,
                units: info.repeat,
                unit_s: info.duration_s,
            },
        }
    }

    /// The same design (unit lengths within 1 %).
    pub fn matches(&self, other: &Design) -> bool {
        self.mode == other.mode
            && self.units == other.units
            && (self.unit_s - other.unit_s).abs() <= 0.01 * self.unit_s.max(other.unit_s)
    }

    /// `turns, 5 rounds of 6 s`, `alternating, 5 trials of 60 s`.
    pub fn describe(&self) -> String {
        let unit = if self.mode == Mode::Turns {
            "rounds"
        } else {
            "trials"
        };
        format!(
            "{}, {} {unit} of {} per policy",
            self.mode,
            self.units,
            crate::format::seconds(self.unit_s)
        )
    }
}

/// A noise-floor file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FloorFile {
    #[serde(default = "schema_one")]
    pub schema: u32,
    /// When the A/A run was made (ISO 8601, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
    /// The A/A run's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The command that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The design it holds for; a floor without one is never applied by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<Design>,
    /// Mode, repetitions, warm-up, duration, load, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemInfo>,
    /// Metric key → relative floor (fraction of the baseline), of the per-trial (per-round)
    /// values the bench report compares.
    pub metrics: BTreeMap<String, f64>,
    /// The floor of the p99 of all requests over all units (the scoreboard's statistic, units
    /// resampled in pairs): the largest deviation from 1 of its A/A ratio interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_all: Option<f64>,
    /// The A/A verdict of the run it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa: Option<AaSummary>,
}

fn schema_one() -> u32 {
    1
}

/// The A/A check in a floor file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AaSummary {
    /// Largest |Δ median p99| / baseline over the run's candidates.
    pub p99_change: Option<f64>,
    pub p99_significant: bool,
    /// |Δ p99| < 5 % and not significant.
    pub pass: bool,
}

impl AaSummary {
    /// One line for terminals and tables: `|Δ p99| = 36 %, significant — FAIL`.
    pub fn verdict(&self) -> String {
        format!(
            "|Δ p99| = {}, {} — {}",
            self.p99_change.map_or("n/a".into(), crate::format::pct_abs),
            if self.p99_significant {
                "significant"
            } else {
                "not significant"
            },
            if self.pass { "PASS" } else { "FAIL" }
        )
    }
}

/// A floor ready to use: per metric, plus where it came from.
#[derive(Debug, Clone)]
pub struct Floors {
    pub file: FloorFile,
    /// "`--noise-floor x.json`", "crates/neurogc-report/floors/turns-5x6s.json (built in)",
    /// "this A/A run".
    pub origin: String,
    pub per_metric: BTreeMap<Metric, NoiseFloor>,
    /// Problems with the file that did not stop the report (unknown keys).
    pub warnings: Vec<String>,
}

impl Floors {
    pub fn get(&self, m: Metric) -> Option<NoiseFloor> {
        self.per_metric.get(&m).copied()
    }

    /// Parses floor JSON; `shown` names it in errors.
    pub fn parse(text: &str, shown: &str, origin: String) -> Result<Floors> {
        let file: FloorFile =
            serde_json::from_str(text).map_err(|e| anyhow!("{shown}: malformed: {e}"))?;
        if file.schema != 1 {
            bail!(
                "{shown}: schema {} (this version reads schema 1)",
                file.schema
            );
        }
        let mut per_metric = BTreeMap::new();
        let mut warnings = Vec::new();
        for (key, &v) in &file.metrics {
            let floor = NoiseFloor::new(v).map_err(|_| {
                anyhow!("{shown}: metrics.{key} = {v}: a floor is a fraction ≥ 0 (0.05 = 5 %)")
            })?;
            match Metric::from_key(key) {
                Some(m) => {
                    per_metric.insert(m, floor);
                }
                None => warnings.push(format!("{shown}: unknown metric key {key:?} ignored")),
            }
        }
        Ok(Floors {
            file,
            origin,
            per_metric,
            warnings,
        })
    }

    /// Reads a floor file.
    pub fn read(path: &Path) -> Result<Floors> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--noise-floor {}: cannot read", path.display()))?;
        Floors::parse(
            &text,
            &path.display().to_string(),
            format!("`--noise-floor {}`", path.display()),
        )
    }

    /// The committed floor measured with `design`, if there is one.
    pub fn built_in(design: &Design) -> Result<Option<Floors>> {
        for (name, text) in BUILT_IN {
            let shown = format!("{BUILT_IN_DIR}/{name}");
            let f = Floors::parse(text, &shown, format!("{shown} (built in)"))?;
            if f.file.design.is_some_and(|d| d.matches(design)) {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    /// Whether this floor was measured with `design`.
    pub fn holds_for(&self, design: &Design) -> bool {
        self.file.design.is_some_and(|d| d.matches(design))
    }
}

/// Writes `file` as pretty JSON, atomically (temporary file, then rename).
pub fn write(path: &Path, file: &FloorFile) -> Result<()> {
    let mut text = serde_json::to_string_pretty(file)?;
    text.push('\n');
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_floors_parse_and_say_their_design() {
        for (name, text) in BUILT_IN {
            let f = Floors::parse(text, name, "x".into()).unwrap();
            let d = f.file.design.expect("a committed floor names its design");
            assert!(Floors::built_in(&d).unwrap().is_some(), "{name}");
        }
    }

    #[test]
    fn designs_match_only_their_own() {
        let d = |mode, units, unit_s| Design {
            mode,
            units,
            unit_s,
        };
        let turns = d(Mode::Turns, 5, 6.0);
        assert!(turns.matches(&d(Mode::Turns, 5, 6.02)));
        assert!(!turns.matches(&d(Mode::Turns, 2, 6.0)));
        assert!(!turns.matches(&d(Mode::Alternating, 5, 6.0)));
        assert!(!d(Mode::Alternating, 5, 60.0).matches(&d(Mode::Alternating, 2, 20.0)));
        assert_eq!(turns.describe(), "turns, 5 rounds of 6 s per policy");
    }

    #[test]
    fn parse_minimal_and_errors() {
        let f = Floors::parse(
            r#"{"metrics": {"p99": 0.034, "p98": 0.1}}"#,
            "f.json",
            "x".into(),
        )
        .unwrap();
        assert_eq!(f.get(Metric::P99).unwrap().relative(), 0.034);
        assert!(f.get(Metric::P95).is_none());
        assert_eq!(f.warnings.len(), 1);
        let e = Floors::parse(r#"{"metrics": {"p99": -1}}"#, "f.json", "x".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.json: metrics.p99 = -1"), "{e}");
        let e = Floors::parse(r#"{"metric": {}}"#, "f.json", "x".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.json: malformed"), "{e}");
    }
}
