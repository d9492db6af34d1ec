//! Sample CSVs in, feature rows out: ours and the seed's (the same first eleven columns).
//!
//! Cells are read by `neurogc-core`'s sample reader (one rule for booleans, empties and a
//! truncated last line everywhere). Strict on purpose: a missing column or a malformed value is
//! an error naming file, line and column; a truncated last line — what a crash mid-write leaves —
//! is skipped with a warning. An empty (unmeasured) value is NaN in the row; training treats it
//! as the agent does at inference: the training mean.

use std::fmt;
use std::path::{Path, PathBuf};

use neurogc_core::sample::read::{stream_file, BadRows, Cell, CsvTable, Header, Row};
use neurogc_model::{FeatureVector, FEATURES, N_FEATURES};
use sha2::{Digest, Sha256};

/// One CSV file's rows, in file (time) order.
#[derive(Clone, Debug)]
pub struct Series {
    pub path: PathBuf,
    pub sha256: String,
    pub rows: Vec<FeatureVector>,
    /// Where the rows are in the file, for messages: the rows at which the line number jumps
    /// (a blank line, a quoted line end), each with its line. Empty: row `r` (from 0) is on
    /// line `r + 2`, the header being line 1. A few entries, not one per row.
    pub line_jumps: Vec<(usize, u64)>,
    /// Warnings (a skipped truncated last line).
    pub warnings: Vec<String>,
    /// The rows of each process, where the file holds several (a `pid` column with more than
    /// one value: a service's workers, `neurogc collect` of a multi-worker `--cmd`): the rows
    /// are grouped by process in first-seen order, each group in file order, and a window never
    /// spans two groups. Empty: the rows are one process' (or say none).
    pub processes: Vec<std::ops::Range<usize>>,
}

impl Series {
    /// The line in the file (the header is line 1) of row `row` (from 0).
    pub fn line(&self, row: usize) -> u64 {
        line_of(&self.line_jumps, row)
    }

    /// The runs of rows windows may span: each process' rows ([`Series::processes`]), or all.
    pub fn segments(&self) -> Vec<std::ops::Range<usize>> {
        if self.processes.is_empty() {
            std::iter::once(0..self.rows.len()).collect()
        } else {
            self.processes.clone()
        }
    }

    /// Groups the rows by process (`pids`, one per row) when there are several; see
    /// [`Series::processes`].
    fn group_by_process(&mut self, pids: &[Option<u32>]) {
        let mut order: Vec<Option<u32>> = Vec::new();
        for pid in pids {
            if !order.contains(pid) {
                order.push(*pid);
            }
        }
        if order.len() < 2 {
            return;
        }
        let mut index: Vec<usize> = (0..self.rows.len()).collect();
        // Stable: each process' rows keep their order.
        index.sort_by_key(|&r| order.iter().position(|p| *p == pids[r]));
        let lines: Vec<u64> = index.iter().map(|&r| self.line(r)).collect();
        self.rows = index.iter().map(|&r| self.rows[r]).collect();
        self.line_jumps.clear();
        for (r, &line) in lines.iter().enumerate() {
            if line_of(&self.line_jumps, r) != line {
                self.line_jumps.push((r, line));
            }
        }
        let mut start = 0;
        for pid in &order {
            let n = pids.iter().filter(|p| *p == pid).count();
            self.processes.push(start..start + n);
            start += n;
        }
    }
}

fn line_of(jumps: &[(usize, u64)], row: usize) -> u64 {
    match jumps.partition_point(|&(r, _)| r <= row) {
        0 => row as u64 + 2,
        i => {
            let (r, line) = jumps[i - 1];
            line + (row - r) as u64
        }
    }
}

#[derive(Debug)]
pub struct DataError(pub String);

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

