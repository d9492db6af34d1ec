//! Property tests (a bounded fuzzing pass) of `Model::load`: valid models of every kind, including
//! degenerate sizes, load and predict; mutated `model.json` (random values in its fields,
//! truncation) and random or damaged `model.safetensors` are refused, never panicked on, with an
//! error naming the file that is wrong.
//!
//! Run longer: `PROPTEST_CASES=100000 cargo test -p neurogc-model --test fuzz_load`.

use std::path::{Path, PathBuf};

use neurogc_fuzzkit::{config, temp_path};
use neurogc_model::meta::FORMAT;
use neurogc_model::model::{forest_input_len, TensorMap};
use neurogc_model::{Architecture, Model, ModelMeta, Normalization, FEATURES, N_FEATURES};
use proptest::prelude::*;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use serde_json::{json, Value};

/// One tensor: name, shape, and its values (F32, or I32 when `ints`).
#[derive(Clone, Debug)]
struct Tensor {
    name: String,
    shape: Vec<usize>,
    f32s: Vec<f32>,
    ints: Option<Vec<i32>>,
}

/// A model as files hold it.
#[derive(Clone, Debug)]
struct Spec {
    meta: ModelMeta,
    tensors: Vec<Tensor>,
}

/// Deterministic weights in [-1, 1] from a seed (the values do not matter, only the shapes).
fn weights(seed: &mut u64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn f32_tensor(seed: &mut u64, name: String, shape: &[usize]) -> Tensor {
    Tensor {
        f32s: weights(seed, shape.iter().product()),
        name,
        shape: shape.to_vec(),
        ints: None,
    }
}

/// `{name}.weight` `[out, inp]` and `{name}.bias` `[out]`.
fn linear(seed: &mut u64, out: &mut Vec<Tensor>, name: &str, o: usize, i: usize) {
    out.push(f32_tensor(seed, format!("{name}.weight"), &[o, i]));
    out.push(f32_tensor(seed, format!("{name}.bias"), &[o]));
}

/// The tensors the architecture reads, with the names and shapes its loader expects.
fn tensors_for(arch: &Architecture, window: usize, mut seed: u64) -> Vec<Tensor> {
    let s = &mut seed;
    let mut t = Vec::new();
    match arch {
        Architecture::Feedforward { hidden, .. } => {
            let mut sizes = vec![window * N_FEATURES];
            sizes.extend(hidden);
            sizes.push(1);
            for (k, p) in sizes.windows(2).enumerate() {
                linear(s, &mut t, &format!("layers.{k}"), p[1], p[0]);
            }
        }
        Architecture::Lstm { hidden, layers, .. } => {
            let h = *hidden;
            for k in 0..*layers {
                let inp = if k == 0 { N_FEATURES } else { h };
                t.push(f32_tensor(s, format!("lstm.weight_ih_l{k}"), &[4 * h, inp]));
                t.push(f32_tensor(s, format!("lstm.weight_hh_l{k}"), &[4 * h, h]));
                t.push(f32_tensor(s, format!("lstm.bias_ih_l{k}"), &[4 * h]));
                t.push(f32_tensor(s, format!("lstm.bias_hh_l{k}"), &[4 * h]));
            }
            linear(s, &mut t, "fc", 1, h);
        }
        Architecture::Transformer {
            d_model: d,
            layers,
            ff_dim: ff,
            ..
        } => {
            let d = *d;
            linear(s, &mut t, "input_proj", d, N_FEATURES);
            for k in 0..*layers {
                let p = format!("encoder.layers.{k}");
                let attn = format!("{p}.self_attn.in_proj");
                t.push(f32_tensor(s, format!("{attn}_weight"), &[3 * d, d]));
                t.push(f32_tensor(s, format!("{attn}_bias"), &[3 * d]));
                linear(s, &mut t, &format!("{p}.self_attn.out_proj"), d, d);
                linear(s, &mut t, &format!("{p}.linear1"), *ff, d);
                linear(s, &mut t, &format!("{p}.linear2"), d, *ff);
                for norm in ["norm1", "norm2"] {
                    t.push(f32_tensor(s, format!("{p}.{norm}.weight"), &[d]));
                    t.push(f32_tensor(s, format!("{p}.{norm}.bias"), &[d]));
                }
            }
            linear(s, &mut t, "fc", 1, d);
        }
        Architecture::Forest { trees, .. } => {
            // Each tree a stump: node 3k splits on some input, nodes 3k+1 and 3k+2 are leaves.
            let inputs = forest_input_len(window) as u64;
            let (mut feature, mut left, mut right) = (vec![], vec![], vec![]);
            for k in 0..*trees as i32 {
                feature.extend([((*s ^ k as u64).wrapping_mul(7919) % inputs) as i32, -1, -1]);
                left.extend([3 * k + 1, -1, -1]);
                right.extend([3 * k + 2, -1, -1]);
            }
            let roots = (0..*trees as i32).map(|k| 3 * k).collect();
            for (name, v) in [
                ("feature", feature),
                ("left", left),
                ("right", right),
                ("roots", roots),
            ] {
                t.push(Tensor {
                    name: format!("forest.{name}"),
                    shape: vec![v.len()],
                    f32s: vec![],
                    ints: Some(v),
                });
            }
            t.push(f32_tensor(s, "forest.threshold".into(), &[3 * trees]));
            let mut value = f32_tensor(s, "forest.value".into(), &[3 * trees]);
            value.f32s.iter_mut().for_each(|v| *v = v.abs());
            t.push(value);
        }
    }
    t
}

/// A valid model of any kind, sizes as small as zero included.
fn spec() -> impl Strategy<Value = Spec> {
    let arch = prop_oneof![
        (prop::collection::vec(0..5usize, 0..3)).prop_map(|hidden| Architecture::Feedforward {
            hidden,
            dropout: 0.1
        }),
        (0..5usize, 0..3usize).prop_map(|(hidden, layers)| Architecture::Lstm {
            hidden,
            layers,
            dropout: 0.0
        }),
        (1..3usize, 0..3usize, 0..3usize, 0..5usize).prop_map(|(heads, per_head, layers, ff)| {
            Architecture::Transformer {
                d_model: heads * per_head,
                heads,
                layers,
                ff_dim: ff,
                dropout: 0.0,
            }
        }),
        (1..4usize).prop_map(|trees| Architecture::Forest {
            trees,
            max_depth: 1,
            min_samples_leaf: 1,
            max_features: 1
        }),
    ];
    let norm = prop::collection::vec((-10.0..10.0f32, 0.0..5.0f32), N_FEATURES);
    (arch, 1..5usize, norm, -1.0..2.0f32, any::<u64>()).prop_map(
        |(architecture, window, norm, threshold, seed)| {
            let (mean, std) = norm.into_iter().unzip();
            let meta = ModelMeta {
                format: FORMAT.into(),
                features: FEATURES.iter().map(|f| f.to_string()).collect(),
                window,
                normalization: Normalization { mean, std },
                threshold,
                target: "seed".into(),
                data: vec![],
                metrics: Default::default(),
                training: json!({"seed": seed}),
                architecture,
            };
            Spec {
                tensors: tensors_for(&meta.architecture, window, seed),
                meta,
            }
        },
    )
}

fn safetensors_bytes(tensors: &[Tensor]) -> Vec<u8> {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|t| match &t.ints {
            Some(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            None => t.f32s.iter().flat_map(|x| x.to_le_bytes()).collect(),
        })
        .collect();
    let views = tensors.iter().zip(&bytes).map(|(t, b)| {
        let dtype = if t.ints.is_some() {
            Dtype::I32
        } else {
            Dtype::F32
        };
        (
            t.name.clone(),
            TensorView::new(dtype, t.shape.clone(), b).unwrap(),
        )
    });
    safetensors::serialize(views, None).unwrap()
}

fn tensor_map(tensors: &[Tensor]) -> TensorMap {
    let mut map = TensorMap::new();
    for t in tensors {
        match &t.ints {
            Some(v) => map.insert_i32(&t.name, t.shape.clone(), v.clone()),
            None => map.insert_f32(&t.name, t.shape.clone(), t.f32s.clone()),
        }
    }
    map
}

/// A model directory holding these two files; removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(json: &[u8], weights: &[u8]) -> Dir {
        let dir = temp_path("fuzz-model", "dir");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("model.json"), json).unwrap();
        std::fs::write(dir.join("model.safetensors"), weights).unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Loads the directory: no panic, and an error names one of its two files.
