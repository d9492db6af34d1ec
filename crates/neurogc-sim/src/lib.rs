//! `neurogc simulate RUN_DIR`: replays a recorded run's traffic through a model of the server and
//! of each full collection's pause, under any policy, in seconds; and finds the best schedule
//! in hindsight for that traffic (the offline optimum), so every policy can be stated as a
//! distance from it. Where the run recorded a policy live, the replay's p99 stands beside the
//! live one, with the error, and the policies' order in both is compared.
//!
//! Layout: [`trace`] a trial as the replay needs it · [`model`] the pause models, from the run's
//! own collections · [`replay`] the single-server replay · [`policies`] what it can run, the
//! `neurogc` scheduler's own code among them · [`optimum`] the hindsight schedule · [`tail`]
//! what the slowest live requests met.

pub mod model;
pub mod optimum;
pub mod policies;
pub mod replay;
pub mod tail;
pub mod trace;

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use neurogc_core::policy::PolicySpec;
use neurogc_record::TrialStatus;
use neurogc_report::rundir::RunData;
use neurogc_report::scoreboard::RSS_BOUND;

use crate::model::{Calibration, Kind, OptimumPauses};
use crate::replay::{quantile, replay, Outcome};
use crate::trace::Trace;

/// `neurogc simulate`.
#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// A bench or suite workload run directory whose trials recorded their requests
    /// (`requests.csv`).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// A policy to replay (repeatable; a spec as everywhere: `default`, `freeze:3`,
    /// `periodic:5`, `gc-off`, `neurogc[,key=value...]`). Default: every policy of the run the
    /// replay can model.
    #[arg(long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,
    /// The trial whose traffic is replayed, by its policy's label (all its repetitions).
    #[arg(long, value_name = "LABEL", default_value = "default")]
    pub trace: String,
    /// Where to write the Markdown (default: RUN_DIR/simulation.md).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// What a replayed line is: a policy (its spec), the schedule in hindsight, or the best
/// idle-timed cadence (a schedule without foresight, [`policies::IdleTimed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Policy,
    Optimum,
    IdleTimed,
}

/// The least spacings (requests) the idle-timed schedule tries; the best by p99 is reported.
pub const IDLE_TIMED_AFTER: [usize; 12] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/// The delays (ms) the optimum may leave uncounted; the best by p99 is reported.
pub const OPTIMUM_TOLERANCE_MS: [f64; 9] = [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0];

/// Of several replayed schedules, the best by p99; of two alike, the one that collects less.
fn best_by_p99<K>(
    tried: impl IntoIterator<Item = Result<(K, Outcome)>>,
) -> Result<Option<(K, Outcome)>> {
    let mut best: Option<(K, Outcome, f64)> = None;
    for t in tried {
        let (key, outcome) = t?;
        let Some(p99) = quantile(&outcome.latency, 0.99) else {
            continue;
        };
        let better = best
            .as_ref()
            .is_none_or(|(_, b, q)| p99 < *q || (p99 == *q && outcome.collections < b.collections));
        if better {
            best = Some((key, outcome, p99));
        }
    }
    Ok(best.map(|(k, o, _)| (k, o)))
}

/// One policy, replayed.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub name: String,
    pub role: Role,
    pub outcome: Outcome,
    /// The live p99 (ms) of that policy's own trials, where the run has them.
    pub live_p99_ms: Option<f64>,
}

impl Replayed {
    pub fn p_ms(&self, q: f64) -> Option<f64> {
        quantile(&self.outcome.latency, q).map(|s| s * 1e3)
    }
}

fn usable(t: &neurogc_report::rundir::TrialData) -> bool {
    t.damaged.is_none() && t.status() == Some(TrialStatus::Complete)
}

fn kind_of(spec: &str) -> Kind {
    match spec.parse::<PolicySpec>() {
        Ok(PolicySpec::Default | PolicySpec::Threshold(_) | PolicySpec::Periodic { .. }) => {
            Kind::Unfrozen
        }
        Ok(PolicySpec::Freeze { .. }) => Kind::Frozen,
        Ok(PolicySpec::Neurogc { .. }) => Kind::Scheduler,
        _ => Kind::Other,
    }
}

