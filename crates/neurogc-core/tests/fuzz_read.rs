//! Property tests (a bounded fuzzing pass) of the sample CSV reader: arbitrary bytes and mutated
//! valid CSVs never panic, errors name the file and the line, the in-memory and streamed readers
//! agree, and what the agent's writer writes reads back as written.
//!
//! Run longer: `PROPTEST_CASES=100000 cargo test -p neurogc-core --test fuzz_read`.

use neurogc_core::csv_sink::CsvSink;
use neurogc_core::sample::read::{
    column_kind, stream_file, BadRows, Cell, ColumnKind, CsvTable, ReadError,
};
use neurogc_core::sample::{GenerationSample, Sample, Value};
use neurogc_fuzzkit::{byte_mutation, config, temp_path, Mutation};
use proptest::prelude::*;

const NAME: &str = "x.csv";

/// Text that trips CSV readers: separators, quotes, line ends, non-finite and huge numbers, a BOM.
const TOKENS: &[&str] = &[
    ",", "\"", "\n", "\r", "\r\n", "\"\"", " ", "nan", "NaN", "inf", "-inf", "1e999", "-1e999",
    "1e-999", "-0", "True", "maybe", "time", ",time", ",cpu", "\u{feff}", "\0", "\u{fffd}", "é",
];
/// The bytes CSV-looking input is made of.
const CSV_BYTES: &[u8] = b"0123456789.,-e\"\r\n TruFalsn";
/// A number with more digits than any float holds (an integer overflowing every type).
const HUGE: &str = "99999999999999999999999999999999999999999999999999999999999999999999999999999";

/// Byte edits, and a header column repeated (`,cpu` appended to the first line).
fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => byte_mutation([TOKENS, &[HUGE]].concat()),
        1 => prop::sample::select(&[",time", ",cpu", ",policy", ",gc_triggered", ",extra"][..])
            .prop_map(Mutation::AppendToFirstLine),
    ]
}

/// A finite float, often an awkward one.
fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e6..1e6f64,
        prop::num::f64::NORMAL
            | prop::num::f64::SUBNORMAL
            | prop::num::f64::ZERO
            | prop::num::f64::POSITIVE
            | prop::num::f64::NEGATIVE,
        prop::sample::select(&[f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, -0.0][..]),
    ]
}

/// Any float: the writer leaves NaN and infinities empty.
fn float() -> impl Strategy<Value = f64> {
    let non_finite = prop::sample::select(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY][..]);
    prop_oneof![4 => finite(), 1 => non_finite]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9 ,\"\r\n\t:;'#]{0,24}",
        any::<String>(),
        Just(String::new())
    ]
}

fn generation() -> impl Strategy<Value = GenerationSample> {
    (any::<u64>(), any::<u64>(), any::<u64>(), float(), float()).prop_map(|(a, b, c, d, e)| {
        GenerationSample {
            collections: a,
            collected: b,
            uncollectable: c,
            pause_ms_sum: d,
            pause_ms_max: e,
        }
    })
}

fn sample() -> impl Strategy<Value = Sample> {
    let of = || prop::option::of(float());
    let seed = (
        finite(),
        [of(), of(), of(), of(), of(), of(), of(), of(), of()],
        any::<bool>(),
    );
    let ours = (
        float(),
        any::<u32>(),
        [
            any::<Option<u64>>(),
            any::<Option<u64>>(),
            any::<Option<u64>>(),
        ],
        any::<i64>(),
        [of(), of(), of()],
        [generation(), generation(), generation()],
        any::<[i64; 3]>(),
        any::<bool>(),
        [text(), text(), text()],
        [any::<u64>(), any::<u64>(), any::<u64>()],
        any::<bool>(),
    );
    (seed, ours).prop_map(
        |(
            (time, s, gc_triggered),
            (interval_s, pid, counts, in_flight, o, gc, gc_count, gc_enabled, t, n, model_fired),
        )| {
            let [cpu, mem, disk_read, disk_write, net_sent, net_recv, rps, p95, p99] = s;
            let [rss_bytes, requests, errors] = counts;
            let [p50, max_latency, model_output] = o;
            let [policy, policy_action, policy_reason] = t;
            let [policy_actions, requests_gc_overlap, requests_gc2_overlap] = n;
            Sample {
                time,
                cpu,
                mem,
                disk_read,
                disk_write,
                net_sent,
                net_recv,
                rps,
                p95,
                p99,
                gc_triggered,
                interval_s,
                pid,
                rss_bytes,
                requests,
                errors,
                in_flight,
                p50,
                max_latency,
                gc,
                gc_count,
                gc_enabled,
                policy,
                policy_actions,
                policy_action,
                policy_reason,
                model_output,
                model_fired,
                requests_gc_overlap,
                requests_gc2_overlap,
            }
        },
    )
}

/// What a written value reads back as, by the reader's rules (text is trimmed, blank is empty).
fn expected(v: &Value) -> Cell {
    match v {
        Value::Float(Some(x)) if x.is_finite() => Cell::Number(*x),
        Value::Int(Some(i)) => Cell::Number(*i as f64),
        Value::Float(_) | Value::Int(None) => Cell::Empty,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Text(s) if s.trim().is_empty() => Cell::Empty,
        Value::Text(s) => Cell::Text(s.trim().to_string()),
    }
}

