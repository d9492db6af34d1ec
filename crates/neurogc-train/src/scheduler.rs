//! `neurogc train --model scheduler --data RUN_DIR...`: the `neurogc` scheduler's model, learned
//! from what recorded runs show happened (`neurogc_model::scheduler` describes the file).
//!
//! - **Quiet windows, labelled in hindsight.** Every trial with a request log (`requests.csv`:
//!   each request's due moment and end) is walked on the server's own clock: at moments with
//!   nothing in flight, for pauses from 2 ms to 0.5 s, the label is whether a request arrived
//!   before the pause would have ended, i.e. whether a collection then would have delayed
//!   anyone. A small LSTM over the recent inter-arrival gaps learns the chance; the online
//!   survival estimate the scheduler uses without a model is scored on the same held-out
//!   moments, so `model.json` says whether the net does better.
//! - **The service's priors**, from its full and middle-generation collections where the heap
//!   was not frozen (`default`, `explore`): a full collection's pause, how its pause grows with
//!   the requests since the one before (`neurogc collect --explore` adds collections at random
//!   moments, so that growth is seen at many distances), and what it frees per request. They
//!   are fitted only when every run is of the same service.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarMap};
use neurogc_core::policy::{PolicySpec, Trigger};
use neurogc_core::traffic::{Traffic, RING};
use neurogc_model::scheduler::{
    quiet_inputs, InputScale, Priors, QuietMeta, QuietMetrics, RunSource, SchedulerMeta,
    SchedulerModel, QUIET_GAPS, QUIET_INPUTS, QUIET_INPUT_NAMES, SCHEDULER_FORMAT,
};
use neurogc_model::Architecture;
use neurogc_record::{AppInfo, TrialStatus};
use neurogc_report::rundir::{RunData, TrialData};
use neurogc_rng::Rng;
use neurogc_sim::trace::Trace;

use crate::model_io::{self, Saved};
use crate::nets::Net;

/// The pauses each quiet moment is asked about (ms): from a young-ish collection to a large
/// heap's full one.
pub const PAUSES_MS: [f64; 10] = [
    2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
];
/// Moments are taken this often on the server's clock (the scheduler asks every 10 ms while
/// a collection waits).
const STEP_S: f64 = 0.005;

/// What to train.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    pub runs: Vec<PathBuf>,
    pub out: PathBuf,
    pub hidden: usize,
    pub layers: usize,
    pub epochs: usize,
    pub batch: usize,
    pub lr: f64,
    pub seed: u64,
    /// Share of each trial's moments, at its end, held out for validation.
    pub val_fraction: f64,
    /// Examples kept per trial (moments × pauses), drawn at random beyond it: a suite's run
    /// replays the same traffic to every policy.
    pub per_trial: usize,
    pub quiet: bool,
}

impl SchedulerConfig {
    /// Refuses settings that would fail inside candle or the agent's loader, naming the flag.
    pub fn check(&self) -> Result<()> {
        use crate::train::in_range;
        use neurogc_model::scheduler::{MAX_HIDDEN, MAX_LAYERS};
        in_range("--hidden", self.hidden, 1..=MAX_HIDDEN)?;
        in_range("--layers", self.layers, 1..=MAX_LAYERS)?;
        in_range("--epochs", self.epochs, 1..=usize::MAX)?;
        in_range("--batch", self.batch, 1..=usize::MAX)?;
        if !(self.lr.is_finite() && self.lr > 0.0) {
            bail!("--lr must be a positive number, got {}", self.lr);
        }
        // The held-out share and the half as much before it that stops training, in time:
        // without either the net is neither stopped nor judged against the estimate.
        if !(self.val_fraction > 0.0 && self.val_fraction <= 0.5) {
            bail!(
                "--val-fraction must be above 0 and at most 0.5 for --model scheduler (the \
                 net is judged on that last share of each trial), got {}",
                self.val_fraction
            );
        }
        Ok(())
    }
}

/// Hindsight examples: inputs (flattened, raw), labels (1: quiet), and the survival estimate's
/// chance for the same question.
#[derive(Clone, Debug, Default)]
pub struct Examples {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub survival: Vec<f32>,
}

const WIDTH: usize = QUIET_GAPS * QUIET_INPUTS;

