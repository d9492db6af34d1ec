//! The training run: prepare data, fit, check the agent's inference against the fitted model,
//! save.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarMap};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neurogc_model::forest::forest_inputs;
use neurogc_model::meta::{DataSource, Metrics, FORMAT};
use neurogc_model::model::{forest_input_len, MAX_WINDOW};
use neurogc_model::{Architecture, Model, ModelMeta, FEATURES, N_FEATURES};

use crate::dataset::Series;
use crate::forest::{self, ForestConfig};
use crate::model_io::{self, Saved};
use crate::nets::Net;
use crate::windows::{prepare, Examples, Labeller};
use neurogc_rng::Rng;

/// Largest difference tolerated between candle's outputs and the agent's inference.
pub const PARITY_TOLERANCE: f32 = 1e-5;

#[derive(Clone, Debug)]
pub struct TrainConfig {
    pub architecture: Architecture,
    pub window: usize,
    pub epochs: usize,
    pub batch: usize,
    pub lr: f64,
    pub seed: u64,
    pub val_fraction: f64,
    pub threshold: f32,
    pub out: PathBuf,
    pub quiet: bool,
}

/// Limits on the sizes train accepts: beyond them a model is nonsense for a per-interval decision,
/// and sizes multiply into allocations (the forest also grows its trees recursively).
pub const MAX_WIDTH: usize = 4096;
pub const MAX_LAYERS: usize = 32;
pub const MAX_TREES: usize = 10_000;
pub const MAX_DEPTH: usize = 64;

/// `flag` must be in `range`.
pub(crate) fn in_range(flag: &str, v: usize, range: std::ops::RangeInclusive<usize>) -> Result<()> {
    match (range.contains(&v), *range.end()) {
        (true, _) => Ok(()),
        (false, usize::MAX) => bail!("{flag} must be at least {}, got {v}", range.start()),
        (false, end) => bail!("{flag} must be from {} to {end}, got {v}", range.start()),
    }
}

/// `--window` alone: the forest's default `--max-features` is computed from it.
pub fn check_window(window: usize) -> Result<()> {
    in_range("--window", window, 1..=MAX_WINDOW)
}

impl TrainConfig {
    /// Refuses settings that would panic, fail inside candle or train nonsense, naming the flag
    /// and the value, before any data is read.
    pub fn check(&self) -> Result<()> {
        check_window(self.window)?;
        in_range("--epochs", self.epochs, 1..=usize::MAX)?;
        in_range("--batch", self.batch, 1..=usize::MAX)?;
        if !(self.lr.is_finite() && self.lr > 0.0) {
            bail!("--lr must be a positive number, got {}", self.lr);
        }
        if !(0.0..1.0).contains(&self.val_fraction) {
            bail!(
                "--val-fraction must be in [0, 1), got {}",
                self.val_fraction
            );
        }
        // The models' outputs are in [0, 1]: a threshold outside never or always fires.
        if !(0.0..=1.0).contains(&self.threshold) {
            bail!("--threshold must be from 0 to 1, got {}", self.threshold);
        }
        let dropout = match &self.architecture {
            Architecture::Lstm {
                hidden,
                layers,
                dropout,
            } => {
                in_range("--hidden", *hidden, 1..=MAX_WIDTH)?;
                in_range("--layers", *layers, 1..=MAX_LAYERS)?;
                *dropout
            }
            Architecture::Transformer {
                d_model,
                heads,
                layers,
                ff_dim,
                dropout,
            } => {
                in_range("--hidden", *d_model, 1..=MAX_WIDTH)?;
                in_range("--layers", *layers, 1..=MAX_LAYERS)?;
                in_range("--ff-dim", *ff_dim, 1..=MAX_WIDTH)?;
                if *heads == 0 || !d_model.is_multiple_of(*heads) {
                    bail!("--hidden (d_model) {d_model} must be divisible by --heads {heads}");
                }
                *dropout
            }
            Architecture::Feedforward { hidden, dropout } => {
                if hidden.len() > MAX_LAYERS {
                    bail!(
                        "--ff-hidden takes at most {MAX_LAYERS} sizes, got {}",
                        hidden.len()
                    );
                }
                for &h in hidden {
                    in_range("--ff-hidden", h, 1..=MAX_WIDTH)?;
                }
                *dropout
            }
            Architecture::Forest {
                trees,
                max_depth,
                min_samples_leaf,
                max_features,
            } => {
                in_range("--trees", *trees, 1..=MAX_TREES)?;
                in_range("--max-depth", *max_depth, 1..=MAX_DEPTH)?;
                in_range("--min-samples-leaf", *min_samples_leaf, 1..=usize::MAX)?;
                let inputs = forest_input_len(self.window);
                in_range("--max-features", *max_features, 1..=inputs)?;
                0.0
            }
        };
        if !(0.0..1.0).contains(&dropout) {
            bail!("--dropout must be in [0, 1), got {dropout}");
        }
        Ok(())
    }
}

