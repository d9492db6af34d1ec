//! Property tests (a bounded fuzzing pass) of the trainer's CSV reader: arbitrary and mutated
//! files never panic, the in-memory (`parse_csv`) and streaming (`load_csv`) readers agree on
//! rows, hash, warnings and errors, errors name the file, and the agent's rows read back as the
//! features it wrote.
//!
//! Run longer: `PROPTEST_CASES=100000 cargo test -p neurogc-train --test fuzz_dataset`.

use neurogc_core::csv_sink::CsvSink;
use neurogc_core::sample::Sample;
use neurogc_fuzzkit::{byte_mutation, config, temp_path};
use neurogc_model::N_FEATURES;
use neurogc_train::dataset::{load_csv, parse_csv, Series};
use proptest::prelude::*;

const SEED_HEADER: &str =
    "time,cpu,mem,disk_read,disk_write,net_sent,net_recv,rps,p95,p99,gc_triggered\n";

/// Text that trips CSV readers, and numbers that do not fit an f32.
const TOKENS: &[&str] = &[
    ",", "\"", "\n", "\r\n", " ", "nan", "inf", "1e39", "-3.5e38", "1e999", "True", "x", ",cpu",
    "\u{feff}", "\0",
];

/// Reads `bytes` both ways; checks they agree and that an error names the file.
fn read_both(bytes: &[u8]) -> Result<Series, String> {
    let path = temp_path("fuzz-dataset", "csv");
    std::fs::write(&path, bytes).unwrap();
    let name = path.display().to_string();
    let in_memory = parse_csv(&path, bytes).map_err(|e| e.0);
    let streamed = load_csv(&path).map_err(|e| e.0);
    std::fs::remove_file(&path).unwrap();
    match (&in_memory, &streamed) {
        (Ok(a), Ok(b)) => {
            let bits =
                |s: &Series| -> Vec<u32> { s.rows.iter().flatten().map(|v| v.to_bits()).collect() };
            assert_eq!(bits(a), bits(b));
            assert_eq!(a.sha256, b.sha256);
            assert_eq!(a.warnings, b.warnings);
            for w in &a.warnings {
                assert!(w.starts_with(&format!("{name}:")), "{w}");
            }
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b);
            assert!(a.starts_with(&format!("{name}:")), "{a}");
        }
        _ => panic!("in memory {in_memory:?}, streamed {streamed:?}"),
    }
    in_memory.map_err(|e| e.replacen(&name, "x.csv", 1))
}

/// A finite f64, sometimes beyond f32's range.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -1e6..1e6f64,
        2 => (prop::num::f64::NORMAL | prop::num::f64::NEGATIVE | prop::num::f64::ZERO)
            .prop_filter("f32 range", |v| v.abs() <= f64::from(f32::MAX)),
        1 => prop::sample::select(vec![f64::from(f32::MAX), 1e39, -1e300, 1e-50]),
    ]
}

fn sample() -> impl Strategy<Value = Sample> {
    let feature = || prop::option::of(value());
    (
        0.0..2e9f64,
        [
            feature(),
            feature(),
            feature(),
            feature(),
            feature(),
            feature(),
            feature(),
            feature(),
            feature(),
        ],
        any::<bool>(),
        "[a-z ,\"\n]{0,12}",
    )
        .prop_map(|(time, f, gc_triggered, policy_reason)| Sample {
            time,
            cpu: f[0],
            mem: f[1],
            disk_read: f[2],
            disk_write: f[3],
            net_sent: f[4],
            net_recv: f[5],
            rps: f[6],
            p95: f[7],
            p99: f[8],
            gc_triggered,
            policy_reason,
            ..Sample::default()
        })
}

/// The features the trainer must read for `s`: NaN where unmeasured.
fn features(s: &Sample) -> [Option<f64>; N_FEATURES] {
    [
        s.cpu,
        s.mem,
        s.disk_read,
        s.disk_write,
        s.net_sent,
        s.net_recv,
        s.rps,
        s.p95,
        s.p99,
        Some(f64::from(u8::from(s.gc_triggered))),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            prop::collection::vec(prop::sample::select(&b"0123456789.,-e\"\n Trueinf"[..]), 0..256)
                .prop_map(|b| [SEED_HEADER.as_bytes(), &b].concat()),
        ]
    ) {
        let _ = read_both(&bytes);
    }

    #[test]
    fn mutated_seed_csv_never_panics(
        rows in prop::collection::vec(prop::array::uniform11(-1e4..1e4f64), 1..5),
        mutations in prop::collection::vec(byte_mutation(TOKENS), 1..5),
    ) {
        let mut text = SEED_HEADER.to_string();
        for r in &rows {
            let cells: Vec<String> = r.iter().map(|v| v.to_string()).collect();
            text += &(cells.join(",") + "\n");
        }
        let mut bytes = text.into_bytes();
        for m in &mutations {
            m.apply(&mut bytes);
        }
        let _ = read_both(&bytes);
    }

    #[test]
    fn the_agents_rows_read_back_as_its_features(samples in prop::collection::vec(sample(), 0..5)) {
        let path = temp_path("fuzz-dataset", "csv");
        let mut sink = CsvSink::open(&path).unwrap();
        for s in &samples {
            sink.write(s).unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let too_large = |v: &Option<f64>| v.is_some_and(|v| v.abs() > f64::from(f32::MAX));
        let first_bad = samples.iter().flat_map(features).position(|v| too_large(&v));
        match (read_both(&bytes), first_bad) {
            (Ok(series), None) => {
                prop_assert_eq!(series.rows.len(), samples.len());
                for (row, s) in series.rows.iter().zip(&samples) {
                    let want = features(s).map(|v| v.map_or(f32::NAN, |v| v as f32));
                    prop_assert_eq!(row.map(f32::to_bits), want.map(f32::to_bits));
                }
            }
            (Err(e), Some(i)) => {
                // Named by file, line and column.
                let column = neurogc_model::FEATURES[i % N_FEATURES];
                prop_assert!(e.starts_with("x.csv:"), "{}", e);
                prop_assert!(e.contains(&format!(": column {column:?}: ")), "{}", e);
                prop_assert!(e.ends_with("is not finite in f32"), "{}", e);
            }
            (got, _) => {
                let got = got.map(|s| s.rows);
                prop_assert!(false, "{:?} with first bad value at {:?}", got, first_bad)
            }
        }
    }
}