impl Examples {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    fn input(&self, i: usize) -> &[f32] {
        &self.x[i * WIDTH..(i + 1) * WIDTH]
    }

    fn push(&mut self, x: &[f32], y: bool, survival: f64) {
        self.x.extend_from_slice(x);
        self.y.push(if y { 1.0 } else { 0.0 });
        self.survival.push(survival as f32);
    }

    fn append(&mut self, other: Examples) {
        self.x.extend(other.x);
        self.y.extend(other.y);
        self.survival.extend(other.survival);
    }
}

/// A trace's examples, split in time: the net is fitted on the first, training stops at the
/// epoch that did best on the second, and the last (`val_fraction` of the trace) is held out.
#[derive(Clone, Debug, Default)]
pub struct Splits {
    pub fit: Examples,
    pub stop: Examples,
    pub val: Examples,
}

impl Splits {
    fn append(&mut self, other: Splits) {
        self.fit.append(other.fit);
        self.stop.append(other.stop);
        self.val.append(other.val);
    }
}

/// The trace's hindsight examples, split in time: the last `val_fraction` of its length is held
/// out, the half as much before it decides when training stops, the rest fits. At most `cap`
/// examples, drawn at random.
pub fn quiet_examples(trace: &Trace, val_fraction: f64, cap: usize, rng: &mut Rng) -> Splits {
    let arrivals = &trace.arrivals;
    // Arrival times in ns on a clock that starts above 0 (the ring's convention).
    let ns = |s: f64| ((s + 1.0) * 1e9) as u64;
    let arrivals_ns: Vec<u64> = arrivals.iter().map(|&a| ns(a)).collect();
    let val_from = trace.length * (1.0 - val_fraction);
    let stop_from = trace.length * (1.0 - 1.5 * val_fraction);
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    // Sweep: `seen` arrivals at or before t; `busy_until` the latest end among them.
    let mut seen = 0;
    let mut busy_until = f64::NEG_INFINITY;
    for k in 0.. {
        // Counted, not summed: a sum of steps drifts off the arrivals' grid.
        let t = k as f64 * STEP_S;
        if t >= trace.length {
            break;
        }
        while seen < arrivals.len() && arrivals[seen] <= t {
            busy_until = busy_until.max(arrivals[seen] + trace.latency[seen]);
            seen += 1;
        }
        if seen > QUIET_GAPS && busy_until <= t {
            candidates.push((t, seen));
        }
    }
    let mut questions: Vec<(f64, usize, f64)> = candidates
        .iter()
        .flat_map(|&(t, seen)| PAUSES_MS.iter().map(move |&d| (t, seen, d)))
        .filter(|&(t, _, d)| t + d / 1e3 <= trace.length)
        .collect();
    if questions.len() > cap {
        rng.shuffle(&mut questions);
        questions.truncate(cap);
        questions.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut splits = Splits::default();
    for (t, seen, d) in questions {
        let history = &arrivals_ns[seen.saturating_sub(RING)..seen];
        let now = ns(t);
        let pause = Duration::from_secs_f64(d / 1e3);
        let survival = Traffic {
            in_flight: 0,
            now_ns: now,
            arrivals: history,
            total: seen as u64,
        }
        .quiet_chance(pause);
        let Some(x) = quiet_inputs(history, now, pause.as_nanos() as u64, survival) else {
            continue;
        };
        let quiet = arrivals.get(seen).is_none_or(|&next| next > t + d / 1e3);
        // The estimate as the net's base reads it (its logit clamped): scored alike, a net that
        // learned nothing is no better than it.
        let survival = f64::from(neurogc_model::linalg::sigmoid(x[QUIET_INPUTS - 1]));
        let into = if t >= val_from {
            &mut splits.val
        } else if t >= stop_from {
            &mut splits.stop
        } else {
            &mut splits.fit
        };
        into.push(&x, quiet, survival);
    }
    splits
}

/// z-score statistics of each input over the examples.
fn input_scale(ex: &Examples) -> InputScale {
    let rows = || ex.x.chunks_exact(QUIET_INPUTS);
    let n = rows().len().max(1) as f64;
    // Two passes: the mean, then the squares around it (E[x²] − E[x]² cancels badly).
    let mean: Vec<f64> = (0..QUIET_INPUTS)
        .map(|f| rows().map(|r| f64::from(r[f])).sum::<f64>() / n)
        .collect();
    let std = (0..QUIET_INPUTS)
        .map(|f| {
            let var = rows()
                .map(|r| (f64::from(r[f]) - mean[f]).powi(2))
                .sum::<f64>()
                / n;
            let s = var.sqrt() as f32;
            if s > neurogc_model::scheduler::MIN_STD {
                s
            } else {
                0.0
            }
        })
        .collect();
    InputScale {
        mean: mean.into_iter().map(|m| m as f32).collect(),
        std,
    }
}

fn brier(p: &[f32], y: &[f32]) -> Option<f64> {
    (!y.is_empty()).then(|| {
        p.iter()
            .zip(y)
            .map(|(p, y)| f64::from(p - y).powi(2))
            .sum::<f64>()
            / y.len() as f64
    })
}

fn log_loss(p: &[f32], y: &[f32]) -> Option<f64> {
    (!y.is_empty()).then(|| {
        p.iter()
            .zip(y)
            .map(|(&p, &y)| {
                let p = f64::from(p).clamp(1e-6, 1.0 - 1e-6);
                -(f64::from(y) * p.ln() + (1.0 - f64::from(y)) * (1.0 - p).ln())
            })
            .sum::<f64>()
            / y.len() as f64
    })
}

/// Precision and recall of "quiet" at the scheduler's default bar (`quiet=0.9`).
fn at_bar(p: &[f32], y: &[f32]) -> (Option<f64>, Option<f64>) {
    let bar = neurogc_core::policy::SchedulerConfig::default().quiet as f32;
    let called = p.iter().filter(|&&p| p >= bar).count();
    let hits = p
        .iter()
        .zip(y)
        .filter(|(&p, &y)| p >= bar && y == 1.0)
        .count();
    let quiet = y.iter().filter(|&&y| y == 1.0).count();
    let share = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    (share(hits, called), share(hits, quiet))
}

/// The service a run measured: a bundled workload's name, or its command.
pub fn service_of(app: &AppInfo) -> String {
    match app {
        AppInfo::Workload {
            workload, options, ..
        } if options.is_empty() => workload.clone(),
        AppInfo::Workload {
            workload, options, ..
        } => format!("{workload} {}", options.join(" ")),
        AppInfo::Demo { scenario, .. } => format!("demo {scenario}"),
        AppInfo::Cmd { command } => command.clone(),
    }
}

fn usable(t: &TrialData) -> bool {
    t.damaged.is_none() && t.status() == Some(TrialStatus::Complete)
}

/// Trials whose whole heap was collected as CPython does (nothing frozen, no timer): their
/// collections show what the heap costs and yields.
fn unfrozen(t: &TrialData) -> bool {
    let spec = t.info.as_ref().map_or("", |i| i.spec.as_str());
    matches!(
        spec.parse::<PolicySpec>(),
        Ok(PolicySpec::Default | PolicySpec::Explore { .. })
    )
}

/// The priors from the unfrozen trials' traces and middle-generation pauses.
pub fn fit_priors(traces: &[(Trace, Vec<f64>)]) -> Priors {
    let mut full = Vec::new();
    let mut growth: Vec<(f64, f64)> = Vec::new();
    let (mut freed, mut served) = (0f64, 0f64);
    let mut middle = Vec::new();
    for (trace, middle_ms) in traces {
        middle.extend_from_slice(middle_ms);
        for (k, c) in trace.full.iter().enumerate() {
            // The freeze-like collections a policy ran to set up are not the heap's cost.
            if c.trigger == Some(Trigger::Freeze) {
                continue;
            }
            full.push(c.pause_ms);
            let Some(prev) = k.checked_sub(1).map(|p| &trace.full[p]) else {
                continue;
            };
            let w = c.after_requests.saturating_sub(prev.after_requests) as f64;
            if w > 0.0 {
                growth.push((w, c.pause_ms));
                if let Some(n) = c.collected {
                    freed += n as f64;
                    served += w;
                }
            }
        }
    }
    let median = |v: &[f64]| neurogc_stats::median(v).ok();
    let b = slope(&growth);
    Priors {
        full_pause_ms: median(&full),
        unfrozen_a_ms: median(&middle).filter(|_| b.is_some()),
        unfrozen_b_ms: b,
        freed_per_request: (served > 0.0).then(|| freed / served),
        collections: full.len(),
    }
}

/// Least-squares slope of `pause` on `w`, with three points or more at two distances or more;
/// none where it is not above 0 (a prior of 0 would take the cadence to its longest).
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mw = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mp = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sww: f64 = points.iter().map(|p| (p.0 - mw).powi(2)).sum();
    if sww < 1e-9 * n * mw.max(1.0) {
        return None;
    }
    let swp: f64 = points.iter().map(|p| (p.0 - mw) * (p.1 - mp)).sum();
    Some(swp / sww).filter(|b| *b > 0.0)
}

