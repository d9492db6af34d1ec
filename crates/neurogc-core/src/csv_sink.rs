//! Append-only CSVs: header once, rows flushed as they are written, so a crash loses at most the
//! write in progress. The samples CSV gets one row per sample; the GC events CSV
//! ([`crate::gcstats::GcEvent::CSV_COLUMNS`]) one batch of rows per sample.
//!
//! Quoting is the `csv` crate's (RFC 4180, quotes only where needed). It renders into memory; the
//! file itself is written here, one `write` per batch, so nothing is buffered between batches
//! (a fork child inherits no half-written rows) and an I/O error is the caller's to see at once.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::sample::Sample;

pub struct CsvSink {
    path: PathBuf,
    file: File,
    rows: u64,
    /// The batch being written, rendered (empty between batches; kept for its allocation).
    text: Vec<u8>,
}

impl CsvSink {
    /// Opens the samples CSV ([`Sample::columns`]) at `path`; see [`CsvSink::open_with_columns`].
    pub fn open(path: &Path) -> io::Result<CsvSink> {
        Self::open_with_columns(path, &Sample::columns())
    }

    /// Opens `path` for appending rows of `columns`. A new or empty file gets the header; an
    /// existing file must already have this header (appending rows under a different header would
    /// corrupt it).
    pub fn open_with_columns<S: AsRef<str>>(path: &Path, columns: &[S]) -> io::Result<CsvSink> {
        let mut header = Vec::new();
        render([columns.iter().map(AsRef::as_ref)], &mut header)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            file.write_all(&header)?;
            file.flush()?;
        } else {
            let mut first = Vec::new();
            BufReader::new(File::open(path)?).read_until(b'\n', &mut first)?;
            if first.trim_ascii_end() != header.trim_ascii_end() {
                let first = String::from_utf8_lossy(&first);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} already exists with a different header; refusing to append (first line: {:?})",
                        path.display(),
                        truncate(first.trim_end(), 80)
                    ),
                ));
            }
            // A crash mid-row leaves a partial line: start ours on a fresh one.
            if !ends_with_newline(path, len)? {
                writeln!(file)?;
            }
        }
        Ok(CsvSink {
            path: path.to_path_buf(),
            file,
            rows: 0,
            text: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows_written(&self) -> u64 {
        self.rows
    }

    /// Writes one sample's row and flushes it to the OS.
    pub fn write(&mut self, sample: &Sample) -> io::Result<()> {
        self.write_rows([sample.values().iter().map(|v| v.to_csv())])
    }

    /// Writes rows of already rendered fields (escaped here) and flushes them to the OS. The batch
    /// goes out in one write call, so a concurrent reader sees whole rows.
    pub fn write_rows<R, F>(&mut self, rows: impl IntoIterator<Item = R>) -> io::Result<()>
    where
        R: IntoIterator<Item = F>,
        F: AsRef<str>,
    {
        self.text.clear();
        let count = render(rows, &mut self.text)?;
        if count == 0 {
            return Ok(());
        }
        let written = self
            .file
            .write_all(&self.text)
            .and_then(|()| self.file.flush());
        self.text.clear();
        written?;
        self.rows += count;
        Ok(())
    }
}

/// Appends `rows` to `out` as CSV lines (`\n`-terminated, fields quoted where needed) and
/// returns how many there were. Writing to memory: the only errors are the `csv` crate's own.
fn render<R, F>(rows: impl IntoIterator<Item = R>, out: &mut Vec<u8>) -> io::Result<u64>
where
    R: IntoIterator<Item = F>,
    F: AsRef<str>,
{
    // `flexible`: rows are not checked against each other's length, as before.
    let mut writer = csv::WriterBuilder::new().flexible(true).from_writer(out);
    let mut count = 0;
    for row in rows {
        for field in row {
            writer.write_field(field.as_ref())?;
        }
        writer.write_record(None::<&[u8]>)?;
        count += 1;
    }
    writer.flush()?;
    Ok(count)
}

/// What stands for the process id in a CSV path template.
pub const PID_PLACEHOLDER: &str = "{pid}";

/// The CSV path a process writes to. `samples.csv` in the parent becomes `samples-<pid>.csv` in a
/// fork child ([`child_template`]), so workers never interleave rows; a `{pid}` in the path is
/// replaced instead.
pub fn csv_path_for_process(template: &Path, pid: u32, forked: bool) -> PathBuf {
    let template = if forked {
        child_template(template)
    } else {
        template.to_path_buf()
    };
    PathBuf::from(
        template
            .to_string_lossy()
            .replace(PID_PLACEHOLDER, &pid.to_string()),
    )
}

/// The template the other processes of a service write to: `samples.csv` → `samples-{pid}.csv`
/// (a path that already has a `{pid}` stays as it is). Fork children use it, and `neurogc run`
/// hands it to every process the command starts (spawned workers, `multiprocessing`), so each
/// process has its own file next to the first one's.
pub fn child_template(template: &Path) -> PathBuf {
    if template.to_string_lossy().contains(PID_PLACEHOLDER) {
        return template.to_path_buf();
    }
    let stem = template
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match template.extension() {
        Some(ext) => format!("{stem}-{PID_PLACEHOLDER}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{PID_PLACEHOLDER}"),
    };
    template.with_file_name(name)
}

/// Which process wrote `name`, a file next to `base` named by [`child_template`]:
/// `samples-1234.csv` beside `samples.csv` is process 1234's; anything else is `None`.
pub fn process_of_file(base: &str, name: &str) -> Option<u32> {
    let base = Path::new(base);
    let stem = base.file_stem()?.to_str()?;
    let rest = name.strip_prefix(stem)?.strip_prefix('-')?;
    let digits = match base.extension() {
        Some(ext) => rest.strip_suffix(&format!(".{}", ext.to_str()?))?,
        None => rest,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

fn ends_with_newline(path: &Path, len: u64) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `samples.csv` in a scratch directory that goes when the first is dropped.
    fn tmp(name: &str) -> (neurogc_fuzzkit::ScratchDir, PathBuf) {
        let dir = neurogc_fuzzkit::ScratchDir::new(&format!("csv-{name}"));
        let path = dir.join("samples.csv");
        (dir, path)
    }

    #[test]
    fn fork_children_get_their_own_csv() {
        let t = Path::new("/tmp/run/samples.csv");
        assert_eq!(
            csv_path_for_process(t, 42, false),
            PathBuf::from("/tmp/run/samples.csv")
        );
        assert_eq!(
            csv_path_for_process(t, 42, true),
            PathBuf::from("/tmp/run/samples-42.csv")
        );
        let templ = Path::new("/tmp/run/s-{pid}.csv");
        assert_eq!(
            csv_path_for_process(templ, 7, false),
            PathBuf::from("/tmp/run/s-7.csv")
        );
        assert_eq!(
            csv_path_for_process(Path::new("out"), 7, true),
            PathBuf::from("out-7")
        );
    }

    #[test]
    fn children_get_a_template_and_their_files_name_their_process() {
        let t = Path::new("/tmp/run/gc-events.csv");
        let child = child_template(t);
        assert_eq!(child, PathBuf::from("/tmp/run/gc-events-{pid}.csv"));
        // A child's child keeps the template: every process has its own file.
        assert_eq!(child_template(&child), child);
        assert_eq!(
            csv_path_for_process(&child, 9, false),
            csv_path_for_process(t, 9, true)
        );
        assert_eq!(process_of_file("gc-events.csv", "gc-events-9.csv"), Some(9));
        assert_eq!(
            process_of_file("samples.csv", "samples-1234.csv"),
            Some(1234)
        );
        assert_eq!(process_of_file("out", "out-7"), Some(7));
        for other in [
            "samples.csv",
            "samples-.csv",
            "samples-12a.csv",
            "samples-012.csv",
            "samples-12.csv.tmp",
            "gc-events-12.csv",
            "samples-99999999999.csv",
        ] {
            assert_eq!(process_of_file("samples.csv", other), None, "{other}");
        }
    }

    #[test]
    fn header_once_rows_appended_across_reopen() {
        let (_dir, path) = tmp("reopen");
        let s = Sample {
            policy_reason: "guard: rss 1,2 > budget".into(),
            ..Sample::default()
        };
        CsvSink::open(&path).unwrap().write(&s).unwrap();
        let mut sink = CsvSink::open(&path).unwrap();
        sink.write(&s).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("time,cpu,mem,"));
        assert!(lines[1].contains(",\"guard: rss 1,2 > budget\","));
    }

    #[test]
    fn gc_events_batches_append_under_one_header() {
        use crate::gcstats::{CollectionCause, GcEvent};
        let (dir, _) = tmp("events");
        let path = dir.join("gc-events.csv");
        let event = |generation, cause| GcEvent {
            start_time: 1.5,
            generation,
            pause_ns: 2_000,
            collected: 3,
            uncollectable: 0,
            cause,
            in_flight: None,
            intent: None,
        };
        let mut sink = CsvSink::open_with_columns(&path, &GcEvent::CSV_COLUMNS).unwrap();
        let batch = [
            event(0, CollectionCause::Runtime),
            event(2, CollectionCause::Policy),
        ];
        sink.write_rows(batch.iter().map(|e| e.csv_fields(5)))
            .unwrap();
        sink.write_rows(std::iter::empty::<[String; 12]>()).unwrap();
        assert_eq!(sink.rows_written(), 2);
        let mut sink = CsvSink::open_with_columns(&path, &GcEvent::CSV_COLUMNS).unwrap();
        sink.write_rows([event(1, CollectionCause::Runtime).csv_fields(5)])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "time,generation,pause_ms,collected,uncollectable,reason,in_flight,trigger,predicted_ms,predicted_freed,pid,why\n\
             1.500000,0,0.002,3,0,runtime,,,,,5,\n\
             1.500000,2,0.002,3,0,policy,,,,,5,\n\
             1.500000,1,0.002,3,0,runtime,,,,,5,\n"
        );
        // The samples CSV's header is not ours: refused.
        assert!(CsvSink::open(&path).is_err());
    }

    #[test]
    fn fields_are_quoted_only_where_needed() {
        let (dir, _) = tmp("quoting");
        let path = dir.join("q.csv");
        let mut sink = CsvSink::open_with_columns(&path, &["a", "b", "c", "d", "e", "f"]).unwrap();
        sink.write_rows([["plain", "a,b", "say \"hi\"", "two\nlines", "cr\r", ""]])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "a,b,c,d,e,f\nplain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\r\",\n"
        );
    }

    #[test]
    fn foreign_header_is_refused_and_untouched() {
        let (_dir, path) = tmp("foreign");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let err = CsvSink::open(&path).err().unwrap();
        assert!(err.to_string().contains("different header"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n1,2\n");
    }

    #[test]
    fn partial_last_row_is_terminated_before_appending() {
        let (_dir, path) = tmp("partial");
        CsvSink::open(&path)
            .unwrap()
            .write(&Sample::default())
            .unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        write!(f, "1.0,2.0").unwrap();
        CsvSink::open(&path)
            .unwrap()
            .write(&Sample::default())
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4);
        assert_eq!(text.lines().nth(2), Some("1.0,2.0"));
    }
}
