//! The suite's scoreboard: for every workload, which fixed policy is best, and how far every
//! policy is from it and from the GC-off bound, with intervals and significance from the rounds
//! of its turns run (paired: the policies of a round ran in the same minutes).
//!
//! Latency percentiles are those of all a policy's requests, pooled over its rounds (see
//! [`crate::pooled`] for why not the median of each round's own), with bootstrap intervals that
//! resample rounds; memory and CPU are medians over rounds.
//!
//! A policy is one of three kinds ([`Kind::of`]): a fixed recipe users apply today (`default`,
//! `freeze`, `threshold:…`, `periodic:…`), the bound (`gc-off`: collector off, no guard; what
//! collecting less could gain at most, on a bounded run), or a learned policy (`neurogc-seed`,
//! `neurogc`). "Best fixed" is the fixed recipe with the lowest pooled p99 among those whose peak
//! RSS stays within [`RSS_BOUND`] × the default's: the memory bound the learned scheduler is held
//! to. A recipe that buys its p99 with more memory than that (a threshold so high that no full
//! collection comes in the window, whose garbage piles up) is named beside it, not as the best.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use neurogc_core::policy::{PolicySpec, SchedulerConfig};
use neurogc_model::SchedulerModel;
use neurogc_stats::ConfidenceInterval;
use plotters::prelude::*;
use serde::Serialize;

use crate::aggregate::{bootstrap, Analysis, PolicyStats};
use crate::format::{cell_text, num, pct_abs};
use crate::metric::Metric;
use crate::noise::Design;
use crate::pooled::{self, Unit};
use crate::rundir::RunData;

/// What a policy is, for the scoreboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Fixed,
    Bound,
    Learned,
}

impl Kind {
    pub fn of(spec: &str) -> Kind {
        // Every variant named, so a new policy must be classified here to compile.
        match spec.parse::<PolicySpec>() {
            Ok(PolicySpec::GcOff) => Kind::Bound,
            Ok(PolicySpec::NeurogcSeed { .. } | PolicySpec::Neurogc { .. }) => Kind::Learned,
            // Random collections to learn from: no recipe anyone applies, never the best fixed.
            Ok(PolicySpec::Explore { .. }) => Kind::Learned,
            Ok(
                PolicySpec::Default
                | PolicySpec::Threshold(_)
                | PolicySpec::Periodic { .. }
                | PolicySpec::Freeze { .. },
            ) => Kind::Fixed,
            // A policy this build does not know is not a recipe anyone applies.
            Err(_) => Kind::Learned,
        }
    }
}

/// One workload's run, analysed, with what the suite knows of it.
pub struct WorkloadRun {
    pub name: String,
    pub story: String,
    pub expects: Vec<String>,
    pub run: RunData,
    pub analysis: Analysis,
}

/// A ratio to a reference policy over paired rounds.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
    /// Its 95 % bootstrap interval (rounds resampled in pairs) excludes 1.
    pub significant: bool,
}

/// One policy on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub label: String,
    pub spec: String,
    pub kind: Kind,
    pub rounds: usize,
    pub p99_ms: Option<Interval>,
    pub p999_ms: Option<Interval>,
    pub rss_peak_mib: Option<Interval>,
    pub cpu_ms_per_request: Option<Interval>,
    /// p99 against the workload's best fixed policy (itself: 1).
    pub to_best: Option<Ratio>,
    /// p99 against the GC-off bound.
    pub to_bound: Option<Ratio>,
    /// p99 against `default`, the hyperfine-style sentence.
    pub vs_default: Option<String>,
    /// p99 against `default`, as a ratio (absent for `default` itself).
    pub to_default: Option<Ratio>,
    /// Collections of the middle and old generations in its measured rounds: none means what
    /// it defers (and its pauses) fall outside the window.
    pub old_collections: Option<u64>,
    /// The run's peak RSS (the largest of its rounds') over the default's.
    pub rss_to_default: Option<f64>,
    /// An earlier policy of the run that is this one (the same spec, or a `neurogc` whose model
    /// adds nothing beside `neurogc` without one): the two are an A/A pair on this workload, and
    /// this one is no candidate for the best fixed policy.
    pub same_policy_as: Option<String>,
    /// p99 against that policy's: how far one policy's p99 moves between two servers here.
    pub to_same: Option<Ratio>,
}

impl Cell {
    /// A fixed recipe in its own right (not a second run of another policy of the run).
    fn is_fixed_recipe(&self) -> bool {
        self.kind == Kind::Fixed && self.same_policy_as.is_none()
    }

    /// Within the memory bound ([`RSS_BOUND`]); true where it cannot be told.
    pub fn within_rss_bound(&self) -> bool {
        self.rss_to_default.is_none_or(|r| r <= RSS_BOUND)
    }

    /// Significantly slower than the workload's best fixed policy.
    fn significantly_worse(&self) -> bool {
        self.to_best
            .as_ref()
            .is_some_and(|r| r.significant && r.estimate > 1.0)
    }

    /// As good as the workload's best fixed policy could be: not significantly slower, within
    /// the memory bound the best is chosen under.
    fn best_here(&self) -> bool {
        self.to_best.is_some() && !self.significantly_worse() && self.within_rss_bound()
    }