/// What training found, for the command's summary.
#[derive(Debug)]
pub struct SchedulerReport {
    pub meta: SchedulerMeta,
    pub parity_max_abs_diff: f32,
    pub warnings: Vec<String>,
}

/// The agent's inference may differ from candle's by this much.
const PARITY_TOLERANCE: f32 = 1e-4;

pub fn train(cfg: &SchedulerConfig) -> Result<SchedulerReport> {
    let started = Instant::now();
    if cfg.runs.is_empty() {
        bail!("--model scheduler: give one or more run directories with --data RUN_DIR");
    }
    let mut rng = Rng::new(cfg.seed);
    let mut splits = Splits::default();
    let mut unfrozen_traces = Vec::new();
    let mut sources = Vec::new();
    let mut warnings = Vec::new();
    for dir in &cfg.runs {
        let run = load_run(dir)?;
        let service = service_of(&run.info.app);
        let (mut trials, mut requests, mut collections) = (0, 0, 0);
        for t in run.trials.iter().filter(|t| usable(t)) {
            let trace = match Trace::of_trial(t) {
                Ok(tr) => tr,
                Err(e) => {
                    warnings.push(format!("{e:#}: left out"));
                    continue;
                }
            };
            trials += 1;
            requests += trace.arrivals.len();
            collections += trace.full.len();
            splits.append(quiet_examples(
                &trace,
                cfg.val_fraction,
                cfg.per_trial,
                &mut rng,
            ));
            if unfrozen(t) {
                // The middle generation's pauses in the measured window, as the full ones.
                let (from, to) = t.info.as_ref().map_or((f64::MIN, f64::MAX), |i| {
                    (
                        i.measure_start.unwrap_or(f64::MIN),
                        i.measure_end.unwrap_or(f64::MAX),
                    )
                });
                let middle: Vec<f64> = t
                    .gc_events
                    .iter()
                    .flatten()
                    .filter(|e| e.generation == 1 && e.time >= from && e.time <= to)
                    .map(|e| e.pause_ms)
                    .collect();
                unfrozen_traces.push((service.clone(), trace, middle));
            }
        }
        if trials == 0 {
            bail!(
                "{}: no complete trial with a request log (requests.csv): nothing to learn from",
                dir.display()
            );
        }
        sources.push(RunSource {
            path: dir.display().to_string(),
            service,
            trials,
            requests,
            collections,
        });
    }
    let Splits {
        fit: train,
        stop,
        val,
    } = splits;
    if train.len() < 100 {
        bail!(
            "only {} training moments with nothing in flight: the runs are too short or the \
             service never idles between requests; record longer runs",
            train.len()
        );
    }
    let services: std::collections::BTreeSet<&str> =
        sources.iter().map(|s| s.service.as_str()).collect();
    let priors = if services.len() == 1 {
        let traces: Vec<(Trace, Vec<f64>)> = unfrozen_traces
            .into_iter()
            .map(|(_, t, m)| (t, m))
            .collect();
        if traces.is_empty() {
            warnings.push(
                "no trial ran the whole heap unfrozen (default or explore): no priors".into(),
            );
        }
        fit_priors(&traces)
    } else {
        warnings.push(format!(
            "runs of {} services ({}): the priors are one service's, so this model has none",
            services.len(),
            services.into_iter().collect::<Vec<_>>().join(", ")
        ));
        Priors::default()
    };
    let scale = input_scale(&train);
    let (tensors, val_pred, epochs) = fit(cfg, &train, &stop, &val, &scale, &mut rng)?;
    let net_loss = log_loss(&val_pred, &val.y);
    let survival_loss = log_loss(&val.survival, &val.y);
    let net_brier = brier(&val_pred, &val.y);
    let survival_brier = brier(&val.survival, &val.y);
    // The net is used only where it did better than the online estimate on held-out moments,
    // by both scores.
    let better = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if a < b);
    let use_net = better(net_loss, survival_loss) && better(net_brier, survival_brier);
    if !use_net {
        let f = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.4}"));
        warnings.push(format!(
            "the quiet-window net did not beat the online survival estimate on held-out moments \
             (log loss {} against {}, Brier {} against {}): the scheduler will keep the estimate",
            f(net_loss),
            f(survival_loss),
            f(net_brier),
            f(survival_brier)
        ));
    }
    let (precision, recall) = at_bar(&val_pred, &val.y);
    let (precision_survival, recall_survival) = at_bar(&val.survival, &val.y);
    let meta = SchedulerMeta {
        format: SCHEDULER_FORMAT.into(),
        quiet: QuietMeta {
            hidden: cfg.hidden,
            layers: cfg.layers,
            gaps: QUIET_GAPS,
            inputs: QUIET_INPUT_NAMES.iter().map(|s| s.to_string()).collect(),
            scale,
            use_net,
            metrics: QuietMetrics {
                train_examples: train.len(),
                val_examples: val.len(),
                val_quiet_rate: (!val.is_empty())
                    .then(|| val.y.iter().map(|&y| f64::from(y)).sum::<f64>() / val.len() as f64),
                val_brier: net_brier,
                val_brier_survival: survival_brier,
                val_log_loss: net_loss,
                val_log_loss_survival: survival_loss,
                val_precision: precision,
                val_precision_survival: precision_survival,
                val_recall: recall,
                val_recall_survival: recall_survival,
                epochs: Some(epochs),
                seconds: Some(started.elapsed().as_secs_f64()),
            },
        },
        priors,
        data: sources,
        training: serde_json::json!({
            "optimizer": "adam (AdamW, weight_decay 0)",
            "loss": "binary cross-entropy",
            "lr": cfg.lr,
            "batch": cfg.batch,
            "epochs": cfg.epochs,
            "seed": cfg.seed,
            "val_fraction": cfg.val_fraction,
            "pauses_ms": PAUSES_MS,
            "moment_step_s": STEP_S,
            "examples_per_trial": cfg.per_trial,
        }),
    };
    // The agent runs this net through its own inference: check it agrees with candle's.
    let model = SchedulerModel::from_parts(meta.clone(), &model_io::tensor_map(&tensors))
        .map_err(|e| anyhow::anyhow!("the trained model does not load: {e}"))?;
    let mut scratch = model.scratch();
    let mut parity = 0f32;
    for (i, fitted) in val_pred.iter().enumerate().take(2000) {
        let raw: neurogc_model::scheduler::QuietInput =
            val.input(i).try_into().expect("input width");
        parity = parity.max((model.quiet_chance(&raw, &mut scratch) - fitted).abs());
    }
    if parity > PARITY_TOLERANCE {
        bail!("internal error: the agent's inference differs from the trained net by {parity:e} (> {PARITY_TOLERANCE:e})");
    }
    model_io::save_json(&cfg.out, &meta, &tensors)
        .with_context(|| format!("saving the model to {}", cfg.out.display()))?;
    Ok(SchedulerReport {
        meta,
        parity_max_abs_diff: parity,
        warnings,
    })
}

