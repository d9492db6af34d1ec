//! Embeds the committed A/A noise floor (`bench/aa/noise-floor.json`) when it exists.
//!
//! `include_str!` cannot take an optional file, so this copies it (or an empty file) to
//! `OUT_DIR/noise-floor.json`, which `src/noise.rs` includes. Cargo re-runs this script when
//! anything under `bench/` changes, so committing the file later needs no code change.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let bench = manifest.join("../../bench");
    let floor = bench.join("aa/noise-floor.json");
    // A directory is scanned for any change; a missing path would re-run on every build.
    if bench.is_dir() {
        println!("cargo:rerun-if-changed={}", bench.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&floor).unwrap_or_default();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("noise-floor.json");
    std::fs::write(&out, text).expect("cannot write OUT_DIR/noise-floor.json");
}
