//! The `neurogc` scheduler's model: what `neurogc train --model scheduler` learns from recorded
//! runs, and what the scheduler reads at start (`neurogc:MODEL_DIR`).
//!
//! Two parts, in the same two files as every model (`model.json`, `model.safetensors`):
//!
//! - **the quiet-window net**, a small LSTM over the most recent inter-arrival gaps: the chance
//!   that nothing arrives during a pause of a given length, having seen a given silence. It is
//!   trained on labels from hindsight (at past moments with nothing in flight, did a request
//!   arrive within the pause?), the same question the scheduler's empirical survival estimate
//!   answers online ([`quiet_inputs`] is the one definition of its inputs, for the trainer and
//!   the agent alike);
//! - **the service's priors** (`priors` in `model.json`): the pause of a full collection of the
//!   whole heap, the pause model of collections of what a freeze leaves, the objects a full
//!   collection frees per request, all fitted on the service's own collections. They stand in
//!   for the scheduler's built-in guesses until its own collections have taught it. A model
//!   trained on several services has none: they are one service's.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::{ModelError, ModelFiles, TensorMap};
use crate::nets::Lstm;

pub const SCHEDULER_FORMAT: &str = "neurogc-scheduler/1";

/// Inter-arrival gaps the quiet-window net reads, oldest first.
pub const QUIET_GAPS: usize = 16;
/// Inputs per step, each in units of the typical recent gap (the median of the last
/// [`TYPICAL_GAPS`]: a net trained at one rate reads another's traffic alike, and a stretch the
/// process was stopped or idle does not rescale them) and as `ln(1 + x)`: the gap, the silence so far, the pause asked
/// about; then the online survival estimate's answer (its logit), so the net learns what the
/// recent sequence adds to the gap histogram, not the histogram again. All but the gap are the
/// same at every step: the LSTM reads them beside each gap.
pub const QUIET_INPUTS: usize = 4;
pub const QUIET_INPUT_NAMES: [&str; QUIET_INPUTS] = [
    "ln1p_gap_per_mean_gap",
    "ln1p_silence_per_mean_gap",
    "ln1p_pause_per_mean_gap",
    "logit_survival",
];
/// The flattened input of one question.
pub type QuietInput = [f32; QUIET_GAPS * QUIET_INPUTS];

/// The logit of a probability, kept finite (a certain answer of the survival estimate is as
/// sure as the net's inputs can say).
fn logit(p: f64) -> f32 {
    let p = p.clamp(1e-4, 1.0 - 1e-4);
    (p / (1.0 - p)).ln() as f32
}

/// The net's raw inputs (before normalisation) for "nothing arrives in the next `pause_ns`",
/// asked at `now_ns` after `arrivals_ns` (ascending, on the same clock), where the online
/// survival estimate answers `survival`. `None` with fewer than `QUIET_GAPS + 1` arrivals: not
/// enough history to ask.
pub fn quiet_inputs(
    arrivals_ns: &[u64],
    now_ns: u64,
    pause_ns: u64,
    survival: f64,
) -> Option<QuietInput> {
    let n = arrivals_ns.len();
    if n < QUIET_GAPS + 1 {
        return None;
    }
    let last = arrivals_ns[n - 1];
    let typical = typical_gap(arrivals_ns);
    let rel = |ns: u64| (ns as f64 / typical).ln_1p() as f32;
    let silence = rel(now_ns.saturating_sub(last));
    let pause = rel(pause_ns);
    let recent = &arrivals_ns[n - QUIET_GAPS - 1..];
    let mut x = [0f32; QUIET_GAPS * QUIET_INPUTS];
    for (k, pair) in recent.windows(2).enumerate() {
        let row = &mut x[k * QUIET_INPUTS..(k + 1) * QUIET_INPUTS];
        row.copy_from_slice(&[
            rel(pair[1].saturating_sub(pair[0])),
            silence,
            pause,
            logit(survival),
        ]);
    }
    Some(x)
}

/// Gaps the unit of the inputs is the median of.
pub const TYPICAL_GAPS: usize = 64;