fn load_run(dir: &Path) -> Result<RunData> {
    if dir.is_file() {
        bail!(
            "--data {}: --model scheduler learns from run directories (neurogc collect or \
             bench), not files",
            dir.display()
        );
    }
    RunData::load(dir).with_context(|| format!("--data {}", dir.display()))
}

/// A batch: normalised inputs `[n, gaps, inputs]`, labels `[n]`, and the survival estimate's
/// logits `[n]` the net's output corrects.
fn batch(
    ex: &Examples,
    scale: &InputScale,
    idx: &[usize],
) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    let mut x = Vec::with_capacity(idx.len() * WIDTH);
    let mut y = Vec::with_capacity(idx.len());
    let mut base = Vec::with_capacity(idx.len());
    for &i in idx {
        let start = x.len();
        x.extend_from_slice(ex.input(i));
        base.push(x[start + QUIET_INPUTS - 1]);
        scale.apply(&mut x[start..]);
        y.push(ex.y[i]);
    }
    let n = idx.len();
    Ok((
        Tensor::from_vec(x, (n, QUIET_GAPS, QUIET_INPUTS), &Device::Cpu)?,
        Tensor::from_vec(y, n, &Device::Cpu)?,
        Tensor::from_vec(base, n, &Device::Cpu)?,
    ))
}

