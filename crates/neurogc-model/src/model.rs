//! Loading a model directory, validating it, and predicting.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};

use crate::features::{FeatureVector, FEATURES, N_FEATURES};
use crate::forest::{forest_inputs, Forest};
use crate::meta::{Architecture, ModelMeta, FORMAT};
use crate::nets::{Feedforward, Lstm, Transformer};
use crate::{META_FILE, WEIGHTS_FILE};

/// Why a model directory cannot be used. Always names the file and what is wrong with it.
#[derive(Debug)]
pub struct ModelError {
    pub path: Option<PathBuf>,
    pub message: String,
}

impl ModelError {
    pub(crate) fn meta(message: String) -> ModelError {
        ModelError {
            path: None,
            message,
        }
    }
    pub(crate) fn at(path: &Path, message: impl Into<String>) -> ModelError {
        ModelError {
            path: Some(path.to_path_buf()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ModelError {}

/// The weights of one model by name, checked for shape and finiteness as they are taken.
pub struct TensorMap {
    f32s: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
    i32s: BTreeMap<String, (Vec<usize>, Vec<i32>)>,
    taken: std::cell::RefCell<BTreeSet<String>>,
}

impl TensorMap {
    pub fn new() -> TensorMap {
        TensorMap {
            f32s: BTreeMap::new(),
            i32s: BTreeMap::new(),
            taken: Default::default(),
        }
    }

    pub fn insert_f32(&mut self, name: &str, shape: Vec<usize>, data: Vec<f32>) {
        self.f32s.insert(name.to_string(), (shape, data));
    }

    pub fn insert_i32(&mut self, name: &str, shape: Vec<usize>, data: Vec<i32>) {
        self.i32s.insert(name.to_string(), (shape, data));
    }

    /// Parses a safetensors file (F32 and I32 tensors only).
    pub fn from_safetensors(bytes: &[u8]) -> Result<TensorMap, String> {
        let st =
            SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
        let mut map = TensorMap::new();
        for (name, view) in st.tensors() {
            let shape = view.shape().to_vec();
            let data = view.data();
            match view.dtype() {
                Dtype::F32 => map.insert_f32(
                    &name,
                    shape,
                    data.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                ),
                Dtype::I32 => map.insert_i32(
                    &name,
                    shape,
                    data.chunks_exact(4)
                        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                ),
                other => {
                    return Err(format!(
                        "tensor {name:?} has dtype {other:?}; expected F32 or I32"
                    ))
                }
            }
        }
        Ok(map)
    }

    /// The f32 tensor `name`, which must have `shape` and only finite values.
    pub fn f32(&self, name: &str, shape: &[usize]) -> Result<&[f32], ModelError> {
        let data = self.f32_any(name)?;
        let (got, _) = &self.f32s[name];
        if got != shape {
            return Err(ModelError::meta(format!(
                "tensor {name:?} has shape {got:?}, expected {shape:?} (wrong model shape for its model.json)"
            )));
        }
        Ok(data)
    }

    /// The f32 tensor `name` of any shape, finite values only.
    pub fn f32_any(&self, name: &str) -> Result<&[f32], ModelError> {
        let (_, data) = self
            .f32s
            .get(name)
            .ok_or_else(|| ModelError::meta(format!("tensor {name:?} is missing")))?;
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::meta(format!(
                "tensor {name:?} holds a non-finite value ({}) at index {i}",
                data[i]
            )));
        }
        self.taken.borrow_mut().insert(name.to_string());
        Ok(data)
    }

    pub fn i32(&self, name: &str) -> Result<&[i32], ModelError> {
        let (_, data) = self
            .i32s
            .get(name)
            .ok_or_else(|| ModelError::meta(format!("tensor {name:?} is missing (or not I32)")))?;
        self.taken.borrow_mut().insert(name.to_string());
        Ok(data)
    }

    /// Fails if the file holds tensors the architecture did not use: a sign of a mismatched file.
    pub fn expect_no_extra(&self, kind: &str) -> Result<(), ModelError> {
        let taken = self.taken.borrow();
        let extra: Vec<&String> = self
            .f32s
            .keys()
            .chain(self.i32s.keys())
            .filter(|n| !taken.contains(*n))
            .collect();
        if extra.is_empty() {
            Ok(())
        } else {
            Err(ModelError::meta(format!(
                "unexpected tensors for a {kind} model: {extra:?}"
            )))
        }
    }
}

impl Default for TensorMap {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Clone, Debug)]
enum Net {
    Lstm(Lstm),
    Transformer(Transformer),
    Feedforward(Feedforward),
    Forest(Forest),
}

/// A loaded, validated model.
#[derive(Clone, Debug)]
pub struct Model {
    pub meta: ModelMeta,
    net: Net,
}

impl Model {
    /// Loads `dir/model.json` and `dir/model.safetensors`; an error names the file that is wrong.
    pub fn load(dir: &Path) -> Result<Model, ModelError> {
        let files = ModelFiles::open(dir)?;
        let (text, meta_path, weights_path) = (&files.text, &files.meta_path, &files.weights_path);
        let meta: ModelMeta = serde_json::from_str(text).map_err(|e| {
            let scheduler = serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
                v.get("format").and_then(|f| f.as_str()) == Some(crate::scheduler::SCHEDULER_FORMAT)
            });
            ModelError::at(
                meta_path,
                if scheduler {
                    "a scheduler model (for the policy neurogc:DIR), not one of the seed's kind"
                        .to_string()
                } else {
                    format!("not a valid model description: {e}")
                },
            )
        })?;
        check_meta(&meta).map_err(|e| ModelError::at(meta_path, e.message))?;
        let tensors = files.tensors()?;
        let net = load_net(&meta, &tensors).map_err(|e| ModelError::at(weights_path, e.message))?;
        Ok(Model { meta, net })
    }

    /// Builds a model from its description and weights (used by the trainer and the importer).
    pub fn from_parts(meta: ModelMeta, t: &TensorMap) -> Result<Model, ModelError> {
        check_meta(&meta)?;
        let net = load_net(&meta, t)?;
        Ok(Model { meta, net })
    }

    pub fn window(&self) -> usize {
        self.meta.window
    }

    /// A predictor with its own window and scratch memory: no allocation per decision.
    pub fn predictor(&self) -> Predictor {
        let w = self.window();
        let scratch = match &self.net {
            Net::Lstm(m) => m.scratch(w),
            Net::Transformer(m) => m.scratch(w),
            Net::Feedforward(m) => m.scratch(),
            Net::Forest(_) => Vec::with_capacity(forest_input_len(w)),
        };
        Predictor {
            model: self.clone(),
            window: std::collections::VecDeque::with_capacity(w),
            flat: vec![0.0; w * N_FEATURES],
            scratch,
        }
    }

    /// Output for one window of normalised rows (oldest first); `window.len()` must be `self.window()`.
    pub fn predict_normalized(
        &self,
        window: &[FeatureVector],
        scratch: &mut Vec<f32>,
        flat: &mut [f32],
    ) -> f32 {
        let w = self.window();
        assert_eq!(window.len(), w, "window length");
        if let Net::Forest(forest) = &self.net {
            forest_inputs(window, scratch);
            return forest.predict(scratch);
        }
        for (t, row) in window.iter().enumerate() {
            flat[t * N_FEATURES..(t + 1) * N_FEATURES].copy_from_slice(row);
        }
        match &self.net {
            Net::Lstm(m) => m.forward(flat, w, scratch),
            Net::Transformer(m) => m.forward(flat, w, scratch),
            Net::Feedforward(m) => m.forward(flat, scratch),
            Net::Forest(_) => unreachable!("handled above"),
        }
    }
}