    /// Why it is not [`Cell::best_here`], if it is not.
    fn not_best_because(&self) -> Option<String> {
        let slower = self
            .to_best
            .as_ref()
            .filter(|_| self.significantly_worse())
            .map(|r| format!("p99 {}", ratio_text(r)));
        let memory = self
            .rss_to_default
            .filter(|_| !self.within_rss_bound())
            .map(|r| format!("peak RSS {r:.2}× the default's"));
        match (slower, memory) {
            (None, None) if self.to_best.is_none() => Some("not scored".into()),
            (None, None) => None,
            (a, b) => Some(a.into_iter().chain(b).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// A median with its 95 % bootstrap interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Interval {
    pub median: f64,
    pub lower: f64,
    pub upper: f64,
}

impl From<ConfidenceInterval> for Interval {
    fn from(c: ConfidenceInterval) -> Self {
        Interval {
            median: c.estimate,
            lower: c.lower,
            upper: c.upper,
        }
    }
}

/// Whether the workload showed the GC story it claims, in the default policy's records.
#[derive(Clone, Debug, Serialize)]
pub struct StoryCheck {
    pub marker: String,
    pub shown: bool,
    pub evidence: String,
}

/// One workload's scores.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadScore {
    pub name: String,
    pub story: String,
    /// req/s the probed servers sustained (the lowest), and the rate every policy ran at.
    pub capacity_rps: Option<f64>,
    /// The probed policy whose capacity was the lowest (the one the rate follows).
    pub capacity_limited_by: Option<String>,
    pub rate_rps: Option<f64>,
    /// The check, before the bench, of a capacity found earlier (the explore run's).
    pub capacity_recheck: Option<neurogc_record::RateRecheck>,
    /// The fixed recipe with the lowest p99 within the memory bound.
    pub best_fixed: Option<String>,
    /// The fixed recipe with the lowest p99 regardless of memory, where that is another one.
    pub fastest_fixed: Option<String>,
    pub bound: Option<String>,
    pub cells: Vec<Cell>,
    pub story_checks: Vec<StoryCheck>,
    /// The A/A noise floor of the pooled p99 that applies (this design's), and where it comes
    /// from.
    pub p99_floor: Option<f64>,
    pub floor_origin: Option<String>,
    pub design: String,
    /// The policies in the order their servers started and took their turns.
    pub order: Vec<String>,
    /// That order was shuffled (`--shuffle`), not the listed one.
    pub shuffled: bool,
    /// A throwaway server (`--primer`) started before them.
    pub primed: bool,
}

/// The whole scoreboard.
#[derive(Clone, Debug, Serialize)]
pub struct Scoreboard {
    pub workloads: Vec<WorkloadScore>,
    /// Fixed policies not significantly worse than the best on every workload.
    pub best_everywhere: Vec<String>,
}

const P99: f64 = 0.99;

/// A fixed recipe is a candidate for the best only with a peak RSS (over the whole run) within
/// this many times the default's.
pub const RSS_BOUND: f64 = 1.10;

/// Pooled p99 of `cand` over that of `base`.
/// `cand`'s pooled p99 over `base`'s; significant when its interval excludes 1 and, where an
/// A/A floor of the pooled p99 holds for the design, the ratio is further from 1 than it.
fn ratio(base: &[Unit<'_>], cand: &[Unit<'_>], floor: Option<f64>) -> Option<Ratio> {
    Some(marked(
        &pooled::ratio_ci(base, cand, P99, &bootstrap())?,
        floor,
    ))
}

/// A ratio's interval, significant when it excludes 1 and the ratio is beyond the floor.
fn marked(r: &ConfidenceInterval, floor: Option<f64>) -> Ratio {
    Ratio {
        estimate: r.estimate,
        lower: r.lower,
        upper: r.upper,
        significant: !r.contains(1.0) && floor.is_none_or(|f| (r.estimate - 1.0).abs() > f),
    }
}

fn interval(p: &PolicyStats, m: Metric) -> Option<Interval> {
    p.medians.get(&m).copied().map(Interval::from)
}

fn pooled_interval(units: &[Unit<'_>], q: f64) -> Option<Interval> {
    pooled::quantile_ci(units, q, &bootstrap()).map(Interval::from)
}

/// What a policy's decisions depend on: its spec; for `neurogc`, its settings and its model
/// where the model adds something (one that adds nothing leaves every decision as without it).
#[derive(Debug, PartialEq)]
enum Decisions {
    Scheduler(SchedulerConfig, Option<PathBuf>),
    Spec(String),
}

/// The [`Decisions`] of `spec`; `None` where whether its model adds anything cannot be told
/// (`adds_nothing` answers `None`: a model that cannot be read).
fn decided_by(spec: &str, adds_nothing: impl Fn(&Path) -> Option<bool>) -> Option<Decisions> {
    let Ok(PolicySpec::Neurogc { config, model }) = spec.parse::<PolicySpec>() else {
        return Some(Decisions::Spec(spec.trim().to_string()));
    };
    let model = match model {
        Some(dir) if !adds_nothing(&dir)? => Some(dir),
        _ => None,
    };
    Some(Decisions::Scheduler(config, model))
}

/// Whether the scheduler model in `dir` adds nothing; `None` where it cannot be read.
fn model_adds_nothing(dir: &Path) -> Option<bool> {
    SchedulerModel::load(dir).ok().map(|m| m.adds_nothing())
}

/// For each policy, the first earlier one with the same [`Decisions`]: the same policy again.
fn same_policy(specs: &[&str], adds_nothing: impl Fn(&Path) -> Option<bool>) -> Vec<Option<usize>> {
    let decided: Vec<Option<Decisions>> =
        specs.iter().map(|s| decided_by(s, &adds_nothing)).collect();
    (0..specs.len())
        .map(|i| {
            let d = decided[i].as_ref()?;
            (0..i).find(|&j| decided[j].as_ref() == Some(d))
        })
        .collect()
}

/// Scores every workload.
pub fn score(runs: &[WorkloadRun]) -> Scoreboard {
    let workloads: Vec<WorkloadScore> = runs.iter().map(score_workload).collect();
    Scoreboard {
        best_everywhere: best_everywhere(&workloads),
        workloads,
    }
}

/// The fixed recipes of the workloads' runs, in first-seen order (a recipe's second run, an A/A
/// pair's, is not a recipe of its own).
fn fixed_recipes(workloads: &[WorkloadScore]) -> Vec<&str> {
    let mut fixed: Vec<&str> = Vec::new();
    for c in workloads.iter().flat_map(|w| &w.cells) {
        if c.is_fixed_recipe() && !fixed.contains(&c.label.as_str()) {
            fixed.push(&c.label);
        }
    }
    fixed
}

/// The fixed recipes that are, on every workload, the best or not significantly worse than it.
fn best_everywhere(workloads: &[WorkloadScore]) -> Vec<String> {
    fixed_recipes(workloads)
        .into_iter()
        .filter(|label| {
            workloads
                .iter()
                .all(|w| w.cells.iter().any(|c| c.label == *label && c.best_here()))
        })
        .map(str::to_string)
        .collect()
}

fn score_workload(w: &WorkloadRun) -> WorkloadScore {
    let a = &w.analysis;
    let kinds: Vec<Kind> = a.policies.iter().map(|p| Kind::of(&p.spec)).collect();
    let units: Vec<Vec<Unit>> = a.policies.iter().map(|p| pooled::units(a, p)).collect();
    let p99: Vec<Option<Interval>> = units.iter().map(|u| pooled_interval(u, P99)).collect();
    let kinds = &kinds;
    let of_kind = |kind: Kind| (0..kinds.len()).filter(move |&i| kinds[i] == kind);
    let default = a.policies.iter().position(|p| p.spec == "default");
    let rss_to_default = a.peak_rss_to_default();
    let specs: Vec<&str> = a.policies.iter().map(|p| p.spec.as_str()).collect();
    let same = same_policy(&specs, model_adds_nothing);
    // A policy run a second time (the A/A pair's second) is no candidate of its own.
    let fixed = candidates(kinds, &same, &p99, &rss_to_default);
    let (best, fastest) = best_and_fastest(&fixed);
    let bound = of_kind(Kind::Bound).next();
    // The floor of the statistic scored here (the pooled p99), from an A/A run of this design.
    let p99_floor = a.floors.as_ref().and_then(|f| f.file.p99_all);
    // Each policy's p99 against the default's, once: the sentence and the ratio come from it.
    let against_default: Vec<Option<ConfidenceInterval>> = (0..a.policies.len())
        .map(|i| {
            let d = default.filter(|&d| d != i)?;
            pooled::ratio_ci(&units[d], &units[i], P99, &bootstrap())
        })
        .collect();
    let cells = a
        .policies
        .iter()
        .enumerate()
        .map(|(i, p)| Cell {
            label: p.label.clone(),
            spec: p.spec.clone(),
            kind: kinds[i],
            rounds: units[i].len(),
            p99_ms: p99[i],
            p999_ms: pooled_interval(&units[i], 0.999),
            rss_peak_mib: interval(p, Metric::RssPeak),
            cpu_ms_per_request: interval(p, Metric::CpuPerRequest),
            to_best: best.and_then(|b| ratio(&units[b], &units[i], p99_floor)),
            to_bound: bound.and_then(|b| ratio(&units[b], &units[i], p99_floor)),
            vs_default: against_default[i].as_ref().zip(default).map(|(r, d)| {
                let mut s = pooled::sentence("p99", &p.label, &a.policies[d].label, r);
                if !r.contains(1.0) && p99_floor.is_some_and(|f| (r.estimate - 1.0).abs() <= f) {
                    s.push_str(" (within the A/A floor)");
                }
                s
            }),
            to_default: against_default[i].as_ref().map(|r| marked(r, p99_floor)),
            old_collections: old_collections(a, p),
            rss_to_default: rss_to_default[i],
            same_policy_as: same[i].map(|j| a.policies[j].label.clone()),
            // No floor: this pair is what measures one.
            to_same: same[i].and_then(|j| ratio(&units[j], &units[i], None)),
        })
        .collect();
    WorkloadScore {
        name: w.name.clone(),
        story: w.story.clone(),
        capacity_rps: w.run.rate_search.as_ref().map(|r| r.sustainable_rps),
        capacity_limited_by: w.run.rate_search.as_ref().map(|r| r.limited_by.clone()),
        rate_rps: w.run.rate_search.as_ref().map(|r| r.rate),
        capacity_recheck: w.run.rate_search.as_ref().and_then(|r| r.recheck.clone()),
        best_fixed: best.map(|b| a.policies[b].label.clone()),
        fastest_fixed: fastest.map(|f| a.policies[f].label.clone()),
        bound: bound.map(|b| a.policies[b].label.clone()),
        cells,
        story_checks: story_checks(w),
        p99_floor,
        floor_origin: p99_floor.and(a.floors.as_ref()).map(|f| f.origin.clone()),
        design: Design::of(&w.run.info).describe(),
        order: start_order(&w.run),
        shuffled: w.run.info.shuffle.is_some(),
        primed: w.run.info.primer,
    }
}

/// The labels of the first repetition's trials in the order their servers started.
fn start_order(run: &RunData) -> Vec<String> {
    let mut started: Vec<(f64, &str)> = run
        .trials
        .iter()
        .filter_map(|t| t.info.as_ref())
        .filter(|i| i.repetition == 1)
        .filter_map(|i| Some((i.started?, i.label.as_str())))
        .collect();
    started.sort_by(|a, b| a.0.total_cmp(&b.0));
    started.into_iter().map(|(_, l)| l.to_string()).collect()
}

/// A fixed recipe in the running for the best.
struct Candidate {
    index: usize,
    p99_ms: f64,
    rss_to_default: Option<f64>,
}

/// The fixed recipes with a p99, each once: a policy run a second time (the second of an A/A
/// pair, `same[i]` set) is no candidate of its own.
fn candidates(
    kinds: &[Kind],
    same: &[Option<usize>],
    p99: &[Option<Interval>],
    rss_to_default: &[Option<f64>],
) -> Vec<Candidate> {
    (0..kinds.len())
        .filter(|&i| kinds[i] == Kind::Fixed && same[i].is_none())
        .filter_map(|i| {
            Some(Candidate {
                index: i,
                p99_ms: p99[i]?.median,
                rss_to_default: rss_to_default[i],
            })
        })
        .collect()
}

/// The best fixed recipe (the lowest p99 within the memory bound; where the peak RSS is unknown
/// it is not held against the recipe), and the one with the lowest p99 regardless of memory
/// where that is another: as their `index`es.
fn best_and_fastest(fixed: &[Candidate]) -> (Option<usize>, Option<usize>) {
    let lowest = |within_bound: bool| {
        fixed
            .iter()
            .filter(|c| !within_bound || c.rss_to_default.is_none_or(|r| r <= RSS_BOUND))
            .min_by(|x, y| x.p99_ms.total_cmp(&y.p99_ms))
            .map(|c| c.index)
    };
    let best = lowest(true);
    (best, lowest(false).filter(|&f| Some(f) != best))
}

/// Where the best fixed policy (or the fastest regardless of memory) collected neither older
/// generation in its rounds, its p99 is that of a collector doing only young collections: what
/// it defers (the garbage that reaches the older generations, and the pauses of collecting it)
/// lies beyond the window. Said, with its memory beside the GC-off bound's.
fn deferred_notes(w: &WorkloadScore) -> Vec<String> {
    let rss = |c: &Cell| c.rss_peak_mib.map(|i| format!("{:.0} MiB", i.median));
    let bound = w
        .cells
        .iter()
        .find(|c| Some(&c.label) == w.bound.as_ref())
        .and_then(|c| Some(format!(", the GC-off bound's {}", rss(c)?)))
        .unwrap_or_default();
    [
        (&w.best_fixed, "the best fixed policy"),
        (
            &w.fastest_fixed,
            "the fastest fixed policy regardless of memory",
        ),
    ]
    .into_iter()
    .filter_map(|(label, role)| {
        let c = w.cells.iter().find(|c| Some(&c.label) == label.as_ref())?;
        (c.old_collections == Some(0)).then(|| {
            format!(
                "Caveat: {role}, {}, ran no collection of generation 1 or 2 in its {} rounds: \
                 the garbage that outlives its young collections piles up (peak RSS {}{bound}) \
                 and the pauses of collecting it fall after the window. Its p99 here is that \
                 of a longer run's quiet stretches, not of the whole run.",
                c.label,
                c.rounds,
                rss(c).unwrap_or_else(|| "n/a".into()),
            )
        })
    })
    .collect()
}

/// Names the fixed recipe that beat the best one's p99 with more memory than the bound allows.
fn fastest_note(w: &WorkloadScore) -> Option<String> {
    let fastest = w
        .cells
        .iter()
        .find(|c| Some(&c.label) == w.fastest_fixed.as_ref())?;
    let p99 = fastest.p99_ms?;
    Some(format!(
        "Beyond the memory bound: {} had the lowest p99 of the fixed recipes ({} ms, {} the \
         best fixed within the bound's) with a peak RSS {}× the default's, over the {RSS_BOUND:.2}× \
         a recipe may take to be the best here.",
        fastest.label,
        num(p99.median),
        fastest
            .to_best
            .as_ref()
            .map_or_else(|| "n/a ×".into(), ratio_text),
        fastest.rss_to_default.map_or_else(|| "n/a".into(), num),
    ))
}

/// Collections of generations 1 and 2 over the policy's measured units.
fn old_collections(a: &Analysis, p: &PolicyStats) -> Option<u64> {
    p.used
        .iter()
        .map(|&i| {
            let t = &a.trials[i];
            Some(t.get(Metric::Gen1Count)? + t.get(Metric::Gen2Count)?)
        })
        .sum::<Option<f64>>()
        .map(|n| n.round() as u64)
}

/// "old-garbage": the default's full collections in the measured rounds, at least this many...
const OLD_GARBAGE_COLLECTIONS: usize = 2;
/// ... freeing at least this many objects each (median): garbage that died old, not the
/// request objects in flight that the last middle collection happened to promote.
const OLD_GARBAGE_OBJECTS: f64 = 5_000.0;

/// Checks each claimed marker against what the runs recorded.
fn story_checks(w: &WorkloadRun) -> Vec<StoryCheck> {
    let a = &w.analysis;
    let collections = crate::collections::summarize(&w.run, a);
    let by_spec = |spec: &str| a.policies.iter().find(|p| p.spec == spec);
    let median = |p: Option<&PolicyStats>, m| p.and_then(|p| p.median(m));
    let default = by_spec("default");
    let seconds = Design::of(&w.run.info).unit_s;
    w.expects
        .iter()
        .map(|marker| {
            let (shown, evidence) = match marker.as_str() {
                "full-collections" => {
                    let n = median(default, Metric::Gen2Count).unwrap_or(0.0);
                    let max = median(default, Metric::Gen2Max).unwrap_or(0.0);
                    (
                        n > 0.0 && max >= 50.0,
                        format!(
                            "default: {} full collections per {} round (median), longest {} ms",
                            num(n),
                            crate::format::seconds(seconds),
                            num(max)
                        ),
                    )
                }
                "young-churn" => {
                    let n = median(default, Metric::Gen0Count).unwrap_or(0.0);
                    let per_s = n / seconds.max(1e-9);
                    (
                        per_s >= 10.0,
                        format!("default: {} young collections per second", num(per_s)),
                    )
                }
                "old-garbage" => {
                    // Over the whole measured time, not per round: a full collection every
                    // several seconds is rarer than one per turn.
                    let full = collections.iter().find(|c| c.label == "default");
                    let (n, freed) = full.map_or((0, None), |c| (c.full, c.full_collected));
                    (
                        n >= OLD_GARBAGE_COLLECTIONS
                            && freed.is_some_and(|f| f >= OLD_GARBAGE_OBJECTS),
                        format!(
                            "default: {n} full collections in the measured rounds, freeing {} \
                             objects each (median)",
                            freed.map_or_else(|| "n/a".into(), num)
                        ),
                    )
                }
                "rss-grows-when-frozen" => {
                    // The run's peaks: growth shows in the last rounds.
                    let d = default.and_then(|p| p.max(Metric::RssPeak));
                    // Every freeze recipe and the collector off, each against the default.
                    let grown: Vec<(String, f64)> = a
                        .policies
                        .iter()
                        .filter(|p| {
                            matches!(
                                p.spec.parse::<PolicySpec>(),
                                Ok(PolicySpec::Freeze { .. } | PolicySpec::GcOff)
                            )
                        })
                        .filter_map(|p| Some((p.label.clone(), p.max(Metric::RssPeak)?)))
                        .collect();
                    match d {
                        Some(d) if !grown.is_empty() => (
                            grown.iter().any(|&(_, f)| f >= 1.1 * d),
                            format!(
                                "the run's peak RSS {} against default {} MiB",
                                grown
                                    .iter()
                                    .map(|(l, f)| format!("{l} {} MiB ({}×)", num(*f), num(f / d)))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                num(d)
                            ),
                        ),
                        _ => (false, "no freeze or gc-off run to compare".into()),
                    }
                }
                "idle-gaps" => {
                    let bursts = w
                        .run
                        .trials
                        .iter()
                        .any(|t| t.load_rows.iter().filter(|r| r.requests == 0).count() > 0);
                    (
                        bursts,
                        "seconds without a request inside the workload's own turns".into(),
                    )
                }
                other => (false, format!("unknown marker {other:?}")),
            };
            StoryCheck {
                marker: marker.clone(),
                shown,
                evidence,
            }
        })
        .collect()
}

fn ratio_text(r: &Ratio) -> String {
    format!("{}× ({}–{})", num(r.estimate), num(r.lower), num(r.upper))
}

fn interval_text(i: &Option<Interval>) -> String {
    i.map_or_else(
        || "n/a".into(),
        |i| format!("{} ({}–{})", num(i.median), num(i.lower), num(i.upper)),
    )
}

/// The policy columns, in first-seen order across workloads.
fn columns(s: &Scoreboard) -> Vec<(String, Kind)> {
    let mut cols: Vec<(String, Kind)> = Vec::new();
    for w in &s.workloads {
        for c in &w.cells {
            if !cols.iter().any(|(l, _)| *l == c.label) {
                cols.push((c.label.clone(), c.kind));
            }
        }
    }
    cols
}

fn heading(label: &str, kind: Kind) -> String {
    match kind {
        Kind::Bound => format!("{label} (bound)"),
        _ => label.to_string(),
    }
}

/// The scoreboard as Markdown. `header` is the suite's own preamble (command, machine, time).
pub fn markdown(s: &Scoreboard, header: &str, heatmap: Option<&str>) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# NeuroGC suite: where each GC policy wins\n");
    md.push_str(header);
    let cols = columns(s);
    let _ = writeln!(
        md,
        "## Scoreboard: p99 against the best fixed policy of each workload\n"
    );
    let _ = writeln!(
        md,
        "Each cell: the policy's p99 divided by the best fixed policy's, each the p99 of all \
         its requests over all its rounds (what its users saw over the run; a median of \
         per-round p99s would hide pauses rarer than one per round), with its 95 % bootstrap \
         interval (rounds resampled, the same rounds for both). ★ the best fixed policy: the \
         fixed recipe with the lowest p99 among those whose peak RSS over the run stays within \
         {RSS_BOUND:.2}× the default's (the memory bound the learned scheduler is held to; a recipe \
         beyond it is marked ‡ in the workload's table and named there); 🔴 \
         significantly worse than it (the interval excludes 1, and the ratio is beyond this \
         design's A/A floor where one was measured); 🟢 significantly better; ⚪ not \
         significantly different. The GC-off bound \
         runs the collector off with no guard: what collecting less could gain at most, on a \
         bounded run, never a policy for production.\n"
    );
    let _ = write!(md, "| workload | best fixed |");
    for (l, k) in &cols {
        let _ = write!(md, " {} |", cell_text(&heading(l, *k)));
    }
    let _ = write!(md, "\n|---|---|");
    for _ in &cols {
        md.push_str("---:|");
    }
    md.push('\n');
    for w in &s.workloads {
        let best = w.best_fixed.as_deref().unwrap_or("n/a");
        let best_p99 = w
            .cells
            .iter()
            .find(|c| Some(&c.label) == w.best_fixed.as_ref())
            .and_then(|c| c.p99_ms)
            .map_or_else(String::new, |i| format!(" ({} ms)", num(i.median)));
        let _ = write!(md, "| {} | {}{best_p99} |", w.name, cell_text(best));
        for (l, _) in &cols {
            let cell = w.cells.iter().find(|c| &c.label == l);
            let text = match cell {
                None => "—".to_string(),
                Some(c) if Some(&c.label) == w.best_fixed.as_ref() => "★ 1.00×".into(),
                Some(c) => match &c.to_best {
                    None => "n/a".into(),
                    Some(r) => {
                        let mark = match (r.significant, r.estimate > 1.0) {
                            (true, true) => "🔴",
                            (true, false) => "🟢",
                            _ => "⚪",
                        };
                        format!("{mark} {}", ratio_text(r))
                    }
                },
            };
            let _ = write!(md, " {} |", cell_text(&text));
        }
        md.push('\n');
    }
    md.push('\n');
    if let Some(h) = heatmap {
        let _ = writeln!(md, "![p99 against the best fixed policy]({h})\n");
    }
    bar_section(&mut md, s);
    same_policy_section(&mut md, s);
    let _ = writeln!(md, "## Is one fixed policy best on every workload?\n");
    if s.best_everywhere.is_empty() {
        let _ = writeln!(
            md,
            "**No.** Each fixed policy measured is, on some workload, significantly slower than \
             that workload's best or holds more than {RSS_BOUND:.2}× the default's memory: the \
             best recipe differs from one service to the next.\n"
        );
        for label in fixed_recipes(&s.workloads) {
            let why: Vec<String> = s
                .workloads
                .iter()
                .filter_map(|w| {
                    let c = w.cells.iter().find(|c| c.label == label)?;
                    Some(format!("{} ({})", w.name, c.not_best_because()?))
                })
                .collect();
            let _ = writeln!(md, "- {}: {}", cell_text(label), why.join("; "));
        }
        let _ = writeln!(md, "\nThe best fixed policy of each workload:\n");
        for w in &s.workloads {
            let fastest = w
                .fastest_fixed
                .as_ref()
                .map(|f| format!(" (lowest p99 regardless of memory: {f})"))
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "- {}: best fixed {}{fastest}",
                w.name,
                w.best_fixed.as_deref().unwrap_or("n/a")
            );
        }
        md.push('\n');
    } else {
        let _ = writeln!(
            md,
            "Not significantly worse than the best, within the memory bound, on every workload: \
             {}.\n",
            s.best_everywhere.join(", ")
        );
    }
    for w in &s.workloads {
        workload_section(&mut md, w);
    }
    md
}

fn workload_section(md: &mut String, w: &WorkloadScore) {
    let _ = writeln!(md, "## {}\n\n{}\n", w.name, w.story);
    if let (Some(cap), Some(rate)) = (w.capacity_rps, w.rate_rps) {
        let by = w.capacity_limited_by.as_deref().unwrap_or("gc-off");
        let checked = w.capacity_recheck.as_ref().map_or(String::new(), |c| {
            format!(" {}", crate::markdown::recheck_text(c))
        });
        let _ = writeln!(
            md,
            "Capacity {} req/s (the lowest found, under {by}, from throughput and the median); \
             every policy ran at {} req/s.{checked} Design: {}.\n",
            num(cap),
            num(rate),
            w.design
        );
    }
    if w.order.len() > 1 {
        let _ = writeln!(
            md,
            "Servers started and took their turns in this order ({}): {}.{}\n",
            if w.shuffled {
                "shuffled for this workload"
            } else {
                "as listed"
            },
            w.order.join(" → "),
            if w.primed {
                " Before them a throwaway server under `default` was started, warmed up and held \
                 stopped (`--primer`, not scored): the first start was none of theirs."
            } else {
                ""
            }
        );
    }
    if !w.story_checks.is_empty() {
        let _ = writeln!(md, "GC story, checked in this run's records:\n");
        for c in &w.story_checks {
            let _ = writeln!(
                md,
                "- {} {}: {}",
                if c.shown { "✔" } else { "✘" },
                c.marker,
                c.evidence
            );
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "| policy | p99 ms | p99.9 ms | peak RSS MiB | run's peak RSS / default's | CPU ms/request | gen 1 + 2 collections | p99 / best fixed | p99 / GC-off bound |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for c in &w.cells {
        let name = if Some(&c.label) == w.best_fixed.as_ref() {
            format!("**{}** ★", heading(&c.label, c.kind))
        } else {
            heading(&c.label, c.kind)
        };
        let r = |x: &Option<Ratio>| x.as_ref().map_or("n/a".into(), ratio_text);
        let rss_ratio = c.rss_to_default.map_or_else(
            || "n/a".into(),
            |r| {
                format!(
                    "{}×{}",
                    num(r),
                    if c.within_rss_bound() { "" } else { " ‡" }
                )
            },
        );
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {rss_ratio} | {} | {} | {} | {} |",
            cell_text(&name),
            interval_text(&c.p99_ms),
            interval_text(&c.p999_ms),
            interval_text(&c.rss_peak_mib),
            interval_text(&c.cpu_ms_per_request),
            c.old_collections.map_or("n/a".into(), |n| n.to_string()),
            r(&c.to_best),
            r(&c.to_bound)
        );
    }
    md.push('\n');
    for note in fastest_note(w).into_iter().chain(deferred_notes(w)) {
        let _ = writeln!(md, "{note}\n");
    }
    let lines: Vec<&String> = w
        .cells
        .iter()
        .filter_map(|c| c.vs_default.as_ref())
        .collect();
    if !lines.is_empty() {
        md.push_str("```\n");
        for l in lines {
            let _ = writeln!(md, "{l}");
        }
        md.push_str("```\n\n");
    }
    match (w.p99_floor, &w.floor_origin) {
        (Some(f), Some(o)) => {
            let _ = writeln!(
                md,
                "Noise floor of the p99 of all requests in this design, from an A/A run: ±{} \
                 ({o}); a ratio within it is not marked 🟢/🔴.\n",
                pct_abs(f)
            );
        }
        _ => {
            let _ = writeln!(
                md,
                "No A/A floor of the p99 of all requests was measured with this design: \
                 significance is from the bootstrap interval alone.\n"
            );
        }
    }
}

/// Draws the workload × policy heat map of p99 ratios to the best fixed policy (log colour
/// scale: white at 1×, dark red at 10× and beyond, green below 1×).
pub fn heatmap(s: &Scoreboard, path: &Path) -> Result<()> {
    crate::charts::ensure_font().map_err(anyhow::Error::msg)?;
    let cols = columns(s);
    let rows = s.workloads.len().max(1);
    let (cell_w, cell_h, left, top) = (110u32, 46u32, 150u32, 90u32);
    let width = left + cell_w * cols.len().max(1) as u32 + 20;
    let height = top + cell_h * rows as u32 + 40;
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let font = ("sans-serif", 15).into_font();
    root.draw(&Text::new(
        "p99 / best fixed policy (per workload, pooled over rounds)",
        (10, 10),
        ("sans-serif", 18).into_font(),
    ))?;
    for (j, (label, kind)) in cols.iter().enumerate() {
        let x = (left + cell_w * j as u32) as i32;
        root.draw(&Text::new(
            heading(label, *kind),
            (x + 4, top as i32 - 24),
            font.clone(),
        ))?;
    }
    for (i, w) in s.workloads.iter().enumerate() {
        let y = (top + cell_h * i as u32) as i32;
        root.draw(&Text::new(w.name.clone(), (10, y + 14), font.clone()))?;
        for (j, (label, _)) in cols.iter().enumerate() {
            let x = (left + cell_w * j as u32) as i32;
            let cell = w.cells.iter().find(|c| &c.label == label);
            let (color, text) = match cell.and_then(|c| c.to_best.as_ref()) {
                Some(r) => (ratio_color(r.estimate), format!("{}×", num(r.estimate))),
                None => (RGBColor(230, 230, 230), "—".into()),
            };
            root.draw(&Rectangle::new(
                [(x, y), (x + cell_w as i32 - 2, y + cell_h as i32 - 2)],
                color.filled(),
            ))?;
            root.draw(&Text::new(text, (x + 8, y + 14), font.clone()))?;
        }
    }
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// White at 1×, towards red for worse (saturating at 10×), towards green for better (at 0.5×).
fn ratio_color(r: f64) -> RGBColor {
    if !r.is_finite() || r <= 0.0 {
        return RGBColor(230, 230, 230);
    }
    let lerp = |a: u8, b: u8, t: f64| (a as f64 + (b as f64 - a as f64) * t.clamp(0.0, 1.0)) as u8;
    if r >= 1.0 {
        let t = r.log10();
        RGBColor(lerp(255, 178, t), lerp(255, 24, t), lerp(255, 43, t))
    } else {
        let t = (1.0 / r).log2();
        RGBColor(lerp(255, 77, t), lerp(255, 175, t), lerp(255, 74, t))
    }
}

/// Writes `scoreboard.json`.
pub fn write_json(s: &Scoreboard, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(s)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The learned scheduler's bar (issue 12): on every workload, p99 at most this many times the
/// best fixed policy's ...
pub const BAR_TO_BEST: f64 = 1.05;
/// ... and the GC-off bound's, peak RSS within [`RSS_BOUND`] of the default's, and never
/// significantly slower than the default.
pub const BAR_TO_BOUND: f64 = 1.10;

/// One check of the bar: the value, the limit, whether it is met.
fn bar_cell(value: Option<f64>, limit: f64) -> (String, Option<bool>) {
    match value {
        None => ("n/a".into(), None),
        Some(v) if v <= limit => (format!("✔ {v:.2}×"), Some(true)),
        Some(v) => (
            format!("✘ {v:.2}× (+{:.0} % over)", (v / limit - 1.0) * 100.0),
            Some(false),
        ),
    }
}

/// "The learned policies against the scheduler's bar": per `neurogc` policy (with or without a
/// model) and workload, each of the four checks met or missed, and by how much.
fn bar_section(md: &mut String, s: &Scoreboard) {
    let mut labels: Vec<&str> = Vec::new();
    for c in s.workloads.iter().flat_map(|w| &w.cells) {
        let scheduler = matches!(c.spec.parse::<PolicySpec>(), Ok(PolicySpec::Neurogc { .. }));
        if scheduler && !labels.contains(&c.label.as_str()) {
            labels.push(&c.label);
        }
    }
    if labels.is_empty() {
        return;
    }
    let _ = writeln!(md, "## The scheduler against its bar\n");
    let _ = writeln!(
        md,
        "On every workload: p99 at most {BAR_TO_BEST:.2}× the best fixed policy's (★) and \
         {BAR_TO_BOUND:.2}× the GC-off bound's, peak RSS at most {RSS_BOUND:.2}× the default's, \
         and never significantly slower than the default (the scoreboard's test: the \
         interval excludes 1 and the ratio is beyond the A/A floor). Point estimates against \
         the limits; a miss says by how much it is over.\n"
    );
    for label in labels {
        let _ = writeln!(md, "### {label}\n");
        let _ = writeln!(
            md,
            "| workload | p99 / best fixed | p99 / GC-off bound | peak RSS / default's | vs default |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        let (mut met, mut scored) = (0, 0);
        for w in &s.workloads {
            let Some(c) = w.cells.iter().find(|c| c.label == label) else {
                continue;
            };
            let (best, b_ok) = bar_cell(c.to_best.as_ref().map(|r| r.estimate), BAR_TO_BEST);
            let (bound, g_ok) = bar_cell(c.to_bound.as_ref().map(|r| r.estimate), BAR_TO_BOUND);
            let (rss, r_ok) = bar_cell(c.rss_to_default, RSS_BOUND);
            let (default, d_ok) = match &c.to_default {
                None => ("n/a".to_string(), None),
                Some(r) if r.significant && r.estimate > 1.0 => (
                    format!("✘ {} (significantly slower)", ratio_text(r)),
                    Some(false),
                ),
                Some(r) => (format!("✔ {}", ratio_text(r)), Some(true)),
            };
            // A check that cannot be made here (no GC-off bound in the run) is left out.
            if b_ok.is_some() {
                scored += 1;
                met += usize::from([b_ok, g_ok, r_ok, d_ok].iter().flatten().all(|&ok| ok));
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                w.name,
                cell_text(&best),
                cell_text(&bound),
                cell_text(&rss),
                cell_text(&default)
            );
        }
        let _ = writeln!(
            md,
            "\n{label} meets every check made on {met} of {scored} workloads scored.\n"
        );
    }
}

/// "The same policy twice": the pairs of policies of a workload's run that are one policy (the
/// same spec twice, or a `neurogc` whose model adds nothing beside `neurogc` without one), and
/// how far apart their p99s came: A/A pairs measured in the run scored, on its own workloads.
fn same_policy_section(md: &mut String, s: &Scoreboard) {
    let pairs: Vec<(&WorkloadScore, &Cell)> = s
        .workloads
        .iter()
        .flat_map(|w| w.cells.iter().map(move |c| (w, c)))
        .filter(|(_, c)| c.same_policy_as.is_some())
        .collect();
    if pairs.is_empty() {
        return;
    }
    let _ = writeln!(md, "## The same policy twice: A/A pairs in this run\n");
    let _ = writeln!(
        md,
        "Each pair ran one policy twice on the workload, in the same rounds: the same spec \
         under two labels, or a `neurogc` whose model adds nothing (its net not asked, no \
         priors: it decides as `neurogc` without a model). The ratio of their p99s is how far \
         one policy's p99 moved between two servers on that workload; a difference between two \
         policies there no larger than that says little, whatever its interval.\n"
    );
    let _ = writeln!(
        md,
        "| workload | policy | the same policy as | p99 ratio |\n|---|---|---|---|"
    );
    for (w, c) in pairs {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            w.name,
            cell_text(&c.label),
            cell_text(c.same_policy_as.as_deref().unwrap_or("")),
            c.to_same.as_ref().map_or_else(|| "n/a".into(), ratio_text)
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_twice_or_a_model_that_adds_nothing_is_the_same_policy() {
        // `loo` adds nothing, `own` adds priors, `gone` cannot be read.
        let adds_nothing = |dir: &Path| match dir.to_str()? {
            "/m/loo" => Some(true),
            "/m/own" => Some(false),
            _ => None,
        };
        let specs = [
            "default",
            "neurogc",
            "neurogc:/m/own",
            "neurogc:/m/loo",
            "neurogc,cpu=0.05",
            "neurogc:/m/gone",
            "neurogc:/m/loo,cpu=0.05",
            "freeze:3",
            "default",
            "neurogc:/m/own",
        ];
        assert_eq!(
            same_policy(&specs, adds_nothing),
            [
                None,
                None,
                None,
                Some(1),
                None,
                None,
                Some(4),
                None,
                Some(0),
                Some(2)
            ]
        );
    }

    #[test]
    fn only_the_recipes_users_apply_can_be_best_fixed() {
        for spec in ["default", "freeze:3", "threshold:50000,20,20", "periodic:5"] {
            assert_eq!(Kind::of(spec), Kind::Fixed, "{spec}");
        }
        assert_eq!(Kind::of("gc-off"), Kind::Bound);
        for spec in [
            "neurogc",
            "neurogc,cpu=0.1",
            "neurogc-seed:models/x",
            "whim",
        ] {
            assert_eq!(Kind::of(spec), Kind::Learned, "{spec}");
        }
    }

    fn cell(label: &str, kind: Kind, old: Option<u64>, rss: f64) -> Cell {
        let at = |x: f64| Interval {
            median: x,
            lower: x,
            upper: x,
        };
        Cell {
            label: label.into(),
            spec: label.into(),
            kind,
            rounds: 5,
            p99_ms: Some(at(5.0)),
            p999_ms: None,
            rss_peak_mib: Some(at(rss)),
            cpu_ms_per_request: None,
            to_best: None,
            to_bound: None,
            vs_default: None,
            to_default: None,
            old_collections: old,
            rss_to_default: Some(rss / 289.0),
            same_policy_as: None,
            to_same: None,
        }
    }

    fn workload(best_old: Option<u64>) -> WorkloadScore {
        WorkloadScore {
            name: "w".into(),
            story: String::new(),
            capacity_rps: None,
            capacity_limited_by: None,
            capacity_recheck: None,
            rate_rps: None,
            best_fixed: Some("threshold:50000,500,1000".into()),
            fastest_fixed: None,
            bound: Some("gc-off".into()),
            cells: vec![
                cell("default", Kind::Fixed, Some(40), 289.0),
                cell("threshold:50000,500,1000", Kind::Fixed, best_old, 370.0),
                cell("gc-off", Kind::Bound, Some(0), 371.0),
            ],
            story_checks: vec![],
            p99_floor: None,
            floor_origin: None,
            design: String::new(),
            order: vec![
                "gc-off".into(),
                "default".into(),
                "threshold:50000,500,1000".into(),
            ],
            shuffled: true,
            primed: false,
        }
    }

    #[test]
    fn a_best_policy_that_never_collected_the_older_generations_is_flagged() {
        let notes = deferred_notes(&workload(Some(0)));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("threshold:50000,500,1000"), "{notes:?}");
        assert!(
            notes[0].contains("370 MiB, the GC-off bound's 371 MiB"),
            "{notes:?}"
        );
        assert!(deferred_notes(&workload(Some(3))).is_empty());
        assert!(
            deferred_notes(&workload(None)).is_empty(),
            "unknown is not none"
        );
    }

    #[test]
    fn a_workload_says_the_order_its_servers_ran_in() {
        let mut w = workload(Some(3));
        let mut md = String::new();
        workload_section(&mut md, &w);
        assert!(
            md.contains(
                "in this order (shuffled for this workload): gc-off → default → \
                 threshold:50000,500,1000."
            ),
            "{md}"
        );
        assert!(!md.contains("--primer"), "{md}");
        w.shuffled = false;
        w.primed = true;
        md.clear();
        workload_section(&mut md, &w);
        assert!(md.contains("in this order (as listed): gc-off"), "{md}");
        assert!(
            md.contains("threshold:50000,500,1000. Before them a throwaway server"),
            "{md}"
        );
    }

    #[test]
    fn the_scheduler_is_held_to_its_bar_and_a_miss_says_by_how_much() {
        let r = |estimate: f64, significant| Ratio {
            estimate,
            lower: estimate * 0.9,
            upper: estimate * 1.1,
            significant,
        };
        let mut w = workload(Some(3));
        let mut sched = cell("neurogc", Kind::Learned, Some(9), 300.0);
        sched.to_best = Some(r(1.2, false));
        sched.to_bound = Some(r(1.05, false));
        sched.to_default = Some(r(0.5, true));
        let mut ok = cell("neurogc:/m", Kind::Learned, Some(9), 290.0);
        ok.label = "neurogc-own".into();
        ok.to_best = Some(r(0.9, false));
        ok.to_bound = Some(r(1.0, false));
        ok.to_default = Some(r(0.5, true));
        w.cells.extend([sched, ok]);
        let board = Scoreboard {
            workloads: vec![w],
            best_everywhere: vec![],
        };
        let mut md = String::new();
        bar_section(&mut md, &board);
        assert!(
            md.contains("### neurogc\n") && md.contains("### neurogc-own\n"),
            "{md}"
        );
        // 1.2 over the 1.05 bar: 14 % over; the rest met.
        assert!(
            md.contains("| w | ✘ 1.20× (+14 % over) | ✔ 1.05× | ✔ 1.04× |"),
            "{md}"
        );
        assert!(
            md.contains("neurogc meets every check made on 0 of 1"),
            "{md}"
        );
        assert!(
            md.contains("neurogc-own meets every check made on 1 of 1"),
            "{md}"
        );
        // Fixed recipes are not held to it.
        assert!(!md.contains("### default"));
        // No policy ran twice: no section for pairs.
        same_policy_section(&mut md, &board);
        assert!(!md.contains("A/A pairs"), "{md}");
    }

    #[test]
    fn a_policy_run_twice_is_shown_as_an_a_a_pair() {
        let mut w = workload(Some(3));
        let mut loo = cell("neurogc:/m/loo", Kind::Learned, Some(9), 290.0);
        loo.label = "neurogc-loo".into();
        loo.same_policy_as = Some("neurogc".into());
        loo.to_same = Some(Ratio {
            estimate: 2.94,
            lower: 1.1,
            upper: 3.5,
            significant: true,
        });
        w.cells
            .extend([cell("neurogc", Kind::Learned, Some(9), 300.0), loo]);
        let board = Scoreboard {
            workloads: vec![w],
            best_everywhere: vec![],
        };
        let mut md = String::new();
        same_policy_section(&mut md, &board);
        assert!(md.contains("## The same policy twice"), "{md}");
        assert!(
            md.contains("| w | neurogc-loo | neurogc | 2.94× (1.10–3.50) |"),
            "{md}"
        );
    }

    #[test]
    fn the_best_fixed_policy_keeps_within_the_memory_bound() {
        let c = |index, p99_ms, rss: Option<f64>| Candidate {
            index,
            p99_ms,
            rss_to_default: rss,
        };
        // default 20 ms; freeze 9 ms at 1.05x; a high threshold 4 ms at 1.76x.
        let fixed = [
            c(0, 20.0, Some(1.0)),
            c(1, 9.0, Some(1.05)),
            c(2, 4.0, Some(1.76)),
        ];
        assert_eq!(best_and_fastest(&fixed), (Some(1), Some(2)));
        // The fastest within the bound: no second name.
        assert_eq!(best_and_fastest(&fixed[..2]), (Some(1), None));
        // At the bound is within it; unknown memory is not held against a recipe.
        assert_eq!(
            best_and_fastest(&[c(0, 20.0, Some(1.0)), c(1, 9.0, Some(RSS_BOUND))]),
            (Some(1), None)
        );
        assert_eq!(
            best_and_fastest(&[c(0, 20.0, Some(1.0)), c(1, 9.0, None)]),
            (Some(1), None)
        );
        assert_eq!(best_and_fastest(&[]), (None, None));
    }

    #[test]
    fn a_recipe_is_best_everywhere_only_within_the_memory_bound() {
        let r = |estimate: f64, significant| Ratio {
            estimate,
            lower: estimate,
            upper: estimate,
            significant,
        };
        let mut c = cell("freeze:3", Kind::Fixed, Some(40), 289.0);
        assert_eq!(c.not_best_because().as_deref(), Some("not scored"));
        c.rss_to_default = Some(400.0 / 289.0);
        // Faster than the best, with 1.38x its memory: not as good as the best could be.
        c.to_best = Some(r(0.3, true));
        assert!(!c.best_here());
        assert_eq!(
            c.not_best_because().as_deref(),
            Some("peak RSS 1.38× the default's")
        );
        // Within the bound, not significantly slower: best here.
        c.rss_to_default = Some(1.05);
        c.to_best = Some(r(1.2, false));
        assert!(c.best_here());
        assert_eq!(c.not_best_because(), None);
        // Significantly slower, and over the bound: both said.
        c.rss_to_default = Some(1.5);
        c.to_best = Some(r(2.0, true));
        let why = c.not_best_because().unwrap();
        assert!(
            why.starts_with("p99 2.00×") && why.ends_with("peak RSS 1.50× the default's"),
            "{why}"
        );
    }

    #[test]
    fn a_recipes_second_run_is_not_a_recipe_of_its_own() {
        let same = Ratio {
            estimate: 1.0,
            lower: 0.9,
            upper: 1.1,
            significant: false,
        };
        let mut w = workload(Some(3));
        for c in &mut w.cells {
            c.to_best = Some(same.clone());
        }
        let mut again = cell("default", Kind::Fixed, Some(40), 289.0);
        again.label = "default-aa".into();
        again.same_policy_as = Some("default".into());
        again.to_best = Some(same);
        w.cells.push(again);
        let listed = best_everywhere(&[w]);
        assert!(listed.contains(&"default".to_string()), "{listed:?}");
        assert!(!listed.contains(&"default-aa".to_string()), "{listed:?}");
    }

    #[test]
    fn a_second_run_with_the_lowest_p99_is_not_the_best_fixed_policy() {
        let at = |x: f64| {
            Some(Interval {
                median: x,
                lower: x,
                upper: x,
            })
        };
        // default, freeze:3, gc-off, default again (the fastest of all).
        let kinds = [Kind::Fixed, Kind::Fixed, Kind::Bound, Kind::Fixed];
        let same = [None, None, None, Some(0)];
        let p99 = [at(20.0), at(30.0), at(5.0), at(10.0)];
        let rss = [Some(1.0), Some(1.0), Some(2.0), Some(1.0)];
        let c = candidates(&kinds, &same, &p99, &rss);
        assert_eq!(c.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(best_and_fastest(&c), (Some(0), None));
    }

    #[test]
    fn a_recipe_beyond_the_memory_bound_is_named_beside_the_best() {
        let mut w = workload(Some(0));
        w.best_fixed = Some("default".into());
        w.fastest_fixed = Some("threshold:50000,500,1000".into());
        let note = fastest_note(&w).expect("named");
        assert!(note.contains("threshold:50000,500,1000"), "{note}");
        assert!(note.contains("1.28×"), "{note}");
        // Both the best and the fastest are checked for deferred collections.
        let notes = deferred_notes(&w);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("regardless of memory"), "{notes:?}");
    }
}