/// The chance of quiet: the survival logit corrected by the net's, as the agent computes it.
fn chance(net: &Net, x: &Tensor, base: &Tensor) -> candle_core::Result<Tensor> {
    candle_nn::ops::sigmoid(&(base + net.forward_logit(x, None)?)?)
}

fn predict(net: &Net, ex: &Examples, scale: &InputScale) -> candle_core::Result<Vec<f32>> {
    let idx: Vec<usize> = (0..ex.len()).collect();
    let mut out = Vec::with_capacity(ex.len());
    for chunk in idx.chunks(1024) {
        let (x, _, base) = batch(ex, scale, chunk)?;
        out.extend(chance(net, &x, &base)?.to_vec1::<f32>()?);
    }
    Ok(out)
}

/// Sets the output layer to zero: the net starts out answering as the survival estimate.
fn zero_output(varmap: &VarMap) -> candle_core::Result<()> {
    let data = varmap.data().lock().expect("varmap lock");
    for name in ["fc.weight", "fc.bias"] {
        let var = data.get(name).expect("the LSTM's output layer");
        var.set(&var.as_tensor().zeros_like()?)?;
    }
    Ok(())
}

type Fitted = (Vec<(String, Saved)>, Vec<f32>, usize);

fn fit(
    cfg: &SchedulerConfig,
    train: &Examples,
    stop: &Examples,
    val: &Examples,
    scale: &InputScale,
    rng: &mut Rng,
) -> Result<Fitted> {
    let arch = Architecture::Lstm {
        hidden: cfg.hidden,
        layers: cfg.layers,
        dropout: 0.0,
    };
    let varmap = VarMap::new();
    let net = Net::new(&arch, QUIET_GAPS, QUIET_INPUTS, &varmap, rng)?;
    zero_output(&varmap)?;
    let mut opt = AdamW::new(
        varmap.all_vars(),
        ParamsAdamW {
            lr: cfg.lr,
            weight_decay: 0.0,
            ..Default::default()
        },
    )?;
    let bar = crate::train::progress(cfg.epochs, cfg.quiet);
    bar.set_prefix("scheduler");
    let mut order: Vec<usize> = (0..train.len()).collect();
    // The moments of one trace are close in time and alike: a net fitted on them for long
    // learns those seconds. The weights kept are the epoch's that did best on the stopping
    // moments (later than the fitted ones, earlier than the held-out ones).
    // Epoch 0: the output layer at zero, the survival estimate itself.
    let mut best_loss = log_loss(&predict(&net, stop, scale)?, &stop.y).unwrap_or(f64::INFINITY);
    let mut best = (0, crate::train::export(&varmap)?);
    for epoch in 1..=cfg.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for chunk in order.chunks(cfg.batch.max(1)) {
            let (x, y, base) = batch(train, scale, chunk)?;
            let p = chance(&net, &x, &base)?.clamp(1e-6f32, 1.0 - 1e-6)?;
            // Binary cross-entropy: the net's output is a probability.
            let ones = Tensor::ones_like(&y)?;
            let loss = ((&y * p.log()?)? + ((&ones - &y)? * (&ones - &p)?.log()?)?)?
                .neg()?
                .mean_all()?;
            opt.backward_step(&loss)?;
            let l = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            if !l.is_finite() {
                bail!("training diverged in epoch {epoch} (loss {l}); nothing was saved (a lower --lr may help)");
            }
            total += l * chunk.len() as f64;
        }
        let stop_loss = log_loss(&predict(&net, stop, scale)?, &stop.y);
        if let Some(l) = stop_loss.filter(|&l| l < best_loss) {
            best_loss = l;
            best = (epoch, crate::train::export(&varmap)?);
        }
        let message = format!(
            "train log loss {:.4}, stopping moments {}",
            total / train.len() as f64,
            stop_loss.map_or("n/a".into(), |v| format!("{v:.4}"))
        );
        bar.set_message(message.clone());
        bar.set_position(epoch as u64);
        if bar.is_hidden() && !cfg.quiet {
            eprintln!("scheduler epoch {epoch}/{}: {message}", cfg.epochs);
        }
    }
    bar.finish();
    let (epoch, tensors) = best;
    // The held-out predictions of the weights kept, through a net built from them.
    let kept = VarMap::new();
    let net = Net::new(&arch, QUIET_GAPS, QUIET_INPUTS, &kept, rng)?;
    for (name, saved) in &tensors {
        if let Saved::F32(shape, v) = saved {
            kept.data()
                .lock()
                .expect("varmap lock")
                .get(name)
                .expect("the same parameters")
                .set(&Tensor::from_vec(
                    v.clone(),
                    shape.as_slice(),
                    &Device::Cpu,
                )?)?;
        }
    }
    let val_pred = predict(&net, val, scale)?;
    Ok((tensors, val_pred, epoch))
}

