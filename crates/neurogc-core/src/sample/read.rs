//! Reading sample CSVs back: ours (the columns [`Sample::columns`] writes) and the seed's (its
//! eleven columns, `timestamp` for `time`, sometimes a `server` column). The one place where a
//! cell's text becomes a value, so the trainer, the report, the dashboard's replay and its live
//! stream agree on every rule:
//!
//! - an empty cell is unmeasured ([`Cell::Empty`]), never a zero;
//! - booleans are `True`/`False` (as the agent, the seed and Python's `str(bool)` write them),
//!   `true`/`false` or `1`/`0` ([`parse_bool`]);
//! - numbers are finite; `nan` or `inf` in a numeric column is a malformed cell;
//! - text columns (the policy's name, action and reason, the server) stay text;
//! - a header names each column once;
//! - lines end in `\n` or `\r\n` (a file whose lines end in a lone `\r` is refused);
//! - a last line without a line end that is not a whole row (and not longer than one) is what a
//!   writer killed mid-line leaves: it is skipped with a warning. Anything else malformed is an
//!   error naming the file, the line (as an editor counts them, the header is line 1) and the
//!   column, unless the caller asked to skip bad rows ([`BadRows::Skip`]), in which case it
//!   becomes a warning.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use super::{Sample, Value};

/// The column that holds each row's Unix time, and the seed's benchmark files' name for it.
pub const TIME: &str = "time";
pub const TIME_ALIAS: &str = "timestamp";
/// The seed's benchmark files name the server of each row.
pub const SERVER: &str = "server";

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    Number,
    Bool,
    Text,
}

/// The kind of a column the sample schema knows (`server` is text too); `None` for others.
pub fn column_kind(column: &str) -> Option<ColumnKind> {
    static KINDS: OnceLock<HashMap<String, ColumnKind>> = OnceLock::new();
    if column == SERVER {
        return Some(ColumnKind::Text);
    }
    if column == TIME_ALIAS {
        return Some(ColumnKind::Number);
    }
    KINDS
        .get_or_init(|| {
            Sample::default()
                .fields()
                .into_iter()
                .map(|(name, value)| {
                    let kind = match value {
                        Value::Float(_) | Value::Int(_) => ColumnKind::Number,
                        Value::Bool(_) => ColumnKind::Bool,
                        Value::Text(_) => ColumnKind::Text,
                    };
                    (name, kind)
                })
                .collect()
        })
        .get(column)
        .copied()
}

/// The one boolean rule: `True`/`False`, `true`/`false`, `1`/`0` (also `1.0`/`0.0`).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "True" | "true" | "1" | "1.0" => Some(true),
        "False" | "false" | "0" | "0.0" => Some(false),
        _ => None,
    }
}

/// One cell, read by its column's rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Unmeasured.
    Empty,
    Number(f64),
    Bool(bool),
    Text(String),
}

impl Cell {
    /// Reads `text` as a cell of `column`. Unknown columns are numbers when they read as one and
    /// text otherwise.
    pub fn parse(column: &str, text: &str) -> Result<Cell, String> {
        Cell::parse_as(column_kind(column), text)
    }

    /// Reads `text` as a cell of the given kind (`None`: a number if it reads as one, else text).
    pub fn parse_as(kind: Option<ColumnKind>, text: &str) -> Result<Cell, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(Cell::Empty);
        }
        match kind {
            Some(ColumnKind::Text) => Ok(Cell::Text(t.to_string())),
            Some(ColumnKind::Bool) => parse_bool(t)
                .map(Cell::Bool)
                .ok_or_else(|| format!("{t:?} is not a boolean (True/False, true/false, 1/0)")),
            Some(ColumnKind::Number) => match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Cell::Number(v)),
                Ok(_) => Err(format!(
                    "{t:?} is not a finite number (leave the cell empty when unmeasured)"
                )),
                Err(_) => Err(format!("{t:?} is not a number")),
            },
            None => Ok(match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Cell::Number(v),
                _ => Cell::Text(t.to_string()),
            }),
        }
    }

    /// A number: booleans count as 1 and 0; empty and text are `None`.
    pub fn number(&self) -> Option<f64> {
        match self {
            Cell::Number(v) => Some(*v),
            Cell::Bool(b) => Some(f64::from(u8::from(*b))),
            Cell::Empty | Cell::Text(_) => None,
        }
    }
}

/// A malformed sample file, with where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub file: String,
    /// 0 when the problem is the file as a whole.
    pub line: u64,
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for ReadError {}

