//! A training run's step record: `steps.csv` (one row per step) and `steps.json` (how the run
//! went), as `neurogc.training` writes them (`docs/training.md`) and `neurogc sweep` reads them.
//!
//! [`STEP_COLUMNS`] is the one place the Rust side names the CSV's columns; a test checks them
//! against the Python hook's `COLUMNS`. [`read_steps`] is the one reader: an empty cell is
//! unmeasured (`None`), never a zero; a last line without a line end (a process killed while
//! writing it) is skipped with a warning; anything else malformed is an error naming the file, the
//! line (the header is line 1) and the column.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

/// `steps.csv`'s columns, in order (the hook's `neurogc.training.COLUMNS`).
pub const STEP_COLUMNS: [&str; 26] = [
    "run",
    "step",
    "start_time",
    "step_ms",
    "gc0_in_step",
    "gc0_in_step_ms",
    "gc1_in_step",
    "gc1_in_step_ms",
    "gc2_in_step",
    "gc2_in_step_ms",
    "outside_gc",
    "outside_gc_ms",
    "boundary_gen",
    "boundary_ms",
    "boundary_collected",
    "predicted_ms",
    "gc0_collected",
    "gc1_collected",
    "gc2_collected",
    "gc_count0",
    "gc_count1",
    "gc_count2",
    "rss_bytes",
    "policy",
    "action",
    "reason",
];

/// The version of `steps.json` (and of the CSV's columns) this reader knows.
pub const STEPS_SCHEMA: u32 = 1;

/// One step, as the hook recorded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepRow {
    /// The hook run's id (Unix ms at its start): a file can hold rows of several runs.
    pub run: u64,
    pub step: u64,
    /// Unix seconds the step began.
    pub start_time: f64,
    /// The step's duration, without the collection at its boundary.
    pub step_ms: f64,
    /// Collections of each generation inside the step, and their summed pauses.
    pub in_step: [u64; 3],
    pub in_step_ms: [f64; 3],
    /// Collections (any generation) between the previous step's end and this one's start.
    pub outside_gc: u64,
    pub outside_gc_ms: f64,
    /// The collection the policy or the guard ran at the step's end.
    pub boundary_gen: Option<u8>,
    pub boundary_ms: Option<f64>,
    pub boundary_collected: Option<u64>,
    pub predicted_ms: Option<f64>,
    /// Objects freed per generation by every collection counted in this row.
    pub collected: [u64; 3],
    /// `gc.get_count()` when the step ended.
    pub gc_count: [u64; 3],
    pub rss_bytes: Option<u64>,
    pub policy: String,
    pub action: String,
    pub reason: String,
}

impl StepRow {
    /// The step with the collection at its end: what the training loop waited for.
    pub fn with_boundary_ms(&self) -> f64 {
        self.step_ms + self.boundary_ms.unwrap_or(0.0)
    }

    /// Every collection pause this row counts: inside the step, before it, at its boundary.
    pub fn gc_ms(&self) -> f64 {
        self.in_step_ms.iter().sum::<f64>() + self.outside_gc_ms + self.boundary_ms.unwrap_or(0.0)
    }

    /// Unix seconds the step and its boundary collection ended.
    pub fn end_time(&self) -> f64 {
        self.start_time + self.with_boundary_ms() / 1e3
    }
}

/// A `steps.csv`, read.
#[derive(Clone, Debug, Default)]
pub struct StepsCsv {
    pub rows: Vec<StepRow>,
    /// What was skipped, each starting with `file:line:`.
    pub warnings: Vec<String>,
}

/// Reads the `steps.csv` at `path`; `shown` names it in errors and warnings.
pub fn read_steps(path: &Path, shown: &str) -> Result<StepsCsv> {
    let bytes = std::fs::read(path).with_context(|| format!("{shown}: cannot read"))?;
    parse_steps(shown, &bytes)
}

