//! What the crates' bounded fuzzing passes (`tests/fuzz_*.rs`, proptest) share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::test_runner::Config;

/// `cases` unless `PROPTEST_CASES` says otherwise (to run longer:
/// `PROPTEST_CASES=100000 cargo test -p CRATE --test fuzz_NAME`); failures are not saved to files
/// in the tree.
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// A fresh path `N.ext` in a per-process temporary directory named after `test`.
pub fn temp_path(test: &str, ext: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("neurogc-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir.join(format!("{}.{ext}", N.fetch_add(1, Ordering::Relaxed)))
}
