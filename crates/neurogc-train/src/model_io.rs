//! Writing model directories atomically: each file goes to a temporary name and is renamed into
//! place, weights first and `model.json` last, so a reader never sees a half-written model.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use neurogc_model::forest::Forest;
use neurogc_model::model::TensorMap;
use neurogc_model::{ModelMeta, META_FILE, WEIGHTS_FILE};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// A tensor to save, by PyTorch name.
pub enum Saved {
    F32(Vec<usize>, Vec<f32>),
    I32(Vec<usize>, Vec<i32>),
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} into place", path.display()))
}

pub fn save(dir: &Path, meta: &ModelMeta, tensors: &[(String, Saved)]) -> Result<()> {
    save_json(dir, meta, tensors)
}

/// [`save`] for any description (the scheduler's model has its own `model.json`).
pub fn save_json(
    dir: &Path,
    meta: &impl serde::Serialize,
    tensors: &[(String, Saved)],
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let bytes: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, t)| match t {
            Saved::F32(shape, v) => (
                name.clone(),
                Dtype::F32,
                shape.clone(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            Saved::I32(shape, v) => (
                name.clone(),
                Dtype::I32,
                shape.clone(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        })
        .collect();
    let views: Vec<(String, TensorView)> = bytes
        .iter()
        .map(|(name, dtype, shape, data)| {
            Ok((name.clone(), TensorView::new(*dtype, shape.clone(), data)?))
        })
        .collect::<Result<_, safetensors::SafeTensorError>>()?;
    let serialized = safetensors::serialize(views, None)?;
    write_atomically(&dir.join(WEIGHTS_FILE), &serialized)?;
    let json = serde_json::to_string_pretty(meta)?;
    write_atomically(&dir.join(META_FILE), json.as_bytes())
}

/// The same tensors as the agent will see them, for the parity check before saving.
pub fn tensor_map(tensors: &[(String, Saved)]) -> TensorMap {
    let mut map = TensorMap::new();
    for (name, t) in tensors {
        match t {
            Saved::F32(shape, v) => map.insert_f32(name, shape.clone(), v.clone()),
            Saved::I32(shape, v) => map.insert_i32(name, shape.clone(), v.clone()),
        }
    }
    map
}

pub fn forest_tensors(forest: &Forest) -> Vec<(String, Saved)> {
    let i = |name: &str, v: &Vec<i32>| {
        (
            format!("forest.{name}"),
            Saved::I32(vec![v.len()], v.clone()),
        )
    };
    let f = |name: &str, v: &Vec<f32>| {
        (
            format!("forest.{name}"),
            Saved::F32(vec![v.len()], v.clone()),
        )
    };
    vec![
        i("feature", &forest.feature),
        f("threshold", &forest.threshold),
        i("left", &forest.left),
        i("right", &forest.right),
        f("value", &forest.value),
        i("roots", &forest.roots),
    ]
}
