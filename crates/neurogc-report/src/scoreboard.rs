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
//! `neurogc`). "Best fixed" is the fixed recipe with the lowest pooled p99.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use neurogc_core::policy::PolicySpec;
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
            Ok(PolicySpec::NeurogcSeed { .. } | PolicySpec::Neurogc(_)) => Kind::Learned,
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
    /// Collections of the middle and old generations in its measured rounds: none means what
    /// it defers (and its pauses) fall outside the window.
    pub old_collections: Option<u64>,
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
    pub best_fixed: Option<String>,
    pub bound: Option<String>,
    pub cells: Vec<Cell>,
    pub story_checks: Vec<StoryCheck>,
    /// The A/A noise floor of the pooled p99 that applies (this design's), and where it comes
    /// from.
    pub p99_floor: Option<f64>,
    pub floor_origin: Option<String>,
    pub design: String,
}

/// The whole scoreboard.
#[derive(Clone, Debug, Serialize)]
pub struct Scoreboard {
    pub workloads: Vec<WorkloadScore>,
    /// Fixed policies not significantly worse than the best on every workload.
    pub best_everywhere: Vec<String>,
}

const P99: f64 = 0.99;

/// Pooled p99 of `cand` over that of `base`.
/// `cand`'s pooled p99 over `base`'s; significant when its interval excludes 1 and, where an
/// A/A floor of the pooled p99 holds for the design, the ratio is further from 1 than it.
fn ratio(base: &[Unit<'_>], cand: &[Unit<'_>], floor: Option<f64>) -> Option<Ratio> {
    let r = pooled::ratio_ci(base, cand, P99, &bootstrap())?;
    Some(Ratio {
        estimate: r.estimate,
        lower: r.lower,
        upper: r.upper,
        significant: !r.contains(1.0) && floor.is_none_or(|f| (r.estimate - 1.0).abs() > f),
    })
}

fn interval(p: &PolicyStats, m: Metric) -> Option<Interval> {
    p.medians.get(&m).copied().map(Interval::from)
}

fn pooled_interval(units: &[Unit<'_>], q: f64) -> Option<Interval> {
    pooled::quantile_ci(units, q, &bootstrap()).map(Interval::from)
}

/// Scores every workload.
pub fn score(runs: &[WorkloadRun]) -> Scoreboard {
    let workloads: Vec<WorkloadScore> = runs.iter().map(score_workload).collect();
    // A fixed policy is "best everywhere" if on every workload it is the best or not
    // significantly worse than the best.
    let mut fixed: Vec<String> = Vec::new();
    for w in &workloads {
        for c in w.cells.iter().filter(|c| c.kind == Kind::Fixed) {
            if !fixed.contains(&c.label) {
                fixed.push(c.label.clone());
            }
        }
    }
    let best_everywhere = fixed
        .into_iter()
        .filter(|label| {
            workloads.iter().all(|w| {
                w.cells.iter().any(|c| {
                    &c.label == label
                        && c.to_best
                            .as_ref()
                            .is_some_and(|r| !(r.significant && r.estimate > 1.0))
                })
            })
        })
        .collect();
    Scoreboard {
        workloads,
        best_everywhere,
    }
}

fn score_workload(w: &WorkloadRun) -> WorkloadScore {
    let a = &w.analysis;
    let kinds: Vec<Kind> = a.policies.iter().map(|p| Kind::of(&p.spec)).collect();
    let units: Vec<Vec<Unit>> = a.policies.iter().map(|p| pooled::units(a, p)).collect();
    let p99: Vec<Option<Interval>> = units.iter().map(|u| pooled_interval(u, P99)).collect();
    let kinds = &kinds;
    let of_kind = |kind: Kind| (0..kinds.len()).filter(move |&i| kinds[i] == kind);
    let best = of_kind(Kind::Fixed)
        .filter_map(|i| Some((i, p99[i]?.median)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(i, _)| i);
    let bound = of_kind(Kind::Bound).next();
    let default = a.policies.iter().position(|p| p.spec == "default");
    // The floor of the statistic scored here (the pooled p99), from an A/A run of this design.
    let p99_floor = a.floors.as_ref().and_then(|f| f.file.p99_all);
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
            vs_default: default.filter(|&d| d != i).and_then(|d| {
                let r = pooled::ratio_ci(&units[d], &units[i], P99, &bootstrap())?;
                let mut s = pooled::sentence("p99", &p.label, &a.policies[d].label, &r);
                if !r.contains(1.0) && p99_floor.is_some_and(|f| (r.estimate - 1.0).abs() <= f) {
                    s.push_str(" (within the A/A floor)");
                }
                Some(s)
            }),
            old_collections: old_collections(a, p),
        })
        .collect();
    WorkloadScore {
        name: w.name.clone(),
        story: w.story.clone(),
        capacity_rps: w.run.rate_search.as_ref().map(|r| r.sustainable_rps),
        capacity_limited_by: w.run.rate_search.as_ref().map(|r| r.limited_by.clone()),
        rate_rps: w.run.rate_search.as_ref().map(|r| r.rate),
        best_fixed: best.map(|b| a.policies[b].label.clone()),
        bound: bound.map(|b| a.policies[b].label.clone()),
        cells,
        story_checks: story_checks(w),
        p99_floor,
        floor_origin: p99_floor.and(a.floors.as_ref()).map(|f| f.origin.clone()),
        design: Design::of(&w.run.info).describe(),
    }
}