fn load(json: &[u8], weights: &[u8]) -> Result<Model, String> {
    let dir = Dir::new(json, weights);
    Model::load(&dir.0).map_err(|e| {
        let path = e.path.as_deref().expect("the error names a file");
        assert!(
            path == dir.0.join("model.json") || path == dir.0.join("model.safetensors"),
            "{e}"
        );
        assert!(!e.message.is_empty());
        file_name(path) + ": " + &e.message
    })
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Its output after a full window of `rows`: in [0, 1], or NaN only if `nan_ok`.
fn predict(model: &Model, rows: &[[f32; N_FEATURES]], nan_ok: bool) -> f32 {
    let mut p = model.predictor();
    let out = rows.iter().filter_map(|r| p.push(*r)).last();
    let y = out.expect("a full window gives an output");
    assert!(
        (0.0..=1.0).contains(&y) || (nan_ok && y.is_nan()),
        "output {y}"
    );
    y
}

/// JSON values to put where a model.json field was: wrong types, negative, huge, absurd sizes.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(
            &[
                0,
                1,
                2,
                3,
                4,
                10,
                10_000,
                10_001,
                1 << 31,
                1 << 62,
                u64::MAX / 3 + 1,
                u64::MAX
            ][..]
        )
        .prop_map(Value::from),
        prop::sample::select(&["lstm", "transformer", "feedforward", "forest", "", FORMAT][..])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 16, 10, |inner| {
        prop::collection::vec(inner, 0..11).prop_map(Value::from)
    })
}