/// The median of the last [`TYPICAL_GAPS`] inter-arrival gaps (ns, at least 1).
fn typical_gap(arrivals_ns: &[u64]) -> f64 {
    let recent = &arrivals_ns[arrivals_ns.len().saturating_sub(TYPICAL_GAPS + 1)..];
    let mut gaps: Vec<u64> = recent
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    if gaps.is_empty() {
        return 1.0;
    }
    let mid = gaps.len() / 2;
    let (_, m, _) = gaps.select_nth_unstable(mid);
    (*m as f64).max(1.0)
}

/// A scale below this is a constant input: it maps to 0 (dividing by it made infinities).
pub const MIN_STD: f32 = 1e-6;

/// z-score statistics of the quiet-window inputs (one per input, over the training examples).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputScale {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl InputScale {
    /// Normalises one flattened input in place (a constant input maps to 0).
    pub fn apply(&self, x: &mut [f32]) {
        for (i, v) in x.iter_mut().enumerate() {
            let f = i % QUIET_INPUTS;
            *v = if self.std[f] > MIN_STD {
                (*v - self.mean[f]) / self.std[f]
            } else {
                0.0
            };
        }
    }
}

/// How the quiet-window net did on held-out moments, beside the online survival estimate the
/// scheduler uses without a model (both scored on the same examples).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QuietMetrics {
    pub train_examples: usize,
    pub val_examples: usize,
    /// Share of validation examples that were quiet.
    pub val_quiet_rate: Option<f64>,
    /// Mean squared error of the predicted chance (Brier score): the net's, the survival
    /// estimate's.
    pub val_brier: Option<f64>,
    pub val_brier_survival: Option<f64>,
    pub val_log_loss: Option<f64>,
    pub val_log_loss_survival: Option<f64>,
    /// At the scheduler's default bar (`quiet=0.9`): of the moments called quiet, the share
    /// that were (precision), and of the quiet moments, the share called so (recall).
    #[serde(default)]
    pub val_precision: Option<f64>,
    #[serde(default)]
    pub val_precision_survival: Option<f64>,
    #[serde(default)]
    pub val_recall: Option<f64>,
    #[serde(default)]
    pub val_recall_survival: Option<f64>,
    pub epochs: Option<usize>,
    pub seconds: Option<f64>,
}

/// The quiet-window net's description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuietMeta {
    pub hidden: usize,
    pub layers: usize,
    pub gaps: usize,
    pub inputs: Vec<String>,
    pub scale: InputScale,
    /// Whether the net did better than the online survival estimate on the held-out moments;
    /// where it did not, the scheduler keeps the estimate (the priors still apply).
    pub use_net: bool,
    #[serde(default)]
    pub metrics: QuietMetrics,
}

/// The service's own figures, fitted on its collections; each absent where the data did not
/// show it (and always on a model trained on several services).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Priors {
    /// Pause (ms) of a full collection of the whole heap: what the freeze and a re-freeze cost.
    pub full_pause_ms: Option<f64>,
    /// A collection of what a freeze leaves, after `w` requests, pauses `a + b·w` ms: `a`
    /// (the live part) from the middle generation's pauses, `b` from the full collections'
    /// growth with the requests since the one before.
    pub unfrozen_a_ms: Option<f64>,
    pub unfrozen_b_ms: Option<f64>,
    /// Objects a full collection frees per request served since the one before (the garbage
    /// that reaches the old generation).
    pub freed_per_request: Option<f64>,
    /// Full collections the priors were fitted on.
    #[serde(default)]
    pub collections: usize,
}

impl Priors {
    /// None of the figures: the scheduler learns every one online, as without a model. (A
    /// model with `a` alone counts as not empty, though the scheduler uses `a` only with `b`:
    /// the safe side, it is then not called the same policy as none.)
    pub fn is_empty(&self) -> bool {
        // Every field named, so a new figure must be considered here to compile.
        let Priors {
            full_pause_ms,
            unfrozen_a_ms,
            unfrozen_b_ms,
            freed_per_request,
            collections: _,
        } = self;
        full_pause_ms.is_none()
            && unfrozen_a_ms.is_none()
            && unfrozen_b_ms.is_none()
            && freed_per_request.is_none()
    }
}

/// One run a model was trained on, for provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSource {
    pub path: String,
    /// The service: a bundled workload's name, or the command.
    pub service: String,
    pub trials: usize,
    pub requests: usize,
    pub collections: usize,
}