/// Replays every trace trial under `collector`s built from `spec`, the latencies pooled.
fn replay_all(
    traces: &[&Trace],
    build: &mut dyn FnMut(&Trace) -> Result<Box<dyn replay::Collector>>,
) -> Result<Outcome> {
    let mut all = Outcome::default();
    for t in traces {
        let mut c = build(t)?;
        let o = replay(&t.arrivals, &t.work, c.as_mut());
        all.latency.extend(o.latency);
        all.collections += o.collections;
        all.met += o.met;
        all.pause_total_ms += o.pause_total_ms;
        all.pause_max_ms = all.pause_max_ms.max(o.pause_max_ms);
    }
    Ok(all)
}

/// Spearman's rank correlation of two equally long series (ties take their mean rank).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            for &k in &idx[i..=j] {
                r[k] = (i + j) as f64 / 2.0 + 1.0;
            }
            i = j + 1;
        }
        r
    }
    if x.len() != y.len() || x.len() < 3 {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let m = (n + 1.0) / 2.0;
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - m) * (b - m)).sum();
    let vx: f64 = rx.iter().map(|a| (a - m).powi(2)).sum();
    let vy: f64 = ry.iter().map(|b| (b - m).powi(2)).sum();
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}

/// The whole simulation of a run.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The report, as Markdown.
    pub md: String,
    pub results: Vec<Replayed>,
    /// How the optimum was found (`None`: the run measured no collection to take its pauses
    /// from).
    pub optimum: Option<OptimumSettings>,
    /// What the slowest 1 % of each live policy's requests met, in the run's order.
    pub live_tail: Vec<LiveTail>,
}

/// What the slowest 1 % of one live policy's requests met ([`tail`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LiveTail {
    pub label: String,
    pub p99_ms: f64,
    /// Kinds of collection (the longest that overlapped each request), most requests first.
    pub met: Vec<TailMet>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TailMet {
    pub met: &'static str,
    pub requests: usize,
    /// The median time (ms) collections of any kind took of those requests.
    pub paused_ms: f64,
}

/// [`LiveTail`] per label of `traces`, their trials pooled.
fn live_tails(traces: &[(Trace, Kind)]) -> Vec<LiveTail> {
    let mut labels: Vec<&str> = Vec::new();
    for (t, _) in traces {
        if !labels.contains(&t.label.as_str()) {
            labels.push(&t.label);
        }
    }
    labels
        .into_iter()
        .filter_map(|label| {
            let mine = || traces.iter().map(|(t, _)| t).filter(|t| t.label == label);
            let latency: Vec<f64> = mine().flat_map(|t| t.latency.iter().copied()).collect();
            let met: Vec<(tail::Met, f64)> = mine().flat_map(|t| t.met.iter().copied()).collect();
            let (p99, counts) = tail::slowest(&latency, &met)?;
            Some(LiveTail {
                label: label.to_string(),
                p99_ms: p99 * 1e3,
                met: counts
                    .into_iter()
                    .map(|c| TailMet {
                        met: c.met.name(),
                        requests: c.requests,
                        paused_ms: c.paused_median * 1e3,
                    })
                    .collect(),
            })
        })
        .collect()
}

/// How the optimum was found: its pauses (which the idle-timed schedule shares), and the
/// delays it left uncounted (the best of [`OPTIMUM_TOLERANCE_MS`] by p99).
#[derive(Debug, Clone)]
pub struct OptimumSettings {
    pub pauses: OptimumPauses,
    pub tolerance_ms: Option<f64>,
}

/// Whether the optimum may pause as what a freeze leaves: from the peak RSS the run's `freeze`
/// trials held against the default's (the scoreboard's measure and bound).
fn optimum_pauses(run: &RunData, cal: &Calibration) -> OptimumPauses {
    let analysis = neurogc_report::analyse(run, None);
    let freezes: Vec<(String, f64)> = analysis
        .policies
        .iter()
        .zip(analysis.peak_rss_to_default())
        .filter(|(p, _)| kind_of(&p.spec) == Kind::Frozen)
        .filter_map(|(p, ratio)| Some((p.label.clone(), ratio?)))
        .collect();
    OptimumPauses::choose(&freezes, RSS_BOUND, cal.frozen.is_some())
}