/// Reads one CSV file in one pass, keeping only the features of each row (a row of text becomes
/// 40 bytes), and hashing it on the way: a CSV far larger than memory trains, as long as its
/// features fit.
pub fn load_csv(path: &Path) -> Result<Series, DataError> {
    let name = path.display().to_string();
    let mut hasher = Sha256::new();
    let mut features = Features::default();
    let (header, warnings) = stream_file(
        path,
        &name,
        BadRows::Fail,
        |bytes| hasher.update(bytes),
        |header, row| features.push(header, &row),
    )
    .map_err(|e| DataError(e.to_string()))?;
    let pids = std::mem::take(&mut features.pids);
    let mut series = Series {
        path: path.to_path_buf(),
        sha256: format!("{:x}", hasher.finalize()),
        line_jumps: std::mem::take(&mut features.line_jumps),
        rows: features.finish(&name, &header)?,
        warnings,
        processes: Vec::new(),
    };
    series.group_by_process(&pids);
    Ok(series)
}

/// Reads CSV text already in memory (the same rules as [`load_csv`]).
pub fn parse_csv(path: &Path, bytes: &[u8]) -> Result<Series, DataError> {
    let name = path.display().to_string();
    let table =
        CsvTable::parse(&name, bytes, BadRows::Fail).map_err(|e| DataError(e.to_string()))?;
    let mut features = Features::default();
    for row in &table.rows {
        features
            .push(&table.header, row)
            .map_err(|e| DataError(format!("{name}:{}: {e}", row.line)))?;
    }
    let pids = std::mem::take(&mut features.pids);
    let mut series = Series {
        path: path.to_path_buf(),
        sha256: format!("{:x}", Sha256::digest(bytes)),
        line_jumps: std::mem::take(&mut features.line_jumps),
        rows: features.finish(&name, &table.header)?,
        warnings: table.warnings,
        processes: Vec::new(),
    };
    series.group_by_process(&pids);
    Ok(series)
}

/// The feature rows of a file, built a row at a time.
#[derive(Default)]
struct Features {
    /// Where each feature is in the header, once the first row asked.
    index: Option<[usize; N_FEATURES]>,
    /// A feature the header lacks: reported when the file is read, without a line.
    missing: Option<String>,
    rows: Vec<FeatureVector>,
    /// [`Series::line_jumps`].
    line_jumps: Vec<(usize, u64)>,
    /// Each row's process (its `pid` cell), where the header has a `pid` column.
    pids: Vec<Option<u32>>,
}

fn feature_index(header: &Header) -> Result<[usize; N_FEATURES], String> {
    let mut index = [0usize; N_FEATURES];
    for (slot, feature) in index.iter_mut().zip(FEATURES) {
        *slot = header.position(feature).ok_or_else(|| {
            format!(
                "missing column {feature:?} (the header has: {})",
                header.columns.join(", ")
            )
        })?;
    }
    Ok(index)
}

impl Features {
    fn push(&mut self, header: &Header, record: &Row) -> Result<(), String> {
        if self.missing.is_some() {
            return Ok(());
        }
        let index = match self.index {
            Some(i) => i,
            None => match feature_index(header) {
                Ok(i) => *self.index.insert(i),
                Err(e) => {
                    self.missing = Some(e);
                    return Ok(());
                }
            },
        };
        let mut row = [0f32; N_FEATURES];
        for (f, (&col, feature)) in index.iter().zip(FEATURES).enumerate() {
            let why = match &record.cells[col] {
                // Unmeasured (no request finished in the interval, say): NaN here, the
                // training mean once normalised, as the agent does at inference.
                Cell::Empty => {
                    row[f] = f32::NAN;
                    continue;
                }
                cell => match cell.number() {
                    Some(v) if v.abs() <= f32::MAX as f64 => {
                        row[f] = v as f32;
                        continue;
                    }
                    Some(v) => format!("{v} is not finite in f32"),
                    None => format!("{cell:?} is not a number"),
                },
            };
            return Err(format!("column {feature:?}: {why}"));
        }
        if line_of(&self.line_jumps, self.rows.len()) != record.line {
            self.line_jumps.push((self.rows.len(), record.line));
        }
        if let Some(col) = header.position("pid") {
            let pid = record.cells[col].number();
            self.pids.push(pid.map(|p| p as u32));
        }
        self.rows.push(row);
        Ok(())
    }