/// Reads `steps.csv` bytes (see [`read_steps`]).
pub fn parse_steps(shown: &str, bytes: &[u8]) -> Result<StepsCsv> {
    let mut out = StepsCsv::default();
    if bytes.is_empty() {
        return Ok(out);
    }
    if bytes.contains(&b'\r') && !bytes.windows(2).any(|w| w == b"\r\n") {
        bail!("{shown}: lines end in a lone \\r; steps.csv lines end in \\n");
    }
    let complete = bytes.ends_with(b"\n");
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut records = reader.records().peekable();
    let header = match records.next() {
        None => return Ok(out),
        Some(r) => r.map_err(|e| anyhow!("{shown}:1: {e}"))?,
    };
    let names: Vec<&str> = header.iter().map(str::trim).collect();
    if names != STEP_COLUMNS {
        bail!(
            "{shown}:1: not a steps.csv of schema {STEPS_SCHEMA}: the header is {} (expected {})",
            names.join(","),
            STEP_COLUMNS.join(",")
        );
    }
    while let Some(record) = records.next() {
        let last = records.peek().is_none();
        let record = record.map_err(|e| anyhow!("{shown}: {e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        match parse_row(&record) {
            Ok(row) => out.rows.push(row),
            // A killed writer's unfinished last line: what finished is kept.
            Err(e) if last && !complete && record.len() <= STEP_COLUMNS.len() => {
                out.warnings.push(format!(
                    "{shown}:{line}: an unfinished last line (the process ended while writing \
                     it) skipped: {e}"
                ));
            }
            Err(e) => bail!("{shown}:{line}: {e}"),
        }
    }
    Ok(out)
}

fn parse_row(record: &csv::StringRecord) -> std::result::Result<StepRow, String> {
    if record.len() != STEP_COLUMNS.len() {
        return Err(format!(
            "{} fields where the header has {}",
            record.len(),
            STEP_COLUMNS.len()
        ));
    }
    let cell = |i: usize| record.get(i).unwrap_or("").trim();
    let name = |i: usize| STEP_COLUMNS[i];
    let opt_f = |i: usize| -> std::result::Result<Option<f64>, String> {
        match cell(i) {
            "" => Ok(None),
            t => match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Some(v)),
                _ => Err(format!(
                    "column {:?}: {t:?} is not a finite number",
                    name(i)
                )),
            },
        }
    };
    let opt_u = |i: usize| -> std::result::Result<Option<u64>, String> {
        match cell(i) {
            "" => Ok(None),
            t => t
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("column {:?}: {t:?} is not a whole number ≥ 0", name(i))),
        }
    };
    let f = |i: usize| opt_f(i)?.ok_or_else(|| format!("column {:?}: empty", name(i)));
    let u = |i: usize| opt_u(i)?.ok_or_else(|| format!("column {:?}: empty", name(i)));
    let col = |c: &str| {
        STEP_COLUMNS
            .iter()
            .position(|n| *n == c)
            .expect("a known column")
    };
    let boundary_gen = match opt_u(col("boundary_gen"))? {
        Some(g) if g <= 2 => Some(g as u8),
        Some(g) => return Err(format!("column \"boundary_gen\": {g} is not 0, 1 or 2")),
        None => None,
    };
    let step_ms = f(col("step_ms"))?;
    if step_ms < 0.0 {
        return Err(format!("column \"step_ms\": {step_ms} is negative"));
    }
    let gens = |prefix: &str, suffix: &str| -> std::result::Result<[u64; 3], String> {
        Ok([
            u(col(&format!("{prefix}0{suffix}")))?,
            u(col(&format!("{prefix}1{suffix}")))?,
            u(col(&format!("{prefix}2{suffix}")))?,
        ])
    };
    Ok(StepRow {
        run: u(col("run"))?,
        step: u(col("step"))?,
        start_time: f(col("start_time"))?,
        step_ms,
        in_step: gens("gc", "_in_step")?,
        in_step_ms: [
            f(col("gc0_in_step_ms"))?,
            f(col("gc1_in_step_ms"))?,
            f(col("gc2_in_step_ms"))?,
        ],
        outside_gc: u(col("outside_gc"))?,
        outside_gc_ms: f(col("outside_gc_ms"))?,
        boundary_gen,
        boundary_ms: opt_f(col("boundary_ms"))?,
        boundary_collected: opt_u(col("boundary_collected"))?,
        predicted_ms: opt_f(col("predicted_ms"))?,
        collected: gens("gc", "_collected")?,
        gc_count: gens("gc_count", "")?,
        rss_bytes: opt_u(col("rss_bytes"))?,
        policy: cell(col("policy")).to_string(),
        action: cell(col("action")).to_string(),
        reason: cell(col("reason")).to_string(),
    })
}