/// The whole simulation of a run.
pub fn simulate(args: &SimulateArgs) -> Result<Simulation> {
    let run = RunData::load(&args.run_dir)?;
    let mut traces: Vec<(Trace, Kind)> = Vec::new();
    let mut skipped = Vec::new();
    for t in run.trials.iter().filter(|t| usable(t)) {
        match Trace::of_trial(t) {
            Ok(tr) => {
                let kind = kind_of(&tr.spec);
                traces.push((tr, kind));
            }
            Err(e) => skipped.push(format!("{e:#}")),
        }
    }
    if traces.is_empty() {
        bail!(
            "{}: no trial to replay: {}",
            args.run_dir.display(),
            if skipped.is_empty() {
                "no complete trial".to_string()
            } else {
                skipped.join("; ")
            }
        );
    }
    let base: Vec<&Trace> = traces
        .iter()
        .map(|(t, _)| t)
        .filter(|t| t.label == args.trace)
        .collect();
    if base.is_empty() {
        let labels: Vec<&str> = traces.iter().map(|(t, _)| t.label.as_str()).collect();
        bail!(
            "--trace {}: no such trial in {} (it has {})",
            args.trace,
            args.run_dir.display(),
            labels.join(", ")
        );
    }
    let cal = Calibration::of(&traces);
    let specs: Vec<String> = if args.policies.is_empty() {
        let mut seen: Vec<String> = Vec::new();
        for (t, _) in &traces {
            if !seen.contains(&t.spec) {
                seen.push(t.spec.clone());
            }
        }
        seen
    } else {
        args.policies.clone()
    };
    // A spec's live p99 is that of the first policy of the run with it (the suite runs
    // `default` twice, as `default` and `default-aa`: the second is its A/A pair, not more of it).
    let live = |spec: &str| -> Option<f64> {
        let (first, _) = traces.iter().find(|(t, _)| t.spec == spec)?;
        let lat: Vec<f64> = traces
            .iter()
            .filter(|(t, _)| t.label == first.label)
            .flat_map(|(t, _)| t.latency.iter().copied())
            .collect();
        quantile(&lat, 0.99).map(|s| s * 1e3)
    };
    let mut results = Vec::new();
    let mut not_modelled = Vec::new();
    for spec in &specs {
        let built = replay_all(&base, &mut |t| policies::build(spec, &cal, t.per_request));
        match built {
            Ok(outcome) => results.push(Replayed {
                name: spec.clone(),
                role: Role::Policy,
                outcome,
                live_p99_ms: live(spec),
            }),
            Err(e) if args.policies.is_empty() => not_modelled.push(format!("{e:#}")),
            Err(e) => return Err(e),
        }
    }
    // The hindsight optimum: the cheapest collections that keep the memory bound (a frozen
    // heap's, where a freeze kept it), no further apart than the default's.
    let pauses = optimum_pauses(&run, &cal);
    let opt_fit = if pauses.frozen {
        cal.frozen
    } else {
        cal.unfrozen
    };
    let opt_gap = cal.default_every;
    let mut tolerance_ms = None;
    if let (Some(fit), Some(gap)) = (opt_fit, opt_gap) {
        let gap = gap as usize;
        let best = best_by_p99(OPTIMUM_TOLERANCE_MS.into_iter().map(|tolerance| {
            let outcome = replay_all(&base, &mut |t| {
                let plan = optimum::optimum(&t.arrivals, &t.work, fit, gap, tolerance);
                Ok(Box::new(policies::Schedule::new(plan)))
            })?;
            Ok((tolerance, outcome))
        }))?;
        if let Some((tolerance, outcome)) = best {
            tolerance_ms = Some(tolerance);
            results.push(Replayed {
                name: "optimum (hindsight)".into(),
                role: Role::Optimum,
                outcome,
                live_p99_ms: None,
            });
        }
        // The same pauses and spacing without foresight: the best of the idle-timed cadences.
        let best = best_by_p99(
            IDLE_TIMED_AFTER
                .into_iter()
                .filter(|&a| a < gap)
                .chain([gap])
                .map(|after| {
                    let outcome = replay_all(&base, &mut |_| {
                        Ok(Box::new(policies::IdleTimed::new(after, gap, fit)))
                    })?;
                    Ok((after, outcome))
                }),
        )?;
        if let Some((after, outcome)) = best {
            results.push(Replayed {
                name: format!("idle-timed (at least {after} requests apart)"),
                role: Role::IdleTimed,
                outcome,
                live_p99_ms: None,
            });
        }
    }
    if opt_fit.is_none() {
        not_modelled.push(format!(
            "No optimum: its pauses would be those of {} ({}), and the run measured none.",
            pauses.noun(),
            pauses.why
        ));
    }
    let optimum = opt_fit.zip(opt_gap).map(|_| OptimumSettings {
        pauses,
        tolerance_ms,
    });
    let live_tail = live_tails(&traces);
    let mut md = markdown(
        args,
        &base,
        &cal,
        optimum.as_ref(),
        &results,
        &not_modelled,
        &skipped,
    );
    tail_section(&mut md, &live_tail);
    Ok(Simulation {
        md,
        results,
        optimum,
        live_tail,
    })
}