/// Prints what was learned (the `neurogc train` summary).
pub fn print_report(report: &SchedulerReport, out: &Path) {
    let q = &report.meta.quiet.metrics;
    let f = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"));
    println!(
        "scheduler model from {} run(s): quiet-window LSTM ({} hidden, {} layer(s)) on {} training / {} validation moments",
        report.meta.data.len(),
        report.meta.quiet.hidden,
        report.meta.quiet.layers,
        q.train_examples,
        q.val_examples
    );
    println!(
        "  held out: Brier {} (the online survival estimate: {}), log loss {} ({}), quiet {}",
        f(q.val_brier),
        f(q.val_brier_survival),
        f(q.val_log_loss),
        f(q.val_log_loss_survival),
        q.val_quiet_rate
            .map_or("n/a".into(), |r| format!("{:.1} %", r * 100.0))
    );
    println!(
        "  called quiet at P >= 0.9: precision {} ({}), recall {} ({}); the scheduler uses {}",
        f(q.val_precision),
        f(q.val_precision_survival),
        f(q.val_recall),
        f(q.val_recall_survival),
        if report.meta.quiet.use_net {
            "the net"
        } else {
            "the online estimate"
        }
    );
    let p = &report.meta.priors;
    let ms = |v: Option<f64>| v.map_or_else(|| "none".to_string(), |v| format!("{v:.2} ms"));
    println!(
        "  priors from {} full collections: full pause {}, unfrozen pause {} + {} per request, {} objects freed per request",
        p.collections,
        ms(p.full_pause_ms),
        ms(p.unfrozen_a_ms),
        ms(p.unfrozen_b_ms),
        p.freed_per_request.map_or("n/a".into(), |v| format!("{v:.0}"))
    );
    println!(
        "  agent inference matches the trained net to {:.1e}",
        report.parity_max_abs_diff
    );
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    println!("saved {}", out.display());
}