pub struct TrainReport {
    pub meta: ModelMeta,
    /// Largest |candle − agent inference| over the validation windows.
    pub parity_max_abs_diff: f32,
    pub epoch_seconds: Vec<f64>,
    pub warnings: Vec<String>,
}

/// Precision and recall of `output > threshold` against `target > threshold`.
pub fn precision_recall(
    pred: &[f32],
    y: &[f32],
    threshold: f32,
) -> (Option<f64>, Option<f64>, f64) {
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    for (p, t) in pred.iter().zip(y) {
        match (*p > threshold, *t > threshold) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            _ => {}
        }
    }
    let precision = (tp + fp > 0).then(|| tp as f64 / (tp + fp) as f64);
    let recall = (tp + fneg > 0).then(|| tp as f64 / (tp + fneg) as f64);
    let positive_rate = if y.is_empty() {
        0.0
    } else {
        (tp + fneg) as f64 / y.len() as f64
    };
    (precision, recall, positive_rate)
}

fn mse(pred: &[f32], y: &[f32]) -> f64 {
    pred.iter()
        .zip(y)
        .map(|(p, t)| ((p - t) as f64).powi(2))
        .sum::<f64>()
        / y.len().max(1) as f64
}

pub(crate) fn progress(epochs: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(epochs as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] epoch {pos}/{len} {msg} ({elapsed}, eta {eta})",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar
}

