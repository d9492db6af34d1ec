//! NeuroGC's model files and their inference, small enough to live inside the agent.
//!
//! A model directory holds `model.json` ([`meta::ModelMeta`]: kind, hyper-parameters, feature
//! order, normalisation, threshold, provenance) and `model.safetensors` (weights under PyTorch's
//! parameter names, so a reader can check them against the seed's PyTorch code line by line).
//!
//! Inference is hand-written f32 code: no training framework, no allocation per decision, and
//! matrix-vector products laid out so the compiler vectorises them (AVX2+FMA chosen at run time).
//! Framework per-op overhead would dominate models this small. The training crate checks these
//! forward passes against candle's to 1e-5.

pub mod features;
pub mod forest;
pub mod linalg;
pub mod meta;
pub mod model;
pub mod nets;
pub mod scheduler;

pub use features::{FeatureVector, FEATURES, N_FEATURES};
pub use meta::{Architecture, ModelMeta, Normalization};
pub use model::{Model, ModelError, Predictor};
pub use scheduler::{SchedulerMeta, SchedulerModel};

/// File names inside a model directory.
pub const META_FILE: &str = "model.json";
pub const WEIGHTS_FILE: &str = "model.safetensors";
