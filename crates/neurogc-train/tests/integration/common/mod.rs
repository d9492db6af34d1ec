//! Shared helpers for the trainer's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

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

pub fn tmp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("neurogc-train-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
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