#[cfg(test)]
mod tests {
    use super::*;
    use neurogc_sim::trace::FullCollection;

    /// Requests every 10 ms, each 2 ms long, for `secs`; full collections as given.
    fn steady(secs: f64, full: Vec<FullCollection>) -> Trace {
        let arrivals: Vec<f64> = (0..(secs * 100.0) as usize)
            .map(|i| i as f64 * 0.01)
            .collect();
        let n = arrivals.len();
        Trace {
            label: "default".into(),
            spec: "default".into(),
            arrivals,
            work: vec![0.002; n],
            latency: vec![0.002; n],
            met: vec![(neurogc_sim::tail::Met::Nothing, 0.0); n],
            full,
            per_request: [0.0; 2],
            length: secs,
        }
    }

    #[test]
    fn labels_say_whether_a_pause_then_would_have_met_a_request() {
        let trace = steady(20.0, vec![]);
        let mut rng = Rng::new(1);
        let Splits {
            fit: train,
            stop,
            val,
        } = quiet_examples(&trace, 0.2, usize::MAX, &mut rng);
        assert!(
            train.len() > 1000 && val.len() > 200,
            "{} {}",
            train.len(),
            val.len()
        );
        // In time: fitted, then the stopping moments (a tenth), then the held-out fifth.
        // (The held-out end loses the pauses that would run past the trace.)
        let ratio = stop.len() as f64 / val.len() as f64;
        assert!((0.4..0.7).contains(&ratio), "{ratio}");
        for ex in [&train, &stop, &val] {
            for i in 0..ex.len() {
                let x = ex.input(i);
                // Nothing is in flight at a moment asked about; requests are 10 ms apart (the
                // mean gap, the inputs' unit), so the pause decides: a window reaching the next
                // beat meets its arrival.
                let silence = f64::from(x[1]).exp_m1();
                let pause = f64::from(x[2]).exp_m1();
                assert!(silence >= 0.19, "{silence}");
                let end = silence + pause;
                // (The mean gap runs up to 5 % over the beat while the history is short.)
                if (end - 1.0).abs() > 0.08 {
                    assert_eq!(ex.y[i] == 1.0, end < 1.0, "silence {silence} pause {pause}");
                }
            }
        }
        // The survival estimate knows steady traffic too: it is scored beside the net.
        let b = brier(&val.survival, &val.y).unwrap();
        assert!(b < 0.05, "{b}");
    }