/// Bytes the agent's writer writes for `samples`.
fn written(samples: &[Sample]) -> Vec<u8> {
    let path = temp_path("fuzz-read", "csv");
    let mut sink = CsvSink::open(&path).unwrap();
    for s in samples {
        sink.write(s).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// Reads `bytes` in memory and streamed from a file, checks both agree and follow the rules, and
/// returns the in-memory result.
fn read_checked(bytes: &[u8], bad_rows: BadRows) -> Result<CsvTable, ReadError> {
    let table = CsvTable::parse(NAME, bytes, bad_rows);
    match &table {
        Err(e) => {
            assert_eq!(e.file, NAME);
            assert!(e.line >= 1, "a malformed CSV's error names a line: {e}");
            let lines = bytes.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64;
            assert!(e.line <= lines + 1, "line {} of {lines}: {e}", e.line);
            assert!(e.to_string().starts_with(&format!("{NAME}:{}: ", e.line)));
        }
        Ok(t) => {
            let mut last_line = 1;
            for row in &t.rows {
                assert_eq!(row.cells.len(), t.header.columns.len());
                assert!(row.line > last_line, "rows in line order: {:?}", t.rows);
                last_line = row.line;
                assert!(t.time(row).is_finite());
                for (column, cell) in t.header.columns.iter().zip(&row.cells) {
                    match (column_kind(column), cell) {
                        (_, Cell::Empty) => {}
                        (Some(ColumnKind::Number), Cell::Number(x)) => assert!(x.is_finite()),
                        (Some(ColumnKind::Bool), Cell::Bool(_)) => {}
                        (Some(ColumnKind::Text), Cell::Text(_)) => {}
                        (None, Cell::Number(x)) => assert!(x.is_finite()),
                        (None, Cell::Text(_)) => {}
                        (kind, cell) => panic!("column {column:?} ({kind:?}) holds {cell:?}"),
                    }
                }
            }
            for w in &t.warnings {
                assert!(w.starts_with(&format!("{NAME}:")), "{w}");
            }
            if bad_rows == BadRows::Fail {
                assert!(
                    t.warnings.len() <= 1,
                    "only a truncated last line: {:?}",
                    t.warnings
                );
            }
        }
    }
    // The streaming reader (the trainer's, for files larger than memory) agrees row for row.
    let path = temp_path("fuzz-read", "csv");
    std::fs::write(&path, bytes).unwrap();
    let (mut rows, mut seen) = (Vec::new(), 0);
    let streamed = stream_file(
        &path,
        NAME,
        bad_rows,
        |b| seen += b.len(),
        |_, row| {
            rows.push(row);
            Ok(())
        },
    );
    std::fs::remove_file(&path).unwrap();
    match (&table, streamed) {
        (Ok(t), Ok((header, warnings))) => {
            assert_eq!(t.header.columns, header.columns);
            assert_eq!(t.rows, rows);
            assert_eq!(t.warnings, warnings);
            assert_eq!(seen, bytes.len());
        }
        (Err(a), Err(b)) => assert_eq!(*a, b),
        (a, b) => panic!("in memory {a:?}, streamed {b:?}"),
    }
    table
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..512),
            // Mostly CSV-looking bytes, after a header the reader accepts.
            prop::collection::vec(prop::sample::select(CSV_BYTES), 0..512)
                .prop_map(|b| [&b"time,cpu,gc_triggered,policy\n"[..], &b].concat()),
        ],
        skip in any::<bool>(),
    ) {
        let _ = read_checked(&bytes, if skip { BadRows::Skip } else { BadRows::Fail });
    }

    #[test]
    fn mutated_valid_csv_never_panics(
        samples in prop::collection::vec(sample(), 1..4),
        mutations in prop::collection::vec(mutation(), 1..6),
        skip in any::<bool>(),
    ) {
        let mut bytes = written(&samples);
        for m in &mutations {
            m.apply(&mut bytes);
        }
        let _ = read_checked(&bytes, if skip { BadRows::Skip } else { BadRows::Fail });
    }

    #[test]
    fn what_the_writer_writes_reads_back(samples in prop::collection::vec(sample(), 0..4)) {
        let t = read_checked(&written(&samples), BadRows::Fail).unwrap();
        prop_assert_eq!(&t.header.columns, &Sample::columns());
        prop_assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        prop_assert_eq!(t.rows.len(), samples.len());
        for (s, row) in samples.iter().zip(&t.rows) {
            let want: Vec<Cell> = s.values().iter().map(expected).collect();
            prop_assert_eq!(&row.cells, &want);
        }
    }
}

/// Found by `mutated_valid_csv_never_panics`: with `\r\n` line ends (the seed's files) the csv
/// crate numbers each row as the line before it (rust-csv#395), so errors named the wrong line.
#[test]
fn regression_crlf_rows_and_errors_name_their_own_line() {
    let t = read_checked(b"time,cpu\r\n1,2\r\n\r\n3,4\r\n", BadRows::Fail).unwrap();
    assert_eq!(t.rows.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 4]);
    assert_eq!(t.rows[0].cells, [Cell::Number(1.0), Cell::Number(2.0)]);
    let e = read_checked(b"time,cpu\r\n1,2\r\n2,x\r\n", BadRows::Fail).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.csv:3: column \"cpu\": \"x\" is not a number"
    );
    // Lone `\r` line ends would make the file one long header: refused, not read as empty.
    let e = read_checked(b"time,cpu\r1,2\r", BadRows::Fail).unwrap_err();
    assert!(e.message.contains("lone `\\r`"), "{e}");
}