/// `steps.json`: how a hook run went (the fields a reader uses; the hook writes more).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepsInfo {
    #[serde(default)]
    pub schema: u32,
    #[serde(default)]
    pub policy: String,
    /// `argument`, `NEUROGC_STEP_POLICY` or `default`.
    #[serde(default)]
    pub policy_source: String,
    /// `running`, `complete`, `failed` or `interrupted`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub steps: u64,
    /// `sys.version`.
    #[serde(default)]
    pub python: Option<String>,
}

/// Reads a `steps.json`; errors name it as `shown`.
pub fn read_steps_info(path: &Path, shown: &str) -> Result<StepsInfo> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{shown}: cannot read"))?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{shown}: malformed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> String {
        STEP_COLUMNS.join(",") + "\n"
    }

    const ROW: &str = "1700000000000,1,1700000000.5,12.5,3,1.5,1,0.5,0,0,0,0,1,2.25,4000,,\
                       10,20,0,5,1,0,1048576,\"every:1,gen=1\",collect,every 1 steps: generation 1\n";

    /// The Rust side's columns are the hook's (`python/neurogc/training/_hook.py`'s COLUMNS).
    #[test]
    fn columns_are_the_python_hooks() {
        let hook = include_str!("../../../python/neurogc/training/_hook.py");
        let start = hook
            .find("\nCOLUMNS = (")
            .expect("the hook defines COLUMNS");
        let body = &hook[start..];
        let body = &body[..body.find("\n)").expect("COLUMNS ends")];
        let names: Vec<&str> = body
            .lines()
            .skip(2)
            .map(|l| l.trim().trim_end_matches(',').trim_matches('"'))
            .collect();
        assert_eq!(names, STEP_COLUMNS);
    }

    #[test]
    fn reads_a_row_with_empty_cells_as_unmeasured() {
        let text = header() + ROW;
        let s = parse_steps("steps.csv", text.as_bytes()).unwrap();
        assert!(s.warnings.is_empty());
        let r = &s.rows[0];
        assert_eq!((r.run, r.step, r.step_ms), (1_700_000_000_000, 1, 12.5));
        assert_eq!(r.in_step, [3, 1, 0]);
        assert_eq!(r.boundary_gen, Some(1));
        assert_eq!(r.predicted_ms, None);
        assert_eq!(r.collected, [10, 20, 0]);
        assert_eq!(r.rss_bytes, Some(1 << 20));
        assert_eq!(r.policy, "every:1,gen=1");
        assert_eq!(r.with_boundary_ms(), 14.75);
        assert_eq!(r.gc_ms(), 1.5 + 0.5 + 2.25);
    }

    #[test]
    fn an_unfinished_last_line_is_skipped_with_a_warning() {
        let text = header() + ROW + &ROW[..40];
        let s = parse_steps("steps.csv", text.as_bytes()).unwrap();
        assert_eq!(s.rows.len(), 1);
        assert!(s.warnings[0].starts_with("steps.csv:3: an unfinished last line"));
    }

    #[test]
    fn malformed_input_names_file_line_and_column() {
        let bad = header() + &ROW.replace(",12.5,", ",fast,") + ROW;
        let e = parse_steps("r/steps.csv", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r/steps.csv:2: column \"step_ms\""), "{e}");
        let e = parse_steps("x.csv", b"time,p99\n1,2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv:1: not a steps.csv"), "{e}");
        let gen3 = header() + &ROW.replace(",0,1,2.25,", ",0,3,2.25,");
        let e = parse_steps("s", gen3.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("boundary_gen"), "{e}");
        assert!(parse_steps("s", b"").unwrap().rows.is_empty());
        let info: StepsInfo = serde_json::from_str(
            r#"{"schema": 1, "policy": "learned", "python": "3.11.7 (main)",
                "python_version": [3, 11, 7], "status": "complete", "steps": 3, "error": null}"#,
        )
        .unwrap();
        assert_eq!((info.status.as_str(), info.steps), ("complete", 3));
        assert!(parse_steps("s", header().as_bytes())
            .unwrap()
            .rows
            .is_empty());
    }
}
