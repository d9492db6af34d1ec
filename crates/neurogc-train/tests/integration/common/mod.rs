//! Shared helpers for the trainer's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use neurogc_fuzzkit::ScratchDir;
use neurogc_model::Architecture;
use neurogc_train::dataset::{load_csv, Series};
use neurogc_train::train::{train, TrainConfig, TrainReport};
use neurogc_train::windows::SeedTarget;

/// The seed's published datasets, committed under `data/seed-neurogc/`.
pub fn seed_data(file: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/seed-neurogc"
    ))
    .join(file)
}

pub fn seed_series() -> Vec<Series> {
    ["training_data.csv", "more_training_data.csv"]
        .iter()
        .map(|f| load_csv(&seed_data(f)).unwrap())
        .collect()
}

/// A path that does not exist yet (`name` in a scratch directory), for a test's output; the
/// scratch directory goes, with whatever the test wrote, when the guard is dropped.
pub fn tmp_dir(name: &str) -> (ScratchDir, PathBuf) {
    let scratch = ScratchDir::new("train-test");
    let path = scratch.join(name);
    (scratch, path)
}

pub fn config(
    architecture: Architecture,
    window: usize,
    epochs: usize,
    out: PathBuf,
) -> TrainConfig {
    TrainConfig {
        architecture,
        window,
        epochs,
        batch: 32,
        lr: 1e-3,
        seed: 42,
        val_fraction: 0.2,
        threshold: 0.7,
        out,
        quiet: true,
    }
}

pub fn lstm(hidden: usize) -> Architecture {
    Architecture::Lstm {
        hidden,
        layers: 2,
        dropout: 0.2,
    }
}

pub fn fit(config: &TrainConfig) -> TrainReport {
    train(&seed_series(), &SeedTarget, config).unwrap()
}