/// `model.json` of a scheduler model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedulerMeta {
    pub format: String,
    pub quiet: QuietMeta,
    #[serde(default)]
    pub priors: Priors,
    #[serde(default)]
    pub data: Vec<RunSource>,
    /// Training settings, free-form.
    #[serde(default)]
    pub training: serde_json::Value,
}

/// A loaded, validated scheduler model.
#[derive(Clone, Debug)]
pub struct SchedulerModel {
    pub meta: SchedulerMeta,
    net: Lstm,
}

impl SchedulerModel {
    /// Loads `dir/model.json` and `dir/model.safetensors`; an error names the file and what is
    /// wrong (a seed model's directory says so).
    pub fn load(dir: &Path) -> Result<SchedulerModel, ModelError> {
        let files = ModelFiles::open(dir)?;
        let (text, meta_path, weights_path) = (&files.text, &files.meta_path, &files.weights_path);
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| ModelError::at(meta_path, format!("not valid JSON: {e}")))?;
        let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != SCHEDULER_FORMAT {
            let what = if format == crate::meta::FORMAT {
                "a model of the seed's kind (neurogc-seed:DIR), not a scheduler model; train one \
                 with `neurogc train --model scheduler --data RUN_DIR`"
                    .to_string()
            } else {
                format!("format {format:?} is not {SCHEDULER_FORMAT:?}")
            };
            return Err(ModelError::at(meta_path, what));
        }
        let meta: SchedulerMeta = serde_json::from_value(value).map_err(|e| {
            ModelError::at(
                meta_path,
                format!("not a valid scheduler model description: {e}"),
            )
        })?;
        let tensors = files.tensors()?;
        Self::from_parts(meta, &tensors).map_err(|e| match e.path {
            Some(_) => e,
            None if e.message.starts_with("tensor") || e.message.starts_with("unexpected") => {
                ModelError::at(weights_path, e.message)
            }
            None => ModelError::at(meta_path, e.message),
        })
    }

    /// Builds a model from its description and weights (the trainer's parity check).
    pub fn from_parts(meta: SchedulerMeta, t: &TensorMap) -> Result<SchedulerModel, ModelError> {
        check(&meta)?;
        let net = Lstm::load(t, QUIET_INPUTS, meta.quiet.hidden, meta.quiet.layers)?;
        Ok(SchedulerModel { meta, net })
    }

    /// Scratch memory for [`SchedulerModel::quiet_chance`]: one per caller, no allocation per
    /// question.
    pub fn scratch(&self) -> Vec<f32> {
        self.net.scratch(QUIET_GAPS)
    }

    /// Whether the scheduler asks the net (it beat the online estimate on held-out moments).
    pub fn uses_net(&self) -> bool {
        self.meta.quiet.use_net
    }

    /// The model changes no decision: its net is not asked and it has no priors (a model of
    /// several services whose net did not beat the online estimate), so the scheduler decides
    /// exactly as without it.
    pub fn adds_nothing(&self) -> bool {
        !self.uses_net() && self.meta.priors.is_empty()
    }

    /// The chance of no arrival within the pause, for raw inputs from [`quiet_inputs`]: the
    /// survival estimate's logit (the last input) corrected by the net's output, so that a net
    /// that learned nothing answers as the estimate does.
    pub fn quiet_chance(&self, raw: &QuietInput, scratch: &mut [f32]) -> f32 {
        let survival_logit = raw[QUIET_INPUTS - 1];
        let mut x = *raw;
        self.meta.quiet.scale.apply(&mut x);
        crate::linalg::sigmoid(survival_logit + self.net.forward_logit(&x, QUIET_GAPS, scratch))
    }
}

/// The largest hidden size and layer count a scheduler model may have: the net runs on the
/// agent's sampler thread every few milliseconds.
pub const MAX_HIDDEN: usize = 64;
pub const MAX_LAYERS: usize = 2;

/// The largest priors a model may carry: beyond them a duration overflows (an hour of pause, a
/// second per request, a million objects per request).
const MAX_PAUSE_MS: f64 = 3.6e6;
const MAX_MS_PER_REQUEST: f64 = 1e3;
const MAX_FREED_PER_REQUEST: f64 = 1e6;