    #[test]
    fn bad_settings_are_refused_naming_the_flag() {
        let ok = SchedulerConfig {
            runs: vec![],
            out: "m".into(),
            hidden: 16,
            layers: 1,
            epochs: 20,
            batch: 256,
            lr: 2e-3,
            seed: 1,
            val_fraction: 0.2,
            per_trial: 100,
            quiet: true,
        };
        ok.check().unwrap();
        for (bad, flag) in [
            (
                SchedulerConfig {
                    hidden: 0,
                    ..ok.clone()
                },
                "--hidden",
            ),
            (
                SchedulerConfig {
                    hidden: 65,
                    ..ok.clone()
                },
                "--hidden",
            ),
            (
                SchedulerConfig {
                    layers: 3,
                    ..ok.clone()
                },
                "--layers",
            ),
            (
                SchedulerConfig {
                    epochs: 0,
                    ..ok.clone()
                },
                "--epochs",
            ),
            (
                SchedulerConfig {
                    lr: f64::NAN,
                    ..ok.clone()
                },
                "--lr",
            ),
            (
                SchedulerConfig {
                    val_fraction: 0.0,
                    ..ok.clone()
                },
                "--val-fraction",
            ),
            (
                SchedulerConfig {
                    val_fraction: 0.6,
                    ..ok.clone()
                },
                "--val-fraction",
            ),
        ] {
            let e = bad.check().unwrap_err().to_string();
            assert!(e.contains(flag), "{e}");
        }
        let e = train(&ok).unwrap_err().to_string();
        assert!(e.contains("--data RUN_DIR"), "{e}");
    }

    #[test]
    fn priors_come_from_the_growth_of_full_pauses_with_the_requests_between_them() {
        // Pauses 100 + 0.5 ms per request since the last full collection, each freeing 30
        // objects per request.
        let mut full = Vec::new();
        let mut after = 0;
        for (k, w) in [0usize, 40, 120, 80, 200, 60].into_iter().enumerate() {
            after += w;
            full.push(FullCollection {
                at: k as f64,
                pause_ms: 100.0 + 0.5 * w as f64,
                collected: Some(30 * w as u64),
                after_requests: after,
                trigger: Some(Trigger::Explore),
            });
        }
        let p = fit_priors(&[(steady(6.0, full), vec![3.0, 4.0, 5.0])]);
        assert!((p.unfrozen_b_ms.unwrap() - 0.5).abs() < 1e-9, "{p:?}");
        assert_eq!(p.unfrozen_a_ms, Some(4.0));
        assert!((p.freed_per_request.unwrap() - 30.0).abs() < 1e-9);
        assert_eq!(p.collections, 6);
        // Without full collections at different distances there is no slope, and no `a`.
        let p = fit_priors(&[(steady(1.0, vec![]), vec![3.0])]);
        assert_eq!(
            (p.unfrozen_a_ms, p.unfrozen_b_ms, p.full_pause_ms),
            (None, None, None)
        );
    }
}