pub fn train(
    series: &[Series],
    labeller: &dyn Labeller,
    config: &TrainConfig,
) -> Result<TrainReport> {
    config.check()?;
    let started = Instant::now();
    let data = prepare(series, config.window, config.val_fraction, labeller)
        .map_err(anyhow::Error::msg)?;
    // Whatever prepared the examples, nothing non-finite reaches the optimizer: a NaN target or
    // input trains NaN weights, a model that does not load.
    data.train
        .check_finite("training", labeller.name())
        .and_then(|()| data.val.check_finite("validation", labeller.name()))
        .map_err(anyhow::Error::msg)?;
    let mut warnings: Vec<String> = series.iter().flat_map(|s| s.warnings.clone()).collect();
    warnings.extend(data.warnings.iter().cloned());
    let above = data
        .train
        .y
        .iter()
        .filter(|y| **y > config.threshold)
        .count();
    // Under 5 % positives the fitted model sits below the threshold almost everywhere.
    if (above as f64) < 0.05 * data.train.len() as f64 {
        let max = data
            .train
            .y
            .iter()
            .cloned()
            .fold(f32::NEG_INFINITY, f32::max);
        warnings.push(format!(
            "only {above} of {} training targets exceed the threshold {} (the highest is {max:.3}): \
             a model fitted to this target will rarely if ever fire; consider a lower --threshold",
            data.train.len(),
            config.threshold
        ));
    }
    let mut rng = Rng::new(config.seed);
    let (tensors, train_pred, val_pred, epoch_seconds) = match &config.architecture {
        Architecture::Forest {
            trees,
            max_depth,
            min_samples_leaf,
            max_features,
        } => {
            let fc = ForestConfig {
                trees: *trees,
                max_depth: *max_depth,
                min_samples_leaf: *min_samples_leaf,
                max_features: *max_features,
            };
            fit_forest(&data.train, &data.val, fc, &mut rng, config.quiet)?
        }
        arch => fit_net(arch, &data.train, &data.val, config, &mut rng)?,
    };
    let (precision, recall, positive_rate) =
        precision_recall(&val_pred, &data.val.y, config.threshold);
    let meta = ModelMeta {
        format: FORMAT.to_string(),
        architecture: config.architecture.clone(),
        features: FEATURES.iter().map(|s| s.to_string()).collect(),
        window: config.window,
        normalization: data.normalization.clone(),
        threshold: config.threshold,
        target: labeller.name().to_string(),
        data: series
            .iter()
            .map(|s| DataSource {
                path: s.path.display().to_string(),
                sha256: s.sha256.clone(),
                rows: s.rows.len(),
            })
            .collect(),
        metrics: Metrics {
            train_loss: Some(mse(&train_pred, &data.train.y)),
            val_loss: (!data.val.is_empty()).then(|| mse(&val_pred, &data.val.y)),
            val_precision: precision,
            val_recall: recall,
            val_positive_rate: (!data.val.is_empty()).then_some(positive_rate),
            epochs: (!epoch_seconds.is_empty()).then_some(epoch_seconds.len()),
            epoch_seconds_median: neurogc_stats::median(&epoch_seconds).ok(),
            seconds: Some(started.elapsed().as_secs_f64()),
        },
        training: serde_json::json!({
            "optimizer": "adam (AdamW, weight_decay 0)",
            "lr": config.lr,
            "batch": config.batch,
            "epochs": config.epochs,
            "loss": "mse",
            "seed": config.seed,
            "val_fraction": config.val_fraction,
            "train_windows": data.train.len(),
            "val_windows": data.val.len(),
            "skipped_windows": data.skipped,
        }),
    };
    // The agent will run this model through its own inference: check it agrees with what was fitted.
    let model = Model::from_parts(meta.clone(), &model_io::tensor_map(&tensors))
        .map_err(|e| anyhow::anyhow!("the trained model does not load: {e}"))?;
    let (check, check_pred) = if data.val.is_empty() {
        (&data.train, &train_pred)
    } else {
        (&data.val, &val_pred)
    };
    let mut scratch = Vec::new();
    let mut flat = vec![0.0; config.window * N_FEATURES];
    let mut parity = 0f32;
    for (i, fitted) in check_pred.iter().enumerate() {
        let rows = check.window_rows(i);
        scratch.clear();
        scratch.resize(scratch_len(&model), 0.0);
        let ours = model.predict_normalized(&rows, &mut scratch, &mut flat);
        parity = parity.max((ours - fitted).abs());
    }
    if parity > PARITY_TOLERANCE {
        bail!("internal error: the agent's inference differs from the trained model by {parity:e} (> {PARITY_TOLERANCE:e})");
    }
    model_io::save(&config.out, &meta, &tensors)
        .with_context(|| format!("saving the model to {}", config.out.display()))?;
    Ok(TrainReport {
        meta,
        parity_max_abs_diff: parity,
        epoch_seconds,
        warnings,
    })
}

fn scratch_len(model: &Model) -> usize {
    // Generous and shape-agnostic: the predictor sizes its own; this is for one-off checks.
    let w = model.window();
    match &model.meta.architecture {
        Architecture::Lstm { hidden, .. } => 6 * hidden + 2 * w * hidden,
        Architecture::Transformer {
            d_model, ff_dim, ..
        } => 5 * w * d_model + w + d_model + ff_dim,
        Architecture::Feedforward { hidden, .. } => {
            2 * hidden.iter().copied().max().unwrap_or(1).max(1)
        }
        Architecture::Forest { .. } => forest_input_len(w),
    }
}

type Fitted = (Vec<(String, Saved)>, Vec<f32>, Vec<f32>, Vec<f64>);

fn batch_tensor(ex: &Examples, idx: &[usize]) -> Result<(Tensor, Tensor)> {
    let mut x = Vec::with_capacity(idx.len() * ex.window * N_FEATURES);
    let mut y = Vec::with_capacity(idx.len());
    for &i in idx {
        x.extend_from_slice(ex.x(i));
        y.push(ex.y[i]);
    }
    Ok((
        Tensor::from_vec(x, (idx.len(), ex.window, N_FEATURES), &Device::Cpu)?,
        Tensor::from_vec(y, idx.len(), &Device::Cpu)?,
    ))
}

fn predict_all(net: &Net, ex: &Examples) -> Result<Vec<f32>> {
    let mut out = Vec::with_capacity(ex.len());
    let idx: Vec<usize> = (0..ex.len()).collect();
    for chunk in idx.chunks(256) {
        let (x, _) = batch_tensor(ex, chunk)?;
        out.extend(net.forward(&x, None)?.to_vec1::<f32>()?);
    }
    Ok(out)
}

