//! A state_dict saved by the seed's own PyTorch LSTMNetwork (fixture made by
//! bench/models/make_torch_fixture.py) imports and reproduces PyTorch's outputs to 1e-5.

use crate::common;

use std::path::Path;

use neurogc_model::{Architecture, FeatureVector, Model, Normalization};
use neurogc_train::import::{import, ImportOptions};

fn fixture() -> serde_json::Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed_lstm_h8.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn options(key: Option<&str>) -> ImportOptions<'_> {
    let f = fixture();
    ImportOptions {
        key,
        normalization: Normalization {
            mean: floats(&f["mean"]),
            std: floats(&f["std"]),
        },
        threshold: 0.7,
        window: None,
        dropout: 0.0,
    }
}

fn check_outputs(model: &Model) {
    let f = fixture();
    let expected = floats(&f["torch_outputs"]);
    let mut scratch = vec![0.0; 6 * 8 + 2 * 10 * 8];
    let mut flat = vec![0.0; 100];
    for (window, want) in f["windows"].as_array().unwrap().iter().zip(expected) {
        let rows: Vec<FeatureVector> = window
            .as_array()
            .unwrap()
            .iter()
            .map(|r| floats(r).try_into().unwrap())
            .collect();
        let got = model.predict_normalized(&rows, &mut scratch, &mut flat);
        assert!((got - want).abs() <= 1e-5, "ours {got} vs PyTorch {want}");
    }
}

#[test]
fn imports_a_seed_state_dict_and_matches_pytorch() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (file, key) in [
        ("seed_lstm_h8.pth", None),
        ("seed_lstm_h8_checkpoint.pth", Some("model_state_dict")),
    ] {
        let (_scratch, out) = common::tmp_dir(file);
        let meta = import(&dir.join(file), &out, options(key)).unwrap();
        assert_eq!(
            meta.architecture,
            Architecture::Lstm {
                hidden: 8,
                layers: 2,
                dropout: 0.0
            }
        );
        assert_eq!(meta.window, 10);
        check_outputs(&Model::load(&out).unwrap());
    }
}

#[test]
fn import_errors_name_the_file() {
    let (_scratch, out) = common::tmp_dir("bad-import");
    let not_pth = common::seed_data("training_data.csv");
    let err = import(&not_pth, &out, options(None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("training_data.csv") && err.contains("not a PyTorch state_dict"),
        "{err}"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let err = import(
        &dir.join("seed_lstm_h8_checkpoint.pth"),
        &out,
        options(Some("optimizer")),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("seed_lstm_h8_checkpoint.pth"), "{err}");
}
