//! `Model::load` on a broken model directory: the error names the file that is wrong, and a
//! file that is not a regular one is refused instead of blocking the agent.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use neurogc_model::meta::FORMAT;
use neurogc_model::{Architecture, Model, ModelError, ModelMeta, Normalization, FEATURES};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// A valid model directory: a feed-forward net without hidden layers over a window of 1.
fn model_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("neurogc-model-load-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = ModelMeta {
        format: FORMAT.into(),
        architecture: Architecture::Feedforward {
            hidden: vec![],
            dropout: 0.0,
        },
        features: FEATURES.iter().map(|f| f.to_string()).collect(),
        window: 1,
        normalization: Normalization {
            mean: vec![0.0; 10],
            std: vec![1.0; 10],
        },
        threshold: 0.5,
        target: "seed".into(),
        data: vec![],
        metrics: Default::default(),
        training: serde_json::Value::Null,
    };
    std::fs::write(
        dir.join("model.json"),
        serde_json::to_string(&meta).unwrap(),
    )
    .unwrap();
    let (w, b): (Vec<u8>, Vec<u8>) = (
        [0.1f32; 10].iter().flat_map(|v| v.to_le_bytes()).collect(),
        0.2f32.to_le_bytes().to_vec(),
    );
    let views = [
        (
            "layers.0.weight",
            TensorView::new(Dtype::F32, vec![1, 10], &w).unwrap(),
        ),
        (
            "layers.0.bias",
            TensorView::new(Dtype::F32, vec![1], &b).unwrap(),
        ),
    ];
    let bytes = safetensors::serialize(views, None).unwrap();
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    dir
}

fn load_err(dir: &Path) -> ModelError {
    Model::load(dir).expect_err("the model should not load")
}

#[test]
fn a_valid_directory_loads() {
    let dir = model_dir("valid");
    let mut p = Model::load(&dir).unwrap().predictor();
    assert!(p.push([1.0; 10]).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_in_model_json_name_model_json() {
    type Corrupt = fn(&str) -> String;
    let cases: [(&str, Corrupt, &str); 4] = [
        (
            "syntax",
            |_| "{ not json".into(),
            "not a valid model description",
        ),
        (
            "window",
            |t| t.replace("\"window\":1", "\"window\":0"),
            "window 0 is out of range",
        ),
        (
            "format",
            |t| t.replace(FORMAT, "other/9"),
            "is not \"neurogc-model/1\"",
        ),
        (
            "norm",
            |t| t.replace("\"std\":[1.0,", "\"std\":["),
            "normalization must hold 10 finite means and stds",
        ),
    ];
    for (name, corrupt, expected) in cases {
        let dir = model_dir(&format!("json-{name}"));
        let meta = dir.join("model.json");
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(&meta, corrupt(&text)).unwrap();
        let e = load_err(&dir);
        assert_eq!(e.path.as_deref(), Some(meta.as_path()), "{name}: {e}");
        let shown = e.to_string();
        assert!(shown.contains(expected), "{name}: {shown}");
        assert!(!shown.contains("safetensors"), "{name}: {shown}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn errors_in_the_weights_name_model_safetensors() {
    type Corrupt = fn(&Path);
    let cases: [(&str, Corrupt); 2] = [
        ("garbage", |p| {
            std::fs::write(p, b"not a tensor file").unwrap()
        }),
        ("truncated", |p| {
            let bytes = std::fs::read(p).unwrap();
            std::fs::write(p, &bytes[..bytes.len() - 4]).unwrap()
        }),
    ];
    for (name, corrupt) in cases {
        let dir = model_dir(&format!("weights-{name}"));
        let weights = dir.join("model.safetensors");
        corrupt(&weights);
        let e = load_err(&dir);
        assert_eq!(e.path.as_deref(), Some(weights.as_path()), "{name}: {e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `Model::load(dir)`'s error, on another thread: a read that blocks fails the test instead of
/// hanging it.
fn load_error_within(dir: PathBuf, secs: u64) -> Option<ModelError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Model::load(&dir).err());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("Model::load blocked on a file that is not a regular one")
}

#[test]
fn a_fifo_or_a_directory_in_place_of_a_file_is_refused_not_waited_on() {
    for file in ["model.json", "model.safetensors"] {
        for kind in ["fifo", "dir"] {
            let dir = model_dir(&format!("special-{kind}-{file}"));
            let path = dir.join(file);
            std::fs::remove_file(&path).unwrap();
            if kind == "fifo" {
                let made = std::process::Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(made.success());
            } else {
                std::fs::create_dir(&path).unwrap();
            }
            let e = load_error_within(dir.clone(), 5).expect("refused");
            assert_eq!(e.path.as_deref(), Some(path.as_path()), "{e}");
            assert!(e.message.contains("not a regular file"), "{e}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