fn fit_net(
    arch: &Architecture,
    train: &Examples,
    val: &Examples,
    config: &TrainConfig,
    rng: &mut Rng,
) -> Result<Fitted> {
    let varmap = VarMap::new();
    let net = Net::new(arch, config.window, N_FEATURES, &varmap, rng)?;
    // Adam = AdamW without weight decay (candle's default decay is 0.01).
    let params = ParamsAdamW {
        lr: config.lr,
        weight_decay: 0.0,
        ..Default::default()
    };
    let mut opt = AdamW::new(varmap.all_vars(), params)?;
    let bar = progress(config.epochs, config.quiet);
    bar.set_prefix(arch.name());
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut epoch_seconds = Vec::with_capacity(config.epochs);
    for epoch in 1..=config.epochs {
        let t0 = Instant::now();
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for chunk in order.chunks(config.batch.max(1)) {
            let (x, y) = batch_tensor(train, chunk)?;
            let pred = net.forward(&x, Some(rng))?;
            let loss = (pred - y)?.sqr()?.mean_all()?;
            opt.backward_step(&loss)?;
            let batch_loss = loss.to_scalar::<f32>()?;
            if !batch_loss.is_finite() {
                bail!(
                    "training diverged in epoch {epoch}: the loss is {batch_loss}; nothing was \
                     saved (a lower --lr may help)"
                );
            }
            total += batch_loss as f64 * chunk.len() as f64;
        }
        epoch_seconds.push(t0.elapsed().as_secs_f64());
        let train_loss = total / train.len().max(1) as f64;
        let val_loss = if val.is_empty() {
            None
        } else {
            Some(mse(&predict_all(&net, val)?, &val.y))
        };
        let message = match val_loss {
            Some(v) => format!("train loss {train_loss:.5} val loss {v:.5}"),
            None => format!("train loss {train_loss:.5}"),
        };
        bar.set_message(message.clone());
        bar.set_position(epoch as u64);
        if bar.is_hidden() && !config.quiet {
            eprintln!("{} epoch {epoch}/{}: {message}", arch.name(), config.epochs);
        }
    }
    bar.finish();
    let tensors = export(&varmap)?;
    Ok((
        tensors,
        predict_all(&net, train)?,
        predict_all(&net, val)?,
        epoch_seconds,
    ))
}

pub(crate) fn export(varmap: &VarMap) -> Result<Vec<(String, Saved)>> {
    let data = varmap.data().lock().expect("varmap lock");
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let t = data[name].as_tensor();
            let shape = t.dims().to_vec();
            let values = t.flatten_all()?.to_vec1::<f32>()?;
            Ok((name.clone(), Saved::F32(shape, values)))
        })
        .collect()
}

fn forest_matrix(ex: &Examples) -> Vec<f32> {
    let mut x = Vec::with_capacity(ex.len() * forest_input_len(ex.window));
    let mut row = Vec::new();
    for i in 0..ex.len() {
        forest_inputs(&ex.window_rows(i), &mut row);
        x.extend_from_slice(&row);
    }
    x
}

fn fit_forest(
    train: &Examples,
    val: &Examples,
    config: ForestConfig,
    rng: &mut Rng,
    quiet: bool,
) -> Result<Fitted> {
    let p = forest_input_len(train.window);
    let bar = progress(1, quiet);
    bar.set_prefix("forest");
    bar.set_message(format!(
        "{} trees over {} windows × {p} inputs",
        config.trees,
        train.len()
    ));
    let t0 = Instant::now();
    let xt = forest_matrix(train);
    if let Some(j) = xt.iter().position(|v| !v.is_finite()) {
        bail!(
            "internal error: forest input {} of training window {} is {}, not a finite number",
            j % p,
            j / p + 1,
            xt[j]
        );
    }
    let forest = forest::train(&xt, &train.y, p, config, rng);
    bar.set_position(1);
    bar.finish();
    let predict = |x: &[f32]| {
        x.chunks_exact(p)
            .map(|row| forest.predict(row))
            .collect::<Vec<f32>>()
    };
    let train_pred = predict(&xt);
    let val_pred = predict(&forest_matrix(val));
    Ok((
        model_io::forest_tensors(&forest),
        train_pred,
        val_pred,
        vec![t0.elapsed().as_secs_f64()],
    ))
}
