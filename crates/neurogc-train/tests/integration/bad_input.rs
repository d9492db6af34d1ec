//! Bad input to `neurogc train` is a clear error naming what is wrong: never a panic, an internal
//! error from candle, or a model that trains on nonsense or fails to load once saved.

use std::path::PathBuf;

use neurogc_fuzzkit::ScratchDir;

use crate::common::*;
use neurogc_train::{train_model, Kind, TrainArgs};

const HEADER: &str =
    "time,cpu,mem,disk_read,disk_write,net_sent,net_recv,rps,p95,p99,gc_triggered\n";

/// A CSV of 60 rows whose `mem` in row `i` (from 0) is `mem(i)`, in a scratch directory that
/// goes when the guard is dropped.
fn csv(name: &str, mem: impl Fn(usize) -> String) -> (ScratchDir, PathBuf) {
    let mut text = HEADER.to_string();
    for i in 0..60 {
        let row = format!(
            "{i},{},{},0,0,0,0,{},1,2,{}\n",
            10 + i % 5,
            mem(i),
            i % 3,
            i % 2
        );
        text += &row;
    }
    let (scratch, dir) = tmp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.csv");
    std::fs::write(&path, text).unwrap();
    (scratch, path)
}

fn args(data: PathBuf, model: Kind) -> TrainArgs {
    let out = data.with_file_name("model");
    let mut a = TrainArgs::new(vec![data], out);
    a.model = model;
    a.epochs = Some(1);
    a.quiet = true;
    a
}