fn check(meta: &SchedulerMeta) -> Result<(), ModelError> {
    let q = &meta.quiet;
    let bad = |m: String| Err(ModelError::meta(m));
    if q.gaps != QUIET_GAPS || q.inputs != QUIET_INPUT_NAMES {
        return bad(format!(
            "quiet net reads {} gaps of {:?}; this build reads {QUIET_GAPS} of {QUIET_INPUT_NAMES:?}",
            q.gaps, q.inputs
        ));
    }
    if !(1..=MAX_HIDDEN).contains(&q.hidden) || !(1..=MAX_LAYERS).contains(&q.layers) {
        return bad(format!(
            "quiet net of hidden size {} and {} layers is out of range (1-{MAX_HIDDEN}, 1-{MAX_LAYERS})",
            q.hidden, q.layers
        ));
    }
    let s = &q.scale;
    if s.mean.len() != QUIET_INPUTS
        || s.std.len() != QUIET_INPUTS
        || s.mean.iter().chain(&s.std).any(|v| !v.is_finite())
    {
        return bad(format!(
            "quiet scale must hold {QUIET_INPUTS} finite means and stds"
        ));
    }
    let p = &meta.priors;
    for (name, v, max) in [
        ("full_pause_ms", p.full_pause_ms, MAX_PAUSE_MS),
        ("unfrozen_a_ms", p.unfrozen_a_ms, MAX_PAUSE_MS),
        ("unfrozen_b_ms", p.unfrozen_b_ms, MAX_MS_PER_REQUEST),
        (
            "freed_per_request",
            p.freed_per_request,
            MAX_FREED_PER_REQUEST,
        ),
    ] {
        if v.is_some_and(|v| !(v.is_finite() && (0.0..=max).contains(&v))) {
            return bad(format!("prior {name} must be a number from 0 to {max:e}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn inputs_need_history_and_read_the_recent_gaps() {
        let few: Vec<u64> = (0..QUIET_GAPS as u64).map(|i| i * 10 * MS).collect();
        assert!(quiet_inputs(&few, 200 * MS, 5 * MS, 0.5).is_none());
        let mut arrivals: Vec<u64> = (0..100u64).map(|i| i * 10 * MS).collect();
        let x = quiet_inputs(&arrivals, 990 * MS + 4 * MS, 5 * MS, 0.5).unwrap();
        let step = |x: &QuietInput, k: usize| x[k * QUIET_INPUTS..(k + 1) * QUIET_INPUTS].to_vec();
        // In units of the typical gap, 10 ms.
        let ln = |ms: f64| (ms / 10.0).ln_1p() as f32;
        assert_eq!(step(&x, 0), [ln(10.0), ln(4.0), ln(5.0), 0.0]);
        assert_eq!(step(&x, QUIET_GAPS - 1)[0], ln(10.0));
        // A minute stopped (another policy's turns) before the last 20 arrivals does not
        // change the unit: the median of the recent gaps.
        for a in arrivals.iter_mut().skip(80) {
            *a += 60_000 * MS;
        }
        let last = *arrivals.last().unwrap();
        let y = quiet_inputs(&arrivals, last + 4 * MS, 5 * MS, 0.5).unwrap();
        assert_eq!(step(&y, QUIET_GAPS - 1), step(&x, QUIET_GAPS - 1));
    }

    #[test]
    fn priors_are_empty_only_without_every_figure() {
        assert!(Priors::default().is_empty());
        // The count of collections fitted on is provenance, not a figure the scheduler uses.
        let counted = Priors {
            collections: 3,
            ..Priors::default()
        };
        assert!(counted.is_empty());
        for one in [
            Priors {
                full_pause_ms: Some(1.0),
                ..Priors::default()
            },
            Priors {
                unfrozen_a_ms: Some(1.0),
                ..Priors::default()
            },
            Priors {
                unfrozen_b_ms: Some(1.0),
                ..Priors::default()
            },
            Priors {
                freed_per_request: Some(1.0),
                ..Priors::default()
            },
        ] {
            assert!(!one.is_empty(), "{one:?}");
        }
    }
}