    /// The rows, or the column the header lacks (a file without rows too).
    fn finish(self, name: &str, header: &Header) -> Result<Vec<FeatureVector>, DataError> {
        let missing = match self.missing {
            Some(e) => Some(e),
            None if self.index.is_none() => feature_index(header).err(),
            None => None,
        };
        match missing {
            Some(e) => Err(DataError(format!("{name}: {e}"))),
            None => Ok(self.rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "time,cpu,mem,disk_read,disk_write,net_sent,net_recv,rps,p95,p99,gc_triggered\n";

    /// Reads `text` both ways, from memory and streamed from a file, and checks they agree.
    fn parse(text: &str) -> Result<Series, String> {
        let in_memory = parse_csv(Path::new("x.csv"), text.as_bytes()).map_err(|e| e.0);
        let dir = std::env::temp_dir().join(format!(
            "neurogc-dataset-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.csv");
        std::fs::write(&path, text).unwrap();
        let streamed =
            load_csv(&path).map_err(|e| e.0.replace(&path.display().to_string(), "x.csv"));
        std::fs::remove_dir_all(&dir).unwrap();
        match (&in_memory, &streamed) {
            (Ok(a), Ok(b)) => {
                let bits = |s: &Series| -> Vec<u32> {
                    s.rows.iter().flatten().map(|v| v.to_bits()).collect()
                };
                assert_eq!(bits(a), bits(b));
                assert_eq!(a.sha256, b.sha256);
                let shown = |s: &Series| -> Vec<String> {
                    s.warnings
                        .iter()
                        .map(|w| w.replace(&path.display().to_string(), "x.csv"))
                        .collect()
                };
                assert_eq!(shown(a), shown(b));
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("in memory {in_memory:?}, streamed {streamed:?}"),
        }
        in_memory
    }

    #[test]
    fn rows_of_several_processes_are_grouped_by_process_with_their_lines() {
        let row = |cpu: u32, pid: u32| format!("1,{cpu},3,4,5,6,7,8,9,10,True,{pid}\n");
        let header = HEADER.replace('\n', ",pid\n");
        // Interleaved, as processes appending to one file write them.
        let text = format!(
            "{header}{}{}{}{}{}",
            row(1, 7),
            row(2, 9),
            row(3, 7),
            row(4, 9),
            row(5, 9)
        );
        let s = parse(&text).unwrap();
        let cpu: Vec<f32> = s.rows.iter().map(|r| r[0]).collect();
        assert_eq!(cpu, vec![1.0, 3.0, 2.0, 4.0, 5.0]);
        assert_eq!(s.processes, vec![0..2, 2..5]);
        let lines: Vec<u64> = (0..5).map(|r| s.line(r)).collect();
        assert_eq!(lines, vec![2, 4, 3, 5, 6]);
        // One process (or no pid column): one run of rows, as before.
        let one = parse(&format!("{header}{}{}", row(1, 7), row(2, 7))).unwrap();
        assert!(one.processes.is_empty());
        assert_eq!(one.segments(), vec![0..2]);
    }

    #[test]
    fn unmeasured_values_are_nan_and_normalise_to_the_mean() {
        let s = parse(&format!(
            "{HEADER}1,2,3,4,5,6,7,,,,True\n1,4,3,4,5,6,7,2,9,10,False\n"
        ))
        .unwrap();
        assert!(s.rows[0][6].is_nan() && s.rows[0][7].is_nan());
        let norm = neurogc_model::Normalization::fit(&s.rows);
        assert_eq!(norm.mean[6], 2.0, "the mean of what was measured");
        let mut x = s.rows[0];
        norm.apply(&mut x);
        assert_eq!(x[6], 0.0);
        assert!(x.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn rows_know_the_line_the_readers_errors_name() {
        let row = |cpu: &str| format!("1,{cpu},3,4,5,6,7,8,9,10,True\n");
        // Blank lines make the line numbers jump.
        let text = |bad: usize| -> String {
            let rows: Vec<String> = (0..4)
                .map(|r| row(if r == bad { "abc" } else { "2" }))
                .collect();
            format!("{HEADER}{}{}\n\n{}{}", rows[0], rows[1], rows[2], rows[3])
        };
        let s = parse(&text(usize::MAX)).unwrap();
        assert_eq!(s.rows.len(), 4);
        assert!(!s.line_jumps.is_empty());
        for r in 0..4 {
            let err = parse(&text(r)).unwrap_err();
            assert!(
                err.starts_with(&format!("x.csv:{}: ", s.line(r))),
                "row {r}: line {}, {err}",
                s.line(r)
            );
        }
        let plain = parse(&format!("{HEADER}{}{}", row("2"), row("2"))).unwrap();
        assert!(plain.line_jumps.is_empty(), "{:?}", plain.line_jumps);
        assert_eq!((plain.line(0), plain.line(1)), (2, 3));
    }

    #[test]
    fn reads_seed_rows_with_boolean_gc() {
        let s = parse(&format!(
            "{HEADER}1,2,3,4,5,6,7,8,9,10,True\n1,2,3,4,5,6,7,8,9,10,False\n"
        ))
        .unwrap();
        assert_eq!(s.rows.len(), 2);
        assert_eq!(
            s.rows[0],
            [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 1.0]
        );
        assert_eq!(s.rows[1][9], 0.0);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let cases = [
            ("time,cpu\n1,2\n", "x.csv: missing column \"mem\""),
            (
                &format!("{HEADER}1,2,3,4,5,6,7,8,9,10,True\n1,abc,3,4,5,6,7,8,9,10,True\n"),
                "x.csv:3: column \"cpu\": \"abc\" is not a number",
            ),
            (
                &format!("{HEADER}1,2,NaN,4,5,6,7,8,9,10,True\n"),
                "x.csv:2: column \"mem\": \"NaN\" is not a finite number",
            ),
            (
                &format!("{HEADER}1,2,3,4,5,6,7,8,9,10,maybe\n"),
                "x.csv:2: column \"gc_triggered\": \"maybe\" is not a boolean",
            ),
            (
                &format!("{HEADER}1,2,3\n1,2,3,4,5,6,7,8,9,10,True\n"),
                "x.csv:2: 3 fields where the header has 11",
            ),
            // Extra fields would shift the cells under the wrong names; a last line without a
            // line end is no excuse (a writer stopped mid-line leaves fewer fields, not more).
            (
                &format!("{HEADER}1,2,3,4,5,6,7,8,9,10,True,9\n"),
                "x.csv:2: 12 fields where the header has 11",
            ),
            (
                &format!("{HEADER}1,2,3,4,5,6,7,8,9,10,True\n1,2,3,4,5,6,7,8,9,10,True,9"),
                "x.csv:3: 12 fields where the header has 11",
            ),
            (
                &format!(
                    "{}{}",
                    HEADER.replace('\n', ",cpu\n"),
                    "1,2,3,4,5,6,7,8,9,10,True,2\n"
                ),
                "x.csv:1: column \"cpu\" appears twice (columns 2 and 12)",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.contains(expected), "{err}\nexpected: {expected}");
        }
    }

    #[test]
    fn truncated_last_line_is_skipped_with_a_warning() {
        let s = parse(&format!("{HEADER}1,2,3,4,5,6,7,8,9,10,True\n1,2,3,4,5")).unwrap();
        assert_eq!(s.rows.len(), 1);
        assert!(
            s.warnings[0].contains("x.csv:3: incomplete last line"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn reads_the_seeds_own_datasets() {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/seed-neurogc"
        ));
        for (file, rows) in [("training_data.csv", 57), ("more_training_data.csv", 191)] {
            let s = load_csv(&dir.join(file)).unwrap();
            assert_eq!(s.rows.len(), rows, "{file}");
            assert!(s.warnings.is_empty());
        }
    }
}