#[test]
fn every_numeric_flag_is_checked_before_any_data_is_read() {
    use Kind::*;
    type Case = (Kind, fn(&mut TrainArgs), &'static str);
    let cases: &[Case] = &[
        (
            Lstm,
            |a| a.layers = Some(0),
            "--layers must be from 1 to 32, got 0",
        ),
        (
            Lstm,
            |a| a.hidden = Some(0),
            "--hidden must be from 1 to 4096, got 0",
        ),
        (
            Lstm,
            |a| a.hidden = Some(1 << 40),
            "--hidden must be from 1",
        ),
        (
            Feedforward,
            |a| a.ff_hidden = vec![64, 0],
            "--ff-hidden must be from 1 to 4096, got 0",
        ),
        (
            Lstm,
            |a| a.lr = Some(-1.0),
            "--lr must be a positive number, got -1",
        ),
        (
            Lstm,
            |a| a.lr = Some(0.0),
            "--lr must be a positive number, got 0",
        ),
        (
            Lstm,
            |a| a.lr = Some(f64::NAN),
            "--lr must be a positive number, got NaN",
        ),
        (
            Lstm,
            |a| a.epochs = Some(0),
            "--epochs must be at least 1, got 0",
        ),
        (
            Forest,
            |a| a.epochs = Some(0),
            "--epochs must be at least 1, got 0",
        ),
        (
            Lstm,
            |a| a.batch = Some(0),
            "--batch must be at least 1, got 0",
        ),
        (
            Lstm,
            |a| a.window = Some(0),
            "--window must be from 1 to 10000, got 0",
        ),
        (
            Lstm,
            |a| a.window = Some(10_001),
            "--window must be from 1 to 10000, got 10001",
        ),
        (
            Forest,
            |a| a.window = Some(usize::MAX),
            "--window must be from 1 to 10000",
        ),
        (
            Lstm,
            |a| a.dropout = 1.0,
            "--dropout must be in [0, 1), got 1",
        ),
        (
            Feedforward,
            |a| a.dropout = -0.1,
            "--dropout must be in [0, 1), got -0.1",
        ),
        (
            Lstm,
            |a| a.val_fraction = 1.0,
            "--val-fraction must be in [0, 1), got 1",
        ),
        (
            Lstm,
            |a| a.threshold = 1.5,
            "--threshold must be from 0 to 1, got 1.5",
        ),
        (
            Lstm,
            |a| a.threshold = f32::NAN,
            "--threshold must be from 0 to 1, got NaN",
        ),
        (
            Transformer,
            |a| a.heads = 0,
            "must be divisible by --heads 0",
        ),
        (
            Transformer,
            |a| a.heads = 3,
            "--hidden (d_model) 64 must be divisible by --heads 3",
        ),
        (
            Transformer,
            |a| a.layers = Some(0),
            "--layers must be from 1 to 32, got 0",
        ),
        (
            Transformer,
            |a| a.ff_dim = 0,
            "--ff-dim must be from 1 to 4096, got 0",
        ),
        (
            Forest,
            |a| a.trees = 0,
            "--trees must be from 1 to 10000, got 0",
        ),
        (
            Forest,
            |a| a.max_depth = 0,
            "--max-depth must be from 1 to 64, got 0",
        ),
        (
            Forest,
            |a| a.max_depth = 100_000,
            "--max-depth must be from 1 to 64, got 100000",
        ),
        (
            Forest,
            |a| a.min_samples_leaf = 0,
            "--min-samples-leaf must be at least 1, got 0",
        ),
        (
            Forest,
            |a| a.max_features = Some(0),
            "--max-features must be from 1 to 250, got 0",
        ),
        (
            Forest,
            |a| a.max_features = Some(251),
            "--max-features must be from 1 to 250, got 251",
        ),
    ];
    for (i, (kind, set, expected)) in cases.iter().enumerate() {
        // No such file: a flag checked after the data is read would fail on the file instead.
        let (_scratch, dir) = tmp_dir(&format!("flag-{i}"));
        let mut a = args(dir.join("absent.csv"), *kind);
        set(&mut a);
        let e = format!("{:#}", train_model(&a).err().expect(expected));
        assert!(e.contains(expected), "{kind:?} {expected}: got {e}");
        assert!(!dir.exists(), "{expected}: nothing is written");
    }
}

#[test]
fn values_too_large_to_scale_are_refused_naming_file_row_and_column() {
    type Mem = fn(usize) -> String;
    let cases: [(&str, Mem, &str); 2] = [
        // ±3.4e38 alternating: the column's std overflows f32.
        (
            "std",
            |i| if i % 2 == 0 { "3.4e38" } else { "-3.4e38" }.into(),
            "data.csv: row 1: column \"mem\": 3.4e38 is too large to scale",
        ),
        // A validation row far from the training rows' mean: its z-score overflows.
        (
            "z",
            |i| {
                if i == 55 {
                    "3e38"
                } else if i == 5 {
                    "-2e38"
                } else {
                    "-3e38"
                }
                .into()
            },
            "data.csv: row 56: column \"mem\": 3e38 is too large to scale",
        ),
    ];
    for (name, mem, expected) in cases {
        for kind in [Kind::Lstm, Kind::Forest] {
            let (_scratch, data) = csv(&format!("huge-{name}-{kind:?}"), mem);
            let a = args(data, kind);
            let e = format!("{:#}", train_model(&a).err().expect(expected));
            assert!(e.contains(expected), "{name} {kind:?}: {e}");
            assert!(!a.out.exists(), "{name} {kind:?}: no model is saved");
        }
    }
}

#[test]
fn a_window_whose_target_has_an_empty_input_is_skipped_with_one_warning() {
    // Row 21 (line 22) has no `mem`: the seed target of the window ending there cannot be
    // computed. Before, it was NaN, and training ended in "the trained model does not load".
    for kind in [Kind::Lstm, Kind::Forest] {
        let (_scratch, path) = csv(&format!("empty-mem-{kind:?}"), |i| {
            if i == 20 {
                String::new()
            } else {
                format!("{}", 30 + i % 7)
            }
        });
        let a = args(path, kind);
        let report = train_model(&a).unwrap_or_else(|e| panic!("{kind:?}: {e:#}"));
        let skipped: Vec<&String> = report
            .warnings
            .iter()
            .filter(|w| w.contains("skipped"))
            .collect();
        assert_eq!(skipped.len(), 1, "{kind:?}: {:?}", report.warnings);
        let w = skipped[0];
        assert!(
            w.contains("data.csv:22:") && w.contains("1 window ") && w.contains("\"mem\""),
            "{kind:?}: {w}"
        );
        // 60 rows, windows of 10 (lstm) or 20 (forest): the split is of all windows, and the
        // one skipped is a training window.
        let t = &report.meta.training;
        let windows = 60 - a.window.unwrap_or(if kind == Kind::Lstm { 10 } else { 20 }) + 1;
        assert_eq!(
            t["train_windows"].as_u64().unwrap() + t["val_windows"].as_u64().unwrap() + 1,
            windows as u64,
            "{kind:?}: {t}"
        );
        assert_eq!(t["skipped_windows"], 1, "{kind:?}");
        neurogc_model::Model::load(&a.out).unwrap();
    }
}

#[test]
fn every_window_skipped_is_an_error_naming_the_file() {
    let (_scratch, data) = csv("empty-mem-all", |_| String::new());
    let a = args(data, Kind::Lstm);
    let e = format!(
        "{:#}",
        train_model(&a).err().expect("no window has a target")
    );
    assert!(
        e.contains("data.csv") && e.contains("51 windows") && e.contains("no window"),
        "{e}"
    );
    assert!(e.contains("data.csv:11: column \"mem\" is empty"), "{e}");
    assert!(!a.out.exists(), "no model is saved");
}