/// What to do with a malformed row in the middle of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRows {
    /// The file is an error (the trainer, the report: a silently dropped row changes results).
    Fail,
    /// The row is skipped with a warning (the dashboard: a view, not a record).
    Skip,
}

/// Which kind each column of a file holds: [`column_kind`] for sample files; the GC events
/// file has its own (`gcstats::event_column_kind`).
pub type Kinds = fn(&str) -> Option<ColumnKind>;

/// A CSV's header: column names, where each is, and how each is read.
#[derive(Clone, Debug)]
pub struct Header {
    pub columns: Vec<String>,
    index: HashMap<String, usize>,
    kinds: Kinds,
}

impl Header {
    /// A sample file's header; it must have a `time` (or the seed's `timestamp`) column.
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Header, String> {
        Header::with_kinds(names, column_kind)
    }

    /// A header whose columns are read by `kinds`; it must have a `time` column.
    pub fn with_kinds<'a>(
        names: impl IntoIterator<Item = &'a str>,
        kinds: Kinds,
    ) -> Result<Header, String> {
        let columns: Vec<String> = names.into_iter().map(|c| c.trim().to_string()).collect();
        let mut index = HashMap::with_capacity(columns.len());
        for (i, c) in columns.iter().enumerate() {
            // Which of two same-named columns a reader means is a guess: refuse it.
            if let Some(first) = index.insert(c.clone(), i) {
                return Err(format!(
                    "column {c:?} appears twice (columns {} and {})",
                    first + 1,
                    i + 1
                ));
            }
        }
        if !index.contains_key(TIME) && !index.contains_key(TIME_ALIAS) {
            return Err(format!(
                "no `{TIME}` or `{TIME_ALIAS}` column; not a sample CSV (header: {})",
                columns.join(",")
            ));
        }
        Ok(Header {
            columns,
            index,
            kinds,
        })
    }

    /// Where `column` is; `time` also finds the seed's `timestamp`.
    pub fn position(&self, column: &str) -> Option<usize> {
        self.index.get(column).copied().or_else(|| {
            (column == TIME)
                .then(|| self.index.get(TIME_ALIAS).copied())
                .flatten()
        })
    }

    pub fn has(&self, column: &str) -> bool {
        self.position(column).is_some()
    }

    /// Reads one record's cells; the number of fields must match the header's, and the row
    /// must have a time.
    fn row(&self, line: u64, fields: &csv::StringRecord) -> Result<Row, String> {
        if fields.len() != self.columns.len() {
            return Err(format!(
                "{} fields where the header has {}",
                fields.len(),
                self.columns.len()
            ));
        }
        let cells = self
            .columns
            .iter()
            .zip(fields.iter())
            .map(|(column, text)| {
                Cell::parse_as((self.kinds)(column), text)
                    .map_err(|e| format!("column {column:?}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let row = Row { line, cells };
        match self.position(TIME).and_then(|i| row.cells[i].number()) {
            Some(_) => Ok(row),
            None => Err("empty time".into()),
        }
    }

    /// Parses one line of CSV text (a line of a file being followed) with this header.
    pub fn parse_line(&self, line_no: u64, line: &str) -> Result<Row, String> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(line.as_bytes());
        let mut record = csv::StringRecord::new();
        match reader.read_record(&mut record) {
            Ok(true) => self.row(line_no, &record),
            Ok(false) => Err("empty line".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// One row's cells, in header order.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The row's line in its file (the header is line 1).
    pub line: u64,
    pub cells: Vec<Cell>,
}

/// A whole CSV: a sample file, or another file with a `time` column (the GC events).
#[derive(Clone, Debug)]
pub struct CsvTable {
    pub header: Header,
    pub rows: Vec<Row>,
    /// Rows skipped, and why, each starting with `file:line:`.
    pub warnings: Vec<String>,
}

impl CsvTable {
    /// Reads a sample file at `path`; errors and warnings name it as `shown`.
    pub fn read(path: &Path, shown: &str, bad_rows: BadRows) -> Result<CsvTable, ReadError> {
        CsvTable::read_with(path, shown, column_kind, bad_rows)
    }

    /// Reads a sample file's bytes.
    pub fn parse(shown: &str, bytes: &[u8], bad_rows: BadRows) -> Result<CsvTable, ReadError> {
        CsvTable::parse_with(shown, bytes, column_kind, bad_rows)
    }

    /// Reads a CSV file whose columns `kinds` describes.
    pub fn read_with(
        path: &Path,
        shown: &str,
        kinds: Kinds,
        bad_rows: BadRows,
    ) -> Result<CsvTable, ReadError> {
        let bytes = std::fs::read(path).map_err(|e| ReadError {
            file: shown.to_string(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        CsvTable::parse_with(shown, &bytes, kinds, bad_rows)
    }

    /// Reads CSV bytes whose columns `kinds` describes.
    pub fn parse_with(
        shown: &str,
        bytes: &[u8],
        kinds: Kinds,
        bad_rows: BadRows,
    ) -> Result<CsvTable, ReadError> {
        let complete = bytes.is_empty() || bytes.ends_with(b"\n");
        let mut rows = Vec::new();
        let (header, warnings) = stream(shown, bytes, &|| complete, kinds, bad_rows, |_, row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(CsvTable {
            header,
            rows,
            warnings,
        })
    }

    pub fn has(&self, column: &str) -> bool {
        self.header.has(column)
    }
}

/// Reads a sample file at `path` a row at a time, by the same rules as [`CsvTable::read`], handing
/// each row to `each` (whose error stops the read, naming the row's line) instead of keeping
/// them: a file far larger than memory is read in constant space. `tap` sees every byte read, in
/// order (to hash the file in the same pass). Returns the header and the warnings.
pub fn stream_file(
    path: &Path,
    shown: &str,
    bad_rows: BadRows,
    tap: impl FnMut(&[u8]),
    each: impl FnMut(&Header, Row) -> Result<(), String>,
) -> Result<(Header, Vec<String>), ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError {
        file: shown.to_string(),
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    // The last byte read: by the time the last row is judged, the reader has met the end, so it
    // says whether the input ended with a line end (a file still being written included).
    let last = std::cell::Cell::new(b'\n');
    let input = Tap {
        inner: file,
        tap,
        last: &last,
    };
    stream(
        shown,
        input,
        &|| last.get() == b'\n',
        column_kind,
        bad_rows,
        each,
    )
}

/// A reader that shows every byte it reads to `tap` and keeps the last one.
struct Tap<'a, R, F> {
    inner: R,
    tap: F,
    last: &'a std::cell::Cell<u8>,
}

impl<R: std::io::Read, F: FnMut(&[u8])> std::io::Read for Tap<'_, R, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.tap)(&buf[..n]);
        if let Some(&b) = buf[..n].last() {
            self.last.set(b);
        }
        Ok(n)
    }
}

/// The one CSV reading loop: `complete` says, once the input has been read to its end, whether it
/// ended with a line end (else a malformed last row is a truncated write, skipped with a warning).
fn stream(
    shown: &str,
    input: impl std::io::Read,
    complete: &dyn Fn() -> bool,
    kinds: Kinds,
    bad_rows: BadRows,
    mut each: impl FnMut(&Header, Row) -> Result<(), String>,
) -> Result<(Header, Vec<String>), ReadError> {
    let error = |line: u64, message: String| ReadError {
        file: shown.to_string(),
        line,
        message,
    };
    // Only `\n` ends a row: the csv crate numbers the line after a `\r\n` as the one before
    // (rust-csv#395), so every error in a CRLF file (the seed's) named the line above. The `\r`
    // left at the end of a row's last field is trimmed like any space.
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(input);
    let header = reader
        .headers()
        .map_err(|e| error(1, format!("unreadable header: {e}")))?;
    if header.iter().any(|c| c.trim().contains('\r')) {
        return Err(error(
            1,
            "lines end in a lone `\\r` (old Mac line ends); only `\\n` and `\\r\\n` end a line"
                .into(),
        ));
    }
    let header = Header::with_kinds(header.iter(), kinds).map_err(|e| error(1, e))?;
    let mut warnings = Vec::new();
    {
        let mut records = reader.records().peekable();
        while let Some(record) = records.next() {
            // A blank line, `\r\n` included, is skipped as the csv crate skips an empty one.
            if record
                .as_ref()
                .is_ok_and(|r| r.len() == 1 && r[0].trim().is_empty())
            {
                continue;
            }
            let is_last = records.peek().is_none();
            // A writer stopped mid-line leaves fewer fields, never more.
            let mut too_long = false;
            let parsed = match record {
                Ok(r) => {
                    let line = r.position().map_or(0, |p| p.line());
                    too_long = r.len() > header.columns.len();
                    header.row(line, &r).map_err(|e| (line, e))
                }
                Err(e) => Err((e.position().map_or(0, |p| p.line()), e.to_string())),
            };
            match parsed {
                Ok(row) => {
                    let line = row.line;
                    each(&header, row).map_err(|e| error(line, e))?;
                }
                Err((line, e)) if is_last && !too_long && !complete() => warnings.push(format!(
                    "{shown}:{line}: incomplete last line (no line end: the writer stopped mid-line; {e}); skipped"
                )),
                Err((line, e)) if bad_rows == BadRows::Skip => {
                    warnings.push(format!("{shown}:{line}: {e}; skipped"))
                }
                Err((line, e)) => return Err(error(line, e)),
            }
        }
    }
    Ok((header, warnings))
}

impl CsvTable {
    /// `column` of `row`: the cell, or `None` when the file has no such column.
    pub fn cell<'a>(&self, row: &'a Row, column: &str) -> Option<&'a Cell> {
        self.header.position(column).map(|i| &row.cells[i])
    }

    /// `column` of `row` as a number (booleans as 1/0); `None` when absent, empty or text.
    pub fn number(&self, row: &Row, column: &str) -> Option<f64> {
        self.cell(row, column).and_then(Cell::number)
    }

    /// Each row's time.
    pub fn time(&self, row: &Row) -> f64 {
        self.number(row, TIME).unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CsvTable, String> {
        CsvTable::parse("x.csv", text.as_bytes(), BadRows::Fail).map_err(|e| e.to_string())
    }

    #[test]
    fn columns_take_their_kinds_from_the_schema() {
        assert_eq!(column_kind("cpu"), Some(ColumnKind::Number));
        assert_eq!(column_kind("gc2_pause_ms_max"), Some(ColumnKind::Number));
        assert_eq!(column_kind("gc_triggered"), Some(ColumnKind::Bool));
        assert_eq!(column_kind("model_fired"), Some(ColumnKind::Bool));
        assert_eq!(column_kind("policy_reason"), Some(ColumnKind::Text));
        assert_eq!(column_kind("server"), Some(ColumnKind::Text));
        assert_eq!(column_kind("timestamp"), Some(ColumnKind::Number));
        assert_eq!(column_kind("my_metric"), None);
    }

    #[test]
    fn one_rule_for_cells() {
        assert_eq!(Cell::parse("cpu", " "), Ok(Cell::Empty));
        assert_eq!(Cell::parse("cpu", "1.5"), Ok(Cell::Number(1.5)));
        assert!(Cell::parse("cpu", "nan")
            .unwrap_err()
            .contains("not a finite number"));
        assert!(Cell::parse("cpu", "abc")
            .unwrap_err()
            .contains("not a number"));
        assert_eq!(Cell::parse("gc_triggered", "True"), Ok(Cell::Bool(true)));
        assert_eq!(Cell::parse("gc_triggered", "false"), Ok(Cell::Bool(false)));
        assert_eq!(Cell::parse("gc_triggered", "1"), Ok(Cell::Bool(true)));
        assert!(Cell::parse("gc_triggered", "maybe").is_err());
        assert_eq!(Cell::parse("policy", "0"), Ok(Cell::Text("0".into())));
        assert_eq!(
            Cell::parse("server", "with_gc"),
            Ok(Cell::Text("with_gc".into()))
        );
        assert_eq!(Cell::parse("extra", "2"), Ok(Cell::Number(2.0)));
        assert_eq!(Cell::parse("extra", "x"), Ok(Cell::Text("x".into())));
        assert_eq!(Cell::Bool(true).number(), Some(1.0));
    }

    #[test]
    fn reads_ours_and_the_seeds() {
        let t = parse("time,cpu,rss_bytes,gc_triggered\n1.0,5,100,True\n2.0,,200,False\n").unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.number(&t.rows[0], "cpu"), Some(5.0));
        assert_eq!(t.number(&t.rows[1], "cpu"), None, "empty is unmeasured");
        assert_eq!(t.number(&t.rows[1], "gc_triggered"), Some(0.0));
        assert_eq!(t.number(&t.rows[1], "p99"), None, "absent column");
        let seed = parse("timestamp,server,cpu,gc_triggered\n7.5,with_gc,12,True\n").unwrap();
        assert_eq!(seed.time(&seed.rows[0]), 7.5);
        assert_eq!(
            seed.cell(&seed.rows[0], "server"),
            Some(&Cell::Text("with_gc".into()))
        );
    }

    #[test]
    fn an_incomplete_last_line_is_skipped_with_a_warning() {
        let t = parse("time,cpu\n1.0,5\n2.0,6\n3.0").unwrap();
        assert_eq!(t.rows.len(), 2);
        assert!(
            t.warnings[0].starts_with("x.csv:4: incomplete last line"),
            "{:?}",
            t.warnings
        );
        // A whole last row without a line end is a row.
        let t = parse("time,cpu\n1.0,5\n2.0,6").unwrap();
        assert_eq!(t.rows.len(), 2);
        assert!(t.warnings.is_empty());
    }

    #[test]
    fn malformed_rows_name_file_line_and_column() {
        let cases = [
            ("cpu\n1\n", "x.csv:1: no `time` or `timestamp` column"),
            (
                "time,cpu\n1.0,5\n2.0,abc\n3.0,7\n",
                "x.csv:3: column \"cpu\": \"abc\" is not a number",
            ),
            (
                "time,cpu\n1.0,5\n2.0\n3.0,7\n",
                "x.csv:3: 1 fields where the header has 2",
            ),
            ("time,cpu\n,5\n", "x.csv:2: empty time"),
            // More fields than the header: the cells would shift under the wrong names.
            (
                "time,cpu\n1.0,5\n2.0,6,7\n3.0,7\n",
                "x.csv:3: 3 fields where the header has 2",
            ),
            (
                "time,cpu\n1.0,5\n2.0,6,7",
                "x.csv:3: 3 fields where the header has 2",
            ),
            (
                "time,cpu,mem,cpu\n1.0,5,6,7\n",
                "x.csv:1: column \"cpu\" appears twice (columns 2 and 4)",
            ),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
        }
        let t = CsvTable::parse("x.csv", b"time,cpu\n1,5\n2,abc\n3,7\n", BadRows::Skip).unwrap();
        assert_eq!(t.rows.len(), 2);
        assert!(
            t.warnings[0].starts_with("x.csv:3: column \"cpu\""),
            "{:?}",
            t.warnings
        );
    }

    #[test]
    fn lines_of_a_followed_file_parse_with_its_header() {
        let h = Header::new(["time", "cpu", "policy_reason"]).unwrap();
        let row = h.parse_line(5, "1.0,2,\"a, b\"").unwrap();
        assert_eq!(row.cells[2], Cell::Text("a, b".into()));
        assert!(h.parse_line(6, "1.0,2").is_err());
    }

    #[test]
    fn what_the_writer_writes_reads_back() {
        let s = Sample {
            time: 12.5,
            cpu: None,
            gc_triggered: true,
            policy: "periodic:30".into(),
            policy_reason: "guard: rss 300 MiB > budget 200 MiB, then more".into(),
            ..Sample::default()
        };
        let path =
            std::env::temp_dir().join(format!("neurogc-read-back-{}.csv", std::process::id()));
        let _ = std::fs::remove_file(&path);
        crate::csv_sink::CsvSink::open(&path)
            .unwrap()
            .write(&s)
            .unwrap();
        let t = CsvTable::read(&path, "x.csv", BadRows::Fail).unwrap();
        std::fs::remove_file(&path).unwrap();
        let row = &t.rows[0];
        assert_eq!(t.time(row), 12.5);
        assert_eq!(t.cell(row, "cpu"), Some(&Cell::Empty));
        assert_eq!(t.cell(row, "gc_triggered"), Some(&Cell::Bool(true)));
        assert_eq!(
            t.cell(row, "policy_reason"),
            Some(&Cell::Text(s.policy_reason.clone()))
        );
    }

    #[test]
    fn a_streamed_file_follows_the_same_rules_in_one_pass() {
        let path = std::env::temp_dir().join(format!("neurogc-stream-{}.csv", std::process::id()));
        // Two rows, then a line the writer stopped in the middle of.
        let text = "time,cpu,gc_triggered\n1,2,True\n2,,False\n3,4";
        std::fs::write(&path, text).unwrap();
        let (mut seen, mut times) = (0usize, Vec::new());
        let (header, warnings) = stream_file(
            &path,
            "x.csv",
            BadRows::Fail,
            |bytes| seen += bytes.len(),
            |h, row| {
                times.push(row.cells[h.position(TIME).unwrap()].number().unwrap());
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(header.columns, ["time", "cpu", "gc_triggered"]);
        assert_eq!(times, [1.0, 2.0]);
        assert!(
            warnings[0].contains("x.csv:4: incomplete last line"),
            "{warnings:?}"
        );
        assert_eq!(seen, text.len(), "every byte passed the tap");
        // The caller's error stops the read and names the row's line.
        let e = stream_file(
            &path,
            "x.csv",
            BadRows::Fail,
            |_| {},
            |_, row| {
                if row.line == 3 {
                    Err("no".into())
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "x.csv:3: no");
        std::fs::remove_file(&path).unwrap();
    }
}
