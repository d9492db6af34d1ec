//! Errors that stop a run before it starts, and the --hdr-out files.
use crate::common;

use crate::common::{closed_port_url, parse, temp_dir, Behavior, Server};
use neurogc_load::{execute, Config};

fn run_err(argv: &[&str]) -> String {
    let cfg = Config::from_args(parse(argv)).unwrap();
    format!("{:#}", execute(cfg).unwrap_err())
}

#[test]
fn an_unreachable_host_is_named() {
    let good = Server::start(Behavior::default());
    let bad = closed_port_url();
    let e = run_err(&["--host", &good.url, "--host", &bad, "--run-time", "1s"]);
    assert!(e.contains(&bad) && e.contains("cannot reach"), "{e}");
    assert!(!e.contains(&good.url), "{e}");
}

#[test]
fn an_unwritable_json_out_is_named_before_load_starts() {
    let s = Server::start(Behavior::default());
    let e = run_err(&[
        "--host",
        &s.url,
        "--run-time",
        "1s",
        "--json-out",
        "/nonexistent-dir/x.jsonl",
    ]);
    assert!(e.contains("/nonexistent-dir/x.jsonl"), "{e}");
    assert_eq!(s.count("/health") + s.count("/cpu-heavy"), 0);
}

#[test]
fn hdr_out_writes_interval_logs_that_add_up() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    let server = Server::start(Behavior::default());
    let dir = temp_dir("hdr");
    let out = common::run_load(&format!(
        "--host {} --rate 300 --run-time 2s --hdr-out {}",
        server.url,
        dir.to_str().unwrap()
    ));
    let port = server.url.rsplit(':').next().unwrap();
    let log = std::fs::read(dir.join(format!("127.0.0.1_{port}.hlog"))).unwrap();
    let mut de = Deserializer::new();
    let (mut untagged, mut tagged) = (0u64, 0u64);
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(h) = entry.unwrap() {
            let bytes = base64_decode(h.encoded_histogram());
            let hist: hdrhistogram::Histogram<u64> = de.deserialize(&mut bytes.as_slice()).unwrap();
            match h.tag() {
                None => {
                    untagged += hist.len();
                    intervals += 1;
                }
                Some(_) => tagged += hist.len(),
            }
        }
    }
    let total = out.total(&server.url, "all").requests;
    assert_eq!(untagged, total);
    assert_eq!(tagged, total);
    assert!(intervals >= 2);
}

/// Minimal standard base64 decoder (test only; avoids a dependency).
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 {c}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= (val(c) as u32) << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    out
}