fn fmt_ms(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

fn markdown(
    args: &SimulateArgs,
    base: &[&Trace],
    cal: &Calibration,
    optimum: Option<&OptimumSettings>,
    results: &[Replayed],
    not_modelled: &[String],
    skipped: &[String],
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Simulation of `{}`\n", args.run_dir.display());
    let requests: usize = base.iter().map(|t| t.arrivals.len()).sum();
    let seconds: f64 = base.iter().map(|t| t.length).sum();
    let _ = writeln!(
        md,
        "Traffic replayed: the `{}` trial{} — {requests} requests over {seconds:.1} s of the \
         server's own time (turns joined), {:.1} req/s; each request's work as recorded, its \
         full-collection pauses taken out.\n",
        args.trace,
        if base.len() > 1 { "s" } else { "" },
        requests as f64 / seconds.max(1e-9)
    );
    let fit = |f: Option<model::PauseFit>| {
        f.map_or_else(
            || "not measured".to_string(),
            |f| format!("{:.2} + {:.4}·w ms ({} collections)", f.a, f.b, f.points),
        )
    };
    let every = |e: Option<f64>| e.map_or_else(|| "n/a".into(), |e| format!("{e:.0}"));
    let _ = writeln!(
        md,
        "Pause of a full collection after w requests, fitted to the run's own: unfrozen heap {}; \
         what a freeze leaves {}. CPython's rule collected every {} requests under `default`, \
         every {} after a freeze. From: {}.\n",
        fit(cal.unfrozen),
        fit(cal.frozen),
        every(cal.default_every),
        every(cal.frozen_every),
        cal.sources.join(", ")
    );
    let _ = writeln!(
        md,
        "| policy | p50 ms | p99 ms | p99.9 ms | max ms | full collections | meeting requests in flight | pause total ms | live p99 ms | p99 error |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in results {
        let p99 = r.p_ms(0.99);
        let error = match (p99, r.live_p99_ms) {
            (Some(s), Some(l)) if l > 0.0 => format!("{:+.0} %", (s / l - 1.0) * 100.0),
            _ => String::new(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {error} |",
            r.name,
            fmt_ms(r.p_ms(0.5)),
            fmt_ms(p99),
            fmt_ms(r.p_ms(0.999)),
            fmt_ms(r.p_ms(1.0)),
            r.outcome.collections,
            r.outcome.met,
            r.outcome.pause_total_ms,
            fmt_ms(r.live_p99_ms),
        );
    }
    md.push('\n');
    let pairs: Vec<(f64, f64)> = results
        .iter()
        .filter_map(|r| Some((r.p_ms(0.99)?, r.live_p99_ms?)))
        .collect();
    let (sim, live): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    match spearman(&sim, &live) {
        Some(rho) => {
            let _ = writeln!(
                md,
                "Order of the {} policies recorded live, by p99: Spearman ρ = {rho:.2} between \
                 the replay and the live runs.\n",
                pairs.len()
            );
        }
        None => {
            let _ = writeln!(
                md,
                "Fewer than three policies recorded live: no order to compare.\n"
            );
        }
    }
    if let Some(opt) = results.iter().find(|r| r.role == Role::Optimum) {
        let _ = writeln!(
            md,
            "The optimum: knowing every arrival, collections placed right after requests end \
             where they delay the fewest requests by more than {} ms (of {} ms, the best by p99), \
             at most {} requests apart (the default's spacing: the garbage it lets pile up), \
             each pausing as a collection of {} does ({}); {} collections, {} requests met. \
             Distance from it, p99: {}.\n",
            optimum
                .and_then(|o| o.tolerance_ms)
                .map_or_else(|| "n/a".into(), |t| format!("{t:.0}")),
            OPTIMUM_TOLERANCE_MS.map(|t| format!("{t:.0}")).join(", "),
            every(cal.default_every),
            optimum.map_or("the heap", |o| o.pauses.noun()),
            optimum.map_or("as measured", |o| o.pauses.why.as_str()),
            opt.outcome.collections,
            opt.outcome.met,
            results
                .iter()
                .filter(|r| r.role != Role::Optimum)
                .filter_map(|r| Some(format!(
                    "{} {:.2}×",
                    r.name,
                    r.p_ms(0.99)? / opt.p_ms(0.99)?.max(1e-9)
                )))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(idle) = results.iter().find(|r| r.role == Role::IdleTimed) {
        let off = results
            .iter()
            .find(|r| r.name == "gc-off")
            .and_then(|r| r.p_ms(0.99));
        let against_off = match (idle.p_ms(0.99), off) {
            (Some(p), Some(o)) if o > 0.0 => format!(", {:.2}× `gc-off`'s", p / o),
            _ => String::new(),
        };
        let tried: Vec<String> = IDLE_TIMED_AFTER.iter().map(|a| a.to_string()).collect();
        let plural = if idle.outcome.collections == 1 {
            ""
        } else {
            "s"
        };
        // The optimum counts delayed requests and does not see the queue a pause leaves, so on
        // a busy trace this schedule can come out ahead of it.
        let opt_p99 = results
            .iter()
            .find(|r| r.role == Role::Optimum)
            .and_then(|r| r.p_ms(0.99));
        let gain = match (idle.p_ms(0.99), opt_p99) {
            (Some(i), Some(o)) if i > o => {
                "between it and the optimum lies what predicting arrivals could gain"
            }
            (Some(_), Some(_)) => {
                "here it is no slower than the optimum, whose count of delayed requests does not \
                 see the queue a pause leaves behind"
            }
            _ => "no optimum to compare it with",
        };
        let _ = writeln!(
            md,
            "Without foresight: the same pauses and spacing, each collection at the first moment \
             a request ends with nothing waiting once at least W requests have ended since the \
             last (at the spacing whatever is in flight); of W = {} (up to the spacing), the \
             best by p99 is {}: p99 {} ms{against_off}, {} collection{plural} ({} met requests \
             in flight). Its pauses still meet the requests that arrive during them, which only \
             foresight avoids: {gain}.\n",
            tried.join(", "),
            idle.name,
            fmt_ms(idle.p_ms(0.99)),
            idle.outcome.collections,
            idle.outcome.met,
        );
    }
    let _ = writeln!(
        md,
        "Not modelled: memory (the replay's `neurogc` sees a constant RSS, so its growth, \
         staleness and guard rules never fire), the young generation (taken as recorded, so \
         thresholds and the young-threshold tuning are not replayed), and requests served \
         concurrently (one worker answers in order)."
    );
    for n in not_modelled.iter().chain(skipped) {
        let _ = writeln!(md, "\n- {n}");
    }
    md
}

/// The live runs' side: what each policy's slowest requests met.
fn tail_section(md: &mut String, tails: &[LiveTail]) {
    if tails.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## What the slowest 1 % of the live requests met\n\n\
         Recorded, not replayed: for each policy's slowest 1 % of requests (its trials pooled), \
         the longest collection whose pause overlapped each one, from its intended start to its \
         end: a full collection the policy ran (by its reason), one CPython started, only young \
         or middle collections (which every policy here leaves to CPython, and the GC-off bound \
         never runs), or none (it waited behind other requests, or the server was slow for \
         another reason); in brackets, the median time collections of any kind took of those \
         requests.\n\n\
         | policy | live p99 ms | slowest 1 %: what they met |\n|---|---:|---|"
    );
    for t in tails {
        let total: usize = t.met.iter().map(|m| m.requests).sum();
        let parts: Vec<String> = t
            .met
            .iter()
            .map(|m| {
                format!(
                    "{} {} ({} ms)",
                    m.met,
                    m.requests,
                    fmt_ms(Some(m.paused_ms))
                )
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {total}: {} |",
            t.label,
            fmt_ms(Some(t.p99_ms)),
            parts.join(", ")
        );
    }
}

/// One policy's line of `simulation.json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PolicyLine {
    pub policy: String,
    pub role: Role,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub collections: usize,
    pub live_p99_ms: Option<f64>,
    /// Replayed p99 over live p99, less 1.
    pub p99_error: Option<f64>,
}

/// `simulation.json`: what the Markdown shows, for scripts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub run: String,
    pub trace: String,
    pub policies: Vec<PolicyLine>,
    /// Spearman's ρ of the replayed and live p99s, over the policies recorded live.
    pub rank_correlation: Option<f64>,
    /// The optimum's (and the idle-timed schedule's) pauses: those of what a freeze leaves
    /// (`true`), or of the whole heap, where a freeze breaks the memory bound; and why.
    pub optimum_pauses_frozen: Option<bool>,
    pub optimum_pauses_why: Option<String>,
    /// The delays (ms) the optimum left uncounted.
    pub optimum_tolerance_ms: Option<f64>,
    /// What the slowest 1 % of each live policy's requests met.
    pub live_tail: Vec<LiveTail>,
}

pub fn summary(args: &SimulateArgs, sim: &Simulation) -> Summary {
    let policies: Vec<PolicyLine> = sim
        .results
        .iter()
        .map(|r| {
            let p99 = r.p_ms(0.99);
            PolicyLine {
                policy: r.name.clone(),
                role: r.role,
                p50_ms: r.p_ms(0.5),
                p99_ms: p99,
                p999_ms: r.p_ms(0.999),
                collections: r.outcome.collections,
                live_p99_ms: r.live_p99_ms,
                p99_error: match (p99, r.live_p99_ms) {
                    (Some(s), Some(l)) if l > 0.0 => Some(s / l - 1.0),
                    _ => None,
                },
            }
        })
        .collect();
    let (replayed, live): (Vec<f64>, Vec<f64>) = policies
        .iter()
        .filter_map(|p| Some((p.p99_ms?, p.live_p99_ms?)))
        .unzip();
    Summary {
        run: args.run_dir.display().to_string(),
        trace: args.trace.clone(),
        rank_correlation: spearman(&replayed, &live),
        optimum_pauses_frozen: sim.optimum.as_ref().map(|o| o.pauses.frozen),
        optimum_pauses_why: sim.optimum.as_ref().map(|o| o.pauses.why.clone()),
        optimum_tolerance_ms: sim.optimum.as_ref().and_then(|o| o.tolerance_ms),
        live_tail: sim.live_tail.clone(),
        policies,
    }
}

/// Runs `neurogc simulate`; prints the table, writes the Markdown and `simulation.json` beside
/// it. Returns the exit code.
pub fn run(args: SimulateArgs) -> Result<i32> {
    let sim = simulate(&args)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.run_dir.join("simulation.md"));
    let json = serde_json::to_string_pretty(&summary(&args, &sim))?;
    for (path, text) in [
        (out.clone(), sim.md.as_str()),
        (out.with_extension("json"), &json),
    ] {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("{}", sim.md);
    eprintln!("simulation: {}", out.display());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_schedule_is_the_lowest_p99_and_of_two_alike_the_sparser() {
        let outcome = |p99_ms: f64, collections: usize| Outcome {
            latency: vec![p99_ms / 1e3; 10],
            collections,
            ..Outcome::default()
        };
        let tried = [
            Ok((0.0, outcome(30.0, 5))),
            Ok((5.0, outcome(12.0, 40))),
            Ok((10.0, outcome(12.0, 20))),
            Ok((20.0, outcome(15.0, 10))),
        ];
        let (key, best) = best_by_p99(tried).unwrap().unwrap();
        assert_eq!((key, best.collections), (10.0, 20));
        assert!(best_by_p99(Vec::<Result<(f64, Outcome)>>::new())
            .unwrap()
            .is_none());
        // A replay that fails fails the search.
        let failed = [
            Ok((0.0, outcome(1.0, 1))),
            Err(anyhow::anyhow!("bad trace")),
        ];
        assert!(best_by_p99(failed).is_err());
    }

    #[test]
    fn spearman_of_orders() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0, 2.0], &[1.0, 2.0]), None);
    }
}
