//! Embeds the committed A/A noise floor (`bench/aa/noise-floor.json`) when it exists.
//!
//! `include_str!` cannot take an optional file, so this copies it (or an empty file) to
//! `OUT_DIR/noise-floor.json`, which `src/noise.rs` includes. Cargo re-runs this script when
//! the file changes or appears, so committing it later needs no code change.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let bench = manifest.join("../../bench");
    let floor = bench.join("aa/noise-floor.json");
    // Watch the file once it exists (so bench runs writing under bench/ do not rebuild us), else
    // the nearest existing directory, which changes when the file appears. A missing path
    // would re-run this script on every build.
    let watched = [floor.clone(), bench.join("aa"), bench.clone()]
        .into_iter()
        .find(|p| p.exists());
    if let Some(p) = watched {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&floor).unwrap_or_default();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("noise-floor.json");
    std::fs::write(&out, text).expect("cannot write OUT_DIR/noise-floor.json");
}