/// Where the best fixed policy collected neither older generation in its rounds, its p99 is
/// that of a collector doing only young collections: what it defers (the garbage that reaches
/// the older generations, and the pauses of collecting it) lies beyond the window. Said, with
/// its memory beside the GC-off bound's.
fn deferred_note(w: &WorkloadScore) -> Option<String> {
    let best = w
        .cells
        .iter()
        .find(|c| Some(&c.label) == w.best_fixed.as_ref())?;
    if best.old_collections != Some(0) {
        return None;
    }
    let rss = |c: &Cell| c.rss_peak_mib.map(|i| format!("{:.0} MiB", i.median));
    let bound = w
        .cells
        .iter()
        .find(|c| Some(&c.label) == w.bound.as_ref())
        .and_then(|c| Some(format!(", the GC-off bound's {}", rss(c)?)))
        .unwrap_or_default();
    Some(format!(
        "Caveat: the best fixed policy, {}, ran no collection of generation 1 or 2 in its {} \
         rounds: the garbage that outlives its young collections piles up (peak RSS {}{bound}) \
         and the pauses of collecting it fall after the window. Its p99 here is that of a \
         longer run's quiet stretches, not of the whole run.",
        best.label,
        best.rounds,
        rss(best).unwrap_or_else(|| "n/a".into()),
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

/// Checks each claimed marker against what the runs recorded.
fn story_checks(w: &WorkloadRun) -> Vec<StoryCheck> {
    let a = &w.analysis;
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
                    let n = median(default, Metric::Gen2Count).unwrap_or(0.0);
                    (
                        n > 0.0,
                        format!(
                            "default: {} full collections per round, each freeing old garbage",
                            num(n)
                        ),
                    )
                }
                "rss-grows-when-frozen" => {
                    let d = median(default, Metric::RssPeak);
                    let f = median(by_spec("freeze"), Metric::RssPeak)
                        .or(median(by_spec("gc-off"), Metric::RssPeak));
                    match (d, f) {
                        (Some(d), Some(f)) => (
                            f >= 1.1 * d,
                            format!(
                                "peak RSS frozen/off {} MiB against default {} MiB",
                                num(f),
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
         interval (rounds resampled, the same rounds for both). ★ the best fixed policy; 🔴 \
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
    let _ = writeln!(md, "## Is one fixed policy best on every workload?\n");
    if s.best_everywhere.is_empty() {
        let _ = writeln!(
            md,
            "**No.** On every workload some fixed policy is significantly worse than that \
             workload's best, for each of the fixed policies measured: the best recipe differs \
             from one service to the next.\n"
        );
        for w in &s.workloads {
            let _ = writeln!(
                md,
                "- {}: best fixed {}",
                w.name,
                w.best_fixed.as_deref().unwrap_or("n/a")
            );
        }
        md.push('\n');
    } else {
        let _ = writeln!(
            md,
            "Not significantly worse than the best on every workload: {}.\n",
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
        let _ = writeln!(
            md,
            "Capacity {} req/s (the lowest found, under {by}, from throughput and the median); \
             every policy ran at {} req/s. Design: {}.\n",
            num(cap),
            num(rate),
            w.design
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
        "| policy | p99 ms | p99.9 ms | peak RSS MiB | CPU ms/request | gen 1 + 2 collections | p99 / best fixed | p99 / GC-off bound |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for c in &w.cells {
        let name = if Some(&c.label) == w.best_fixed.as_ref() {
            format!("**{}** ★", heading(&c.label, c.kind))
        } else {
            heading(&c.label, c.kind)
        };
        let r = |x: &Option<Ratio>| x.as_ref().map_or("n/a".into(), ratio_text);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
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
    if let Some(note) = deferred_note(w) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            old_collections: old,
        }
    }

    fn workload(best_old: Option<u64>) -> WorkloadScore {
        WorkloadScore {
            name: "w".into(),
            story: String::new(),
            capacity_rps: None,
            capacity_limited_by: None,
            rate_rps: None,
            best_fixed: Some("threshold:50000,500,1000".into()),
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
        }
    }

    #[test]
    fn a_best_policy_that_never_collected_the_older_generations_is_flagged() {
        let note = deferred_note(&workload(Some(0))).expect("flagged");
        assert!(note.contains("threshold:50000,500,1000"), "{note}");
        assert!(
            note.contains("370 MiB, the GC-off bound's 371 MiB"),
            "{note}"
        );
        assert_eq!(deferred_note(&workload(Some(3))), None);
        assert_eq!(deferred_note(&workload(None)), None, "unknown is not none");
    }
}