#[derive(Clone, Debug)]
enum JsonMutation {
    /// Sets a top-level field (`at` picks which) to a value.
    Top(prop::sample::Index, Value),
    /// Sets a field of `architecture` (known names of every kind) to a value.
    Arch(&'static str, Value),
    Remove(prop::sample::Index),
    Truncate(prop::sample::Index),
}

const ARCH_FIELDS: &[&str] = &[
    "kind",
    "hidden",
    "layers",
    "dropout",
    "d_model",
    "heads",
    "ff_dim",
    "trees",
    "max_depth",
    "min_samples_leaf",
    "max_features",
];

fn json_mutation() -> impl Strategy<Value = JsonMutation> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        (index(), json_value()).prop_map(|(i, v)| JsonMutation::Top(i, v)),
        (prop::sample::select(ARCH_FIELDS), json_value())
            .prop_map(|(f, v)| JsonMutation::Arch(f, v)),
        index().prop_map(JsonMutation::Remove),
        index().prop_map(JsonMutation::Truncate),
    ]
}

fn mutate_json(meta: &ModelMeta, mutations: &[JsonMutation]) -> Vec<u8> {
    let mut v = serde_json::to_value(meta).unwrap();
    let mut cut = None;
    for m in mutations {
        let obj = v.as_object_mut().unwrap();
        let keys: Vec<String> = obj.keys().cloned().collect();
        match m {
            JsonMutation::Top(i, value) if !keys.is_empty() => {
                obj.insert(i.get(&keys).clone(), value.clone());
            }
            JsonMutation::Arch(field, value) => {
                if let Some(Value::Object(arch)) = obj.get_mut("architecture") {
                    arch.insert(field.to_string(), value.clone());
                }
            }
            JsonMutation::Remove(i) if !keys.is_empty() => {
                obj.remove(i.get(&keys));
            }
            JsonMutation::Truncate(i) => cut = Some(*i),
            _ => {}
        }
    }
    let mut text = serde_json::to_vec(&v).unwrap();
    if let Some(i) = cut {
        text.truncate(i.index(text.len()));
    }
    text
}

