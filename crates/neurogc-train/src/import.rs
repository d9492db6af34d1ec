//! `neurogc import-torch`: a state_dict trained by the seed's PyTorch code becomes a NeuroGC model.
//! The architecture and its sizes are read off the tensor names and shapes; normalisation comes
//! from the training CSVs (as the seed computed it) or is given explicitly.

use std::path::Path;

use anyhow::{bail, Context, Result};
use neurogc_model::meta::{Metrics, FORMAT};
use neurogc_model::{Architecture, Model, ModelMeta, Normalization, FEATURES, N_FEATURES};

use crate::model_io::{self, Saved};

/// Prefixes a wrapped model adds to its parameter names (`model.lstm...`, DataParallel's `module.`).
const STRIPPED_PREFIXES: [&str; 2] = ["module.", "model."];

/// A state_dict entry: name, shape, values (f32).
pub type NamedTensor = (String, Vec<usize>, Vec<f32>);

pub struct ImportOptions<'a> {
    pub key: Option<&'a str>,
    pub normalization: Normalization,
    pub threshold: f32,
    pub window: Option<usize>,
    pub dropout: f32,
}

pub fn read_state_dict(path: &Path, key: Option<&str>) -> Result<Vec<NamedTensor>> {
    let tensors = candle_core::pickle::read_all_with_key(path, key).with_context(|| {
        format!(
            "{}: not a PyTorch state_dict file (torch.save(model.state_dict()))",
            path.display()
        )
    })?;
    if tensors.is_empty() {
        bail!(
            "{}: no tensors found{}",
            path.display(),
            key.map(|k| format!(" under key {k:?}")).unwrap_or_default()
        );
    }
    tensors
        .into_iter()
        .map(|(name, t)| {
            let name = STRIPPED_PREFIXES.iter().fold(name, |n, p| {
                n.strip_prefix(p).map(str::to_string).unwrap_or(n)
            });
            let t = t.to_dtype(candle_core::DType::F32)?;
            Ok((name, t.dims().to_vec(), t.flatten_all()?.to_vec1::<f32>()?))
        })
        .collect()
}

/// Works out the architecture from names and shapes.
pub fn infer_architecture(
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    dropout: f32,
) -> Result<(Architecture, Option<usize>)> {
    let shape = |name: &str| {
        tensors
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, s, _)| s.clone())
    };
    let count = |prefix: &str, suffix: &str| {
        (0..)
            .take_while(|k| shape(&format!("{prefix}{k}{suffix}")).is_some())
            .count()
    };
    if let Some(s) = shape("lstm.weight_ih_l0") {
        if s[1] != N_FEATURES {
            bail!("lstm.weight_ih_l0 takes {} inputs; NeuroGC's models take the {N_FEATURES} seed features", s[1]);
        }
        return Ok((
            Architecture::Lstm {
                hidden: s[0] / 4,
                layers: count("lstm.weight_ih_l", ""),
                dropout,
            },
            None,
        ));
    }
    if let Some(s) = shape("encoder.layers.0.self_attn.in_proj_weight") {
        let d = s[1];
        let ff = shape("encoder.layers.0.linear1.weight")
            .context("missing encoder.layers.0.linear1.weight")?[0];
        // The head count is not in the weights; the seed's Transformer used 4.
        return Ok((
            Architecture::Transformer {
                d_model: d,
                heads: 4,
                layers: count("encoder.layers.", ".self_attn.in_proj_weight"),
                ff_dim: ff,
                dropout,
            },
            None,
        ));
    }
    if let Some(s) = shape("layers.0.weight") {
        let n = count("layers.", ".weight");
        let hidden: Vec<usize> = (0..n - 1)
            .map(|k| {
                shape(&format!("layers.{k}.weight"))
                    .map(|s| s[0])
                    .unwrap_or(0)
            })
            .collect();
        if s[1] % N_FEATURES != 0 {
            bail!(
                "layers.0.weight takes {} inputs, not a multiple of {N_FEATURES} features",
                s[1]
            );
        }
        return Ok((
            Architecture::Feedforward { hidden, dropout },
            Some(s[1] / N_FEATURES),
        ));
    }
    let names: Vec<&str> = tensors.iter().map(|(n, _, _)| n.as_str()).collect();
    bail!("cannot tell the architecture from these parameter names: {names:?} (expected lstm.*, encoder.layers.*, or layers.*)")
}

pub fn import(path: &Path, out: &Path, options: ImportOptions<'_>) -> Result<ModelMeta> {
    let tensors = read_state_dict(path, options.key)?;
    let (architecture, implied_window) = infer_architecture(&tensors, options.dropout)?;
    let window = options.window.or(implied_window).unwrap_or(10);
    let meta = ModelMeta {
        format: FORMAT.to_string(),
        architecture,
        features: FEATURES.iter().map(|s| s.to_string()).collect(),
        window,
        normalization: options.normalization,
        threshold: options.threshold,
        target: "seed".into(),
        data: vec![],
        metrics: Metrics::default(),
        training: serde_json::json!({ "imported_from": path.display().to_string() }),
    };
    let saved: Vec<(String, Saved)> = tensors
        .into_iter()
        .map(|(n, s, v)| (n, Saved::F32(s, v)))
        .collect();
    Model::from_parts(meta.clone(), &model_io::tensor_map(&saved))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    model_io::save(out, &meta, &saved)?;
    Ok(meta)
}