/// What `model.json` must hold, whatever the weights.
fn check_meta(meta: &ModelMeta) -> Result<(), ModelError> {
    if meta.format != FORMAT {
        return Err(ModelError::meta(format!(
            "format {:?} is not {FORMAT:?}",
            meta.format
        )));
    }
    if meta.features != FEATURES {
        return Err(ModelError::meta(format!(
            "features {:?} differ from {FEATURES:?}",
            meta.features
        )));
    }
    let n = &meta.normalization;
    if n.mean.len() != N_FEATURES
        || n.std.len() != N_FEATURES
        || n.mean.iter().chain(&n.std).any(|v| !v.is_finite())
    {
        return Err(ModelError::meta(
            "normalization must hold 10 finite means and stds".into(),
        ));
    }
    if meta.window == 0 || meta.window > MAX_WINDOW {
        return Err(ModelError::meta(format!(
            "window {} is out of range",
            meta.window
        )));
    }
    if !meta.threshold.is_finite() {
        return Err(ModelError::meta("threshold is not finite".into()));
    }
    // The loaders compute tensor shapes from these: an overflow there panicked.
    let (size, fits) = match meta.architecture {
        Architecture::Lstm { hidden, .. } => (hidden, hidden.checked_mul(4).is_some()),
        Architecture::Transformer { d_model, .. } => (d_model, d_model.checked_mul(3).is_some()),
        _ => (0, true),
    };
    if !fits {
        return Err(ModelError::meta(format!(
            "{} size {size} is too large",
            meta.architecture.name()
        )));
    }
    Ok(())
}

