//! The page embeds uPlot from `web/node_modules` (installed from web/package-lock.json), so the
//! binary serves it with no internet. Fail early, and say what to run, when it is not installed.

use std::path::Path;

/// Third-party files the page embeds, relative to `web/node_modules` (see `src/assets.rs`).
const VENDORED: [&str; 2] = ["uplot/dist/uPlot.iife.min.js", "uplot/dist/uPlot.min.css"];

fn main() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
    for file in VENDORED {
        let path = web.join("node_modules").join(file);
        if !path.is_file() {
            panic!(
                "\n\nneurogc-dashboard: {} is missing.\n\
                 The dashboard page embeds uPlot from npm. Install it first:\n\n    \
                 (cd {} && npm ci)\n\n",
                path.display(),
                web.display()
            );
        }
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=web/src");
    println!("cargo:rerun-if-changed=web/package-lock.json");
}
