//! `model.json`: what a model is, what it was trained on, and how to feed it.

use serde::{Deserialize, Serialize};

use crate::features::N_FEATURES;

pub const FORMAT: &str = "neurogc-model/1";

/// The network and its hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Architecture {
    /// `nn.LSTM(input, hidden, layers, batch_first=True, dropout)`, last step → Linear → sigmoid.
    Lstm {
        hidden: usize,
        layers: usize,
        dropout: f32,
    },
    /// Linear(input → d_model) + sinusoidal positions, post-norm `nn.TransformerEncoderLayer`s
    /// (ReLU), last position → Linear → sigmoid.
    Transformer {
        d_model: usize,
        heads: usize,
        layers: usize,
        ff_dim: usize,
        dropout: f32,
    },
    /// The window flattened (time-major) → Linear/ReLU stack → Linear → sigmoid.
    Feedforward { hidden: Vec<usize>, dropout: f32 },
    /// Regression trees averaged, over the window flattened plus per-feature window statistics.
    Forest {
        trees: usize,
        max_depth: usize,
        min_samples_leaf: usize,
        max_features: usize,
    },
}

impl Architecture {
    pub fn name(&self) -> &'static str {
        match self {
            Architecture::Lstm { .. } => "lstm",
            Architecture::Transformer { .. } => "transformer",
            Architecture::Feedforward { .. } => "feedforward",
            Architecture::Forest { .. } => "forest",
        }
    }
}

/// z-score statistics of the training part of the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalization {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl Normalization {
    /// Mean and sample standard deviation (ddof 1, as numpy and torch users compute it) of each
    /// feature over `rows`. NaN marks an unmeasured value and is left out.
    pub fn fit<'a>(rows: impl IntoIterator<Item = &'a [f32; N_FEATURES]>) -> Normalization {
        let mut sum = [0f64; N_FEATURES];
        let mut sq = [0f64; N_FEATURES];
        let mut n = [0f64; N_FEATURES];
        for row in rows {
            for f in 0..N_FEATURES {
                if !row[f].is_nan() {
                    sum[f] += f64::from(row[f]);
                    sq[f] += f64::from(row[f]).powi(2);
                    n[f] += 1.0;
                }
            }
        }
        let mut mean = vec![0f32; N_FEATURES];
        let mut std = vec![0f32; N_FEATURES];
        for f in 0..N_FEATURES {
            if n[f] > 0.0 {
                let m = sum[f] / n[f];
                let var = (sq[f] / n[f] - m * m).max(0.0);
                mean[f] = m as f32;
                std[f] = (var * n[f] / (n[f] - 1.0).max(1.0)).sqrt() as f32;
            }
        }
        Normalization { mean, std }
    }

    /// Normalises one feature vector in place. A constant feature (std 0) maps to 0, and so
    /// does an unmeasured one (NaN): the training mean, the least informative value.
    pub fn apply(&self, x: &mut [f32; N_FEATURES]) {
        for ((v, m), s) in x.iter_mut().zip(&self.mean).zip(&self.std) {
            *v = if *s > 0.0 && !v.is_nan() {
                (*v - m) / s
            } else {
                0.0
            };
        }
    }
}

/// One training data file, for provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataSource {
    pub path: String,
    pub sha256: String,
    pub rows: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub train_loss: Option<f64>,
    pub val_loss: Option<f64>,
    pub val_precision: Option<f64>,
    pub val_recall: Option<f64>,
    /// Share of validation windows whose target exceeds the threshold.
    pub val_positive_rate: Option<f64>,
    pub epochs: Option<usize>,
    /// Median wall time of one training epoch.
    #[serde(default)]
    pub epoch_seconds_median: Option<f64>,
    pub seconds: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    pub format: String,
    pub architecture: Architecture,
    /// Feature names in input order.
    pub features: Vec<String>,
    /// Samples per input window.
    pub window: usize,
    pub normalization: Normalization,
    /// Trigger threshold on the output.
    pub threshold: f32,
    /// How training targets were made (`seed`, ...).
    pub target: String,
    #[serde(default)]
    pub data: Vec<DataSource>,
    #[serde(default)]
    pub metrics: Metrics,
    /// Training settings (optimiser, epochs, seed...), free-form.
    #[serde(default)]
    pub training: serde_json::Value,
}