/// The network `meta` describes, from its weights.
fn load_net(meta: &ModelMeta, t: &TensorMap) -> Result<Net, ModelError> {
    let w = meta.window;
    Ok(match &meta.architecture {
        Architecture::Lstm { hidden, layers, .. } => {
            Net::Lstm(Lstm::load(t, N_FEATURES, *hidden, *layers)?)
        }
        Architecture::Transformer {
            d_model,
            heads,
            layers,
            ff_dim,
            ..
        } => Net::Transformer(Transformer::load(
            t, N_FEATURES, w, *d_model, *heads, *layers, *ff_dim,
        )?),
        Architecture::Feedforward { hidden, .. } => {
            Net::Feedforward(Feedforward::load(t, w * N_FEATURES, hidden)?)
        }
        Architecture::Forest { .. } => Net::Forest(Forest::load(t, forest_input_len(w))?),
    })
}

/// A model directory's two files: `model.json`'s text, read, and where the weights are. Every
/// kind of model loads through it, so each error names the file that is wrong alike.
pub(crate) struct ModelFiles {
    pub meta_path: PathBuf,
    pub weights_path: PathBuf,
    pub text: String,
}

impl ModelFiles {
    pub(crate) fn open(dir: &Path) -> Result<ModelFiles, ModelError> {
        if !dir.is_dir() {
            return Err(ModelError::at(dir, "model directory not found"));
        }
        let meta_path = dir.join(META_FILE);
        let text = String::from_utf8(read_regular(&meta_path)?)
            .map_err(|e| ModelError::at(&meta_path, format!("cannot read: {e}")))?;
        Ok(ModelFiles {
            weights_path: dir.join(WEIGHTS_FILE),
            meta_path,
            text,
        })
    }

    /// The weights, parsed.
    pub(crate) fn tensors(&self) -> Result<TensorMap, ModelError> {
        let bytes = read_regular(&self.weights_path)?;
        TensorMap::from_safetensors(&bytes).map_err(|e| ModelError::at(&self.weights_path, e))
    }
}

/// Reads a file that must be a regular one: opening a FIFO would block the agent forever.
fn read_regular(path: &Path) -> Result<Vec<u8>, ModelError> {
    let err = |e: std::io::Error| ModelError::at(path, format!("cannot read: {e}"));
    let kind = std::fs::metadata(path).map_err(err)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            "a FIFO, socket or device"
        };
        return Err(ModelError::at(path, format!("not a regular file ({what})")));
    }
    std::fs::read(path).map_err(err)
}

/// The longest window a model may have.
pub const MAX_WINDOW: usize = 10_000;

/// Length of the forest's input vector for a window of `w` samples.
pub fn forest_input_len(w: usize) -> usize {
    w * N_FEATURES + N_FEATURES * crate::features::WINDOW_STATS.len()
}

/// Feeds samples one at a time, as the seed's NeuroGC did each interval.
pub struct Predictor {
    model: Model,
    window: std::collections::VecDeque<FeatureVector>,
    flat: Vec<f32>,
    scratch: Vec<f32>,
}

impl Predictor {
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Appends one raw sample; returns the output once the window is full.
    pub fn push(&mut self, raw: FeatureVector) -> Option<f32> {
        let mut x = raw;
        self.model.meta.normalization.apply(&mut x);
        if self.window.len() == self.model.window() {
            self.window.pop_front();
        }
        self.window.push_back(x);
        if self.window.len() < self.model.window() {
            return None;
        }
        let rows: &[FeatureVector] = self.window.make_contiguous();
        Some(
            self.model
                .predict_normalized(rows, &mut self.scratch, &mut self.flat),
        )
    }
}