#[derive(Clone, Debug)]
enum WeightsMutation {
    Truncate(prop::sample::Index),
    /// Overwrites one byte (the first 8 are the header's length).
    Byte(prop::sample::Index, u8),
    HeaderLength(u64),
    Insert(prop::sample::Index, Vec<u8>),
}

fn weights_mutation() -> impl Strategy<Value = WeightsMutation> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        index().prop_map(WeightsMutation::Truncate),
        (index(), any::<u8>()).prop_map(|(i, b)| WeightsMutation::Byte(i, b)),
        any::<u64>().prop_map(WeightsMutation::HeaderLength),
        (index(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| WeightsMutation::Insert(i, b)),
    ]
}

fn mutate_weights(bytes: &mut Vec<u8>, m: &WeightsMutation) {
    match m {
        WeightsMutation::Truncate(i) => bytes.truncate(i.index(bytes.len() + 1)),
        WeightsMutation::Byte(i, b) if !bytes.is_empty() => *i.get_mut(bytes) = *b,
        WeightsMutation::HeaderLength(n) if bytes.len() >= 8 => {
            bytes[..8].copy_from_slice(&n.to_le_bytes())
        }
        WeightsMutation::Insert(i, b) => {
            let at = i.index(bytes.len() + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        _ => {}
    }
}

fn rows() -> impl Strategy<Value = Vec<[f32; N_FEATURES]>> {
    prop::collection::vec(prop::array::uniform10(-1e3..1e3f32), 4)
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn valid_models_round_trip(spec in spec(), rows in rows()) {
        let json = serde_json::to_vec(&spec.meta).unwrap();
        let model = load(&json, &safetensors_bytes(&spec.tensors)).unwrap();
        prop_assert_eq!(&model.meta, &spec.meta);
        let rows = &rows[..spec.meta.window];
        // The files give the model the trainer's in-memory weights give.
        let built = Model::from_parts(spec.meta.clone(), &tensor_map(&spec.tensors)).unwrap();
        let (a, b) = (predict(&model, rows, false), predict(&built, rows, false));
        prop_assert_eq!(a.to_bits(), b.to_bits());
    }

    #[test]
    fn mutated_model_json_is_refused_not_panicked_on(
        spec in spec(),
        mutations in prop::collection::vec(json_mutation(), 1..4),
        rows in rows(),
    ) {
        let json = mutate_json(&spec.meta, &mutations);
        // Predicting over a long window (up to 10,000) is slow in debug builds; loading is the test.
        let model = load(&json, &safetensors_bytes(&spec.tensors)).ok();
        if let Some(model) = model.filter(|m| m.window() <= 64) {
            let window = model.window();
            let rows: Vec<_> = rows.iter().cycle().take(window).copied().collect();
            predict(&model, &rows, true);
        }
    }

    #[test]
    fn damaged_weights_are_refused_not_panicked_on(
        spec in spec(),
        mutations in prop::collection::vec(weights_mutation(), 1..4),
        random in prop::option::weighted(0.2, prop::collection::vec(any::<u8>(), 0..64)),
        rows in rows(),
    ) {
        let mut bytes = safetensors_bytes(&spec.tensors);
        for m in &mutations {
            mutate_weights(&mut bytes, m);
        }
        let bytes = random.unwrap_or(bytes);
        match load(&serde_json::to_vec(&spec.meta).unwrap(), &bytes) {
            // A changed weight is still a model. Loading checks weights are finite, not small: one
            // near f32::MAX overflows to NaN (which the seed policy reads as "do not collect").
            Ok(model) => {
                predict(&model, &rows[..spec.meta.window], true);
            }
            Err(e) => prop_assert!(e.starts_with("model.safetensors: "), "{}", e),
        }
    }
}

/// A valid model's files with `architecture` replaced by `arch` (its weights unchanged).
fn with_architecture(arch: Value) -> (Vec<u8>, Vec<u8>) {
    let lstm = Architecture::Lstm {
        hidden: 1,
        layers: 1,
        dropout: 0.0,
    };
    with_architecture_over(&lstm, arch)
}

/// A valid `built` model's files with `architecture` replaced by `arch`.
fn with_architecture_over(built: &Architecture, arch: Value) -> (Vec<u8>, Vec<u8>) {
    let meta = ModelMeta {
        format: FORMAT.into(),
        architecture: built.clone(),
        features: FEATURES.iter().map(|f| f.to_string()).collect(),
        window: 1,
        normalization: Normalization {
            mean: vec![0.0; N_FEATURES],
            std: vec![1.0; N_FEATURES],
        },
        threshold: 0.5,
        target: "seed".into(),
        data: vec![],
        metrics: Default::default(),
        training: Value::Null,
    };
    let weights = safetensors_bytes(&tensors_for(&meta.architecture, 1, 7));
    let mut json = serde_json::to_value(&meta).unwrap();
    json["architecture"] = arch;
    (serde_json::to_vec(&json).unwrap(), weights)
}

/// Found by `mutated_model_json_is_refused_not_panicked_on`: `Vec::with_capacity(layers)` with
/// model.json's count aborted the process (a failed allocation cannot be caught).
#[test]
fn regression_a_huge_layer_count_is_an_error_not_an_abort() {
    for kind in [
        json!({"kind": "lstm", "hidden": 1, "layers": 1u64 << 40, "dropout": 0.0}),
        json!({"kind": "transformer", "d_model": 2, "heads": 1, "layers": 1u64 << 40,
               "ff_dim": 1, "dropout": 0.0}),
    ] {
        let (json, weights) = with_architecture(kind);
        let e = load(&json, &weights).unwrap_err();
        assert!(e.starts_with("model.safetensors: tensor"), "{e}");
    }
}

/// Found by `mutated_model_json_is_refused_not_panicked_on` (a bare clone's `make test` ran it
/// for over 13 minutes): every head count divides a `d_model` of 0, and a forward pass looped
/// over all 2^40 heads. Now it loads and predicts as one head.
#[test]
fn regression_a_huge_head_count_over_no_dimensions_predicts_at_once() {
    let built = Architecture::Transformer {
        d_model: 0,
        heads: 1,
        layers: 1,
        ff_dim: 1,
        dropout: 0.0,
    };
    let huge = json!({"kind": "transformer", "d_model": 0, "heads": 1u64 << 40, "layers": 1,
                      "ff_dim": 1, "dropout": 0.0});
    let (json, weights) = with_architecture_over(&built, huge);
    let model = load(&json, &weights).unwrap();
    let (json, weights) = with_architecture_over(&built, serde_json::to_value(&built).unwrap());
    let one = load(&json, &weights).unwrap();
    let rows = [[0.5; N_FEATURES]];
    let started = std::time::Instant::now();
    let y = predict(&model, &rows, false);
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert_eq!(y.to_bits(), predict(&one, &rows, false).to_bits());
}

/// Found by `mutated_model_json_is_refused_not_panicked_on`: `4 * hidden` and `3 * d_model`
/// overflowed (a panic in debug builds); now model.json is refused, naming the size.
#[test]
fn regression_an_overflowing_size_is_refused_in_model_json() {
    let huge = u64::MAX / 3 + 1;
    for (kind, expected) in [
        (
            json!({"kind": "lstm", "hidden": huge, "layers": 1, "dropout": 0.0}),
            format!("lstm size {huge} is too large"),
        ),
        (
            json!({"kind": "transformer", "d_model": huge, "heads": 1, "layers": 1,
                   "ff_dim": 1, "dropout": 0.0}),
            format!("transformer size {huge} is too large"),
        ),
    ] {
        let (json, weights) = with_architecture(kind);
        let e = load(&json, &weights).unwrap_err();
        assert_eq!(e, format!("model.json: {expected}"));
    }
}
