//! From step rows to the sweep's answer: one set of metrics per run ([`RunMetrics`]), medians
//! with bootstrap intervals per configuration ([`ConfigStats`]), paired comparisons against the
//! baseline and against the best ([`Analysis`]), and the recommendation ([`Recommendation`]).
//!
//! Every statistic comes from `neurogc-stats`; this module only decides what is compared.
//! A run is one process; each metric is reduced to one value per run, and a configuration's
//! value is the median over its runs. Runs of one round ran back to back, so a configuration is
//! compared with the baseline round by round (`Comparison::paired`: the paired t-test on log
//! ratios and a pair-resampling interval of the ratio), as `neurogc bench` compares trials of one
//! round.

use anyhow::{bail, Result};
use neurogc_record::steps::StepRow;
use neurogc_stats::{median_ci, BootstrapConfig, Comparison, ConfidenceInterval, Direction};

/// A metric of one run, compared between configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    Mean,
    P50,
    P99,
    Max,
    GcShare,
    PeakRss,
}

impl Metric {
    pub const ALL: [Metric; 6] = [
        Metric::Mean,
        Metric::P50,
        Metric::P99,
        Metric::Max,
        Metric::GcShare,
        Metric::PeakRss,
    ];

    /// The key in `summary.json`, with its unit.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Mean => "mean_ms",
            Metric::P50 => "p50_ms",
            Metric::P99 => "p99_ms",
            Metric::Max => "max_ms",
            Metric::GcShare => "gc_share",
            Metric::PeakRss => "peak_rss_bytes",
        }
    }

    /// The name in tables and sentences.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Mean => "step mean",
            Metric::P50 => "step p50",
            Metric::P99 => "step p99",
            Metric::Max => "step max",
            Metric::GcShare => "GC share",
            Metric::PeakRss => "peak RSS",
        }
    }
}

/// One run (one process) of one configuration, reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct RunMetrics {
    /// Steps counted (after the skipped ones).
    pub steps: usize,
    /// Step time with its boundary collection (ms): mean, p50, p99, max.
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// GC pauses over the training span (first counted step's start to the last one's end,
    /// boundary collection included).
    pub gc_share: f64,
    /// Collections per generation inside steps and at boundaries.
    pub collections: [u64; 3],
    /// Collections between steps (the hook does not know their generation).
    pub outside: u64,
    /// Objects freed per generation.
    pub collected: [u64; 3],
    /// The process's peak RSS (bytes), when known.
    pub peak_rss: Option<f64>,
    /// The step times, in order (for the chart).
    pub step_ms: Vec<f64>,
}

impl RunMetrics {
    /// Reduces a run's rows, leaving out the first `skip` steps of each hook run in the file.
    /// `peak_rss`: the process's high-water mark; without one, the largest RSS a row recorded.
    /// Errors when no step is left.
    pub fn from_rows(rows: &[StepRow], skip: usize, peak_rss: Option<u64>) -> Result<RunMetrics> {
        let mut kept: Vec<&StepRow> = Vec::with_capacity(rows.len());
        let mut seen = 0usize;
        for (i, r) in rows.iter().enumerate() {
            if i == 0 || rows[i - 1].run != r.run {
                seen = 0;
            }
            seen += 1;
            if seen > skip {
                kept.push(r);
            }
        }
        if kept.is_empty() {
            bail!(
                "no steps left: {} recorded, the first {skip} of each run skipped",
                rows.len()
            );
        }
        let step_ms: Vec<f64> = kept.iter().map(|r| r.with_boundary_ms()).collect();
        let ps = neurogc_stats::percentiles(&step_ms, &[50.0, 99.0])?;
        let (mut gc_ms, mut span_ms) = (0.0, 0.0);
        // Spans per hook run: the time between runs of the hook is not training time.
        let mut start = 0;
        for i in 0..kept.len() {
            let last = i + 1 == kept.len() || kept[i + 1].run != kept[i].run;
            // Collections before a run's first counted step are outside its span.
            gc_ms += if i == start {
                kept[i].gc_ms() - kept[i].outside_gc_ms
            } else {
                kept[i].gc_ms()
            };
            if last {
                span_ms += (kept[i].end_time() - kept[start].start_time) * 1e3;
                start = i + 1;
            }
        }
        let mut collections = [0u64; 3];
        let mut collected = [0u64; 3];
        let mut outside = 0;
        for r in &kept {
            for g in 0..3 {
                collections[g] += r.in_step[g];
                collected[g] += r.collected[g];
            }
            if let Some(g) = r.boundary_gen {
                collections[usize::from(g)] += 1;
            }
            outside += r.outside_gc;
        }
        let peak_rss = peak_rss
            .or_else(|| kept.iter().filter_map(|r| r.rss_bytes).max())
            .map(|b| b as f64);
        Ok(RunMetrics {
            steps: kept.len(),
            mean_ms: neurogc_stats::mean(&step_ms)?,
            p50_ms: ps[0],
            p99_ms: ps[1],
            max_ms: neurogc_stats::max(&step_ms)?,
            gc_share: if span_ms > 0.0 {
                (gc_ms / span_ms).min(1.0)
            } else {
                0.0
            },
            collections,
            outside,
            collected,
            peak_rss,
            step_ms,
        })
    }

    pub fn get(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Mean => Some(self.mean_ms),
            Metric::P50 => Some(self.p50_ms),
            Metric::P99 => Some(self.p99_ms),
            Metric::Max => Some(self.max_ms),
            Metric::GcShare => Some(self.gc_share),
            Metric::PeakRss => self.peak_rss,
        }
    }
}

/// One configuration over its runs (in round order).
#[derive(Clone, Debug)]
pub struct ConfigStats {
    pub name: String,
    pub runs: Vec<RunMetrics>,
    /// Per [`Metric::ALL`] entry, the median over runs with its 95 % bootstrap interval (`None`
    /// when no run measured it).
    pub medians: Vec<Option<ConfidenceInterval>>,
}

impl ConfigStats {
    pub fn new(name: &str, runs: Vec<RunMetrics>, cfg: &BootstrapConfig) -> Result<ConfigStats> {
        let medians = Metric::ALL
            .iter()
            .map(|&m| {
                let xs = values(&runs, m);
                (xs.len() == runs.len() && !xs.is_empty())
                    .then(|| median_ci(&xs, cfg))
                    .transpose()
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(ConfigStats {
            name: name.to_string(),
            runs,
            medians,
        })
    }

    pub fn median(&self, m: Metric) -> Option<f64> {
        self.interval(m).map(|c| c.estimate)
    }

    pub fn interval(&self, m: Metric) -> Option<&ConfidenceInterval> {
        let i = Metric::ALL.iter().position(|x| *x == m)?;
        self.medians[i].as_ref()
    }

    /// The median over runs of a per-run count.
    pub fn median_count(&self, f: impl Fn(&RunMetrics) -> u64) -> f64 {
        let xs: Vec<f64> = self.runs.iter().map(|r| f(r) as f64).collect();
        neurogc_stats::median(&xs).unwrap_or(0.0)
    }
}

fn values(runs: &[RunMetrics], m: Metric) -> Vec<f64> {
    runs.iter().filter_map(|r| r.get(m)).collect()
}

/// Compares configuration `cand` with `base` on `m`, round by round. `None` when a side lacks
/// the metric in some run.
pub fn compare(
    base: &ConfigStats,
    cand: &ConfigStats,
    m: Metric,
    cfg: &BootstrapConfig,
) -> Result<Option<Comparison>> {
    let (b, c) = (values(&base.runs, m), values(&cand.runs, m));
    if b.len() != base.runs.len() || c.len() != cand.runs.len() || b.len() != c.len() {
        return Ok(None);
    }
    Ok(Some(Comparison::paired(
        m.label(),
        &base.name,
        &b,
        &cand.name,
        &c,
        cfg,
    )?))
}

/// The sweep analysed.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub configs: Vec<ConfigStats>,
    /// The configuration the others are compared with: `default` when swept, else the first.
    pub baseline: usize,
    /// `--aa`'s copy of the baseline: compared with it like the others (its row is the noise
    /// floor), never recommended, and not one of the learned policy's opponents.
    pub aa: Option<usize>,
    /// `vs_baseline[i]`: configuration `i` against the baseline, per [`Metric::ALL`] entry.
    pub vs_baseline: Vec<Vec<Option<Comparison>>>,
    /// `vs_best[i]`: configuration `i` against the recommended one.
    pub vs_best: Vec<Vec<Option<Comparison>>>,
    /// Each learned configuration against every other one, round by round: what a bar that
    /// names another configuration (the best fixed one) is checked against.
    pub learned_vs: Vec<LearnedAgainst>,
    pub recommendation: Recommendation,
    /// The RSS bound: a configuration qualifies when its peak RSS is at most this many times the
    /// baseline's.
    pub rss_bound: f64,
}

/// A learned configuration against another, per [`Metric::ALL`] entry.
#[derive(Clone, Debug)]
pub struct LearnedAgainst {
    pub learned: usize,
    pub against: usize,
    pub by_metric: Vec<Option<Comparison>>,
}

impl LearnedAgainst {
    pub fn get(&self, m: Metric) -> Option<&Comparison> {
        of_metric(&self.by_metric, m)
    }
}

/// The comparison on `m` in a row of them, one per [`Metric::ALL`] entry.
fn of_metric(row: &[Option<Comparison>], m: Metric) -> Option<&Comparison> {
    let j = Metric::ALL.iter().position(|x| *x == m)?;
    row.get(j)?.as_ref()
}

/// Which configuration to use, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    pub best: usize,
    /// Configurations left out for their RSS: (index, peak RSS / the baseline's).
    pub over_rss: Vec<(usize, f64)>,
    /// Configurations whose p99 did not differ significantly from the lowest one's; the best
    /// is the one with the lowest mean among them.
    pub p99_ties: Vec<usize>,
    /// The configuration with the lowest p99 within the RSS bound.
    pub lowest_p99: usize,
}

impl Analysis {
    /// Analyses configurations (each with its runs in round order; every configuration has the
    /// same number of runs); `aa` is the baseline's A/A copy, if one ran.
    pub fn new(
        configs: Vec<ConfigStats>,
        aa: Option<usize>,
        rss_bound: f64,
        cfg: &BootstrapConfig,
    ) -> Result<Self> {
        if configs.is_empty() {
            bail!("no configurations to analyse");
        }
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        let baseline = crate::configs::baseline(&names);
        if aa.is_some_and(|i| i >= configs.len() || i == baseline) {
            bail!("the A/A copy must be a configuration other than the baseline");
        }
        // One comparison per metric of `cand` against `against`.
        let row = |against: usize, cand: &ConfigStats| -> Result<Vec<Option<Comparison>>> {
            Metric::ALL
                .iter()
                .map(|&m| compare(&configs[against], cand, m, cfg))
                .collect()
        };
        let table = |against: usize| -> Result<Vec<Vec<Option<Comparison>>>> {
            configs.iter().map(|c| row(against, c)).collect()
        };
        let vs_baseline = table(baseline)?;
        let recommendation = recommend(&configs, baseline, aa, rss_bound, cfg)?;
        let vs_best = table(recommendation.best)?;
        let mut learned_vs = Vec::new();
        for (learned, c) in configs.iter().enumerate() {
            if !is_learned(&c.name) {
                continue;
            }
            for against in (0..configs.len()).filter(|&j| j != learned && Some(j) != aa) {
                learned_vs.push(LearnedAgainst {
                    learned,
                    against,
                    by_metric: row(against, c)?,
                });
            }
        }
        Ok(Analysis {
            configs,
            baseline,
            aa,
            vs_baseline,
            vs_best,
            learned_vs,
            recommendation,
            rss_bound,
        })
    }

    pub fn name(&self, i: usize) -> &str {
        &self.configs[i].name
    }

    fn cell(table: &[Vec<Option<Comparison>>], i: usize, m: Metric) -> Option<&Comparison> {
        of_metric(table.get(i)?, m)
    }

    pub fn vs_baseline(&self, i: usize, m: Metric) -> Option<&Comparison> {
        Self::cell(&self.vs_baseline, i, m)
    }

    pub fn vs_best(&self, i: usize, m: Metric) -> Option<&Comparison> {
        Self::cell(&self.vs_best, i, m)
    }

    /// `--aa`: how far the baseline's copy landed from it, round by round, on the metrics the
    /// bars and the recommendation use: the differences that identical configurations show.
    pub fn aa_line(&self) -> Option<String> {
        let aa = self.aa?;
        let parts: Vec<String> = [Metric::Mean, Metric::P99, Metric::PeakRss]
            .into_iter()
            .filter_map(|m| {
                let c = self.vs_baseline(aa, m)?;
                let r = c.ratio?;
                Some(format!(
                    "{} × {:.3} [{:.3}, {:.3}]{}",
                    m.label(),
                    r.estimate,
                    r.lower,
                    r.upper,
                    if c.is_significant() {
                        ", significant"
                    } else {
                        ""
                    }
                ))
            })
            .collect();
        Some(format!(
            "A/A: {} against {}, the same configuration, round by round: {}",
            self.name(aa),
            self.name(self.baseline),
            if parts.is_empty() {
                "not comparable".to_string()
            } else {
                parts.join("; ")
            }
        ))
    }

    /// The recommendation line.
    pub fn recommendation_line(&self) -> String {
        let r = &self.recommendation;
        let best = &self.configs[r.best];
        let base = &self.configs[self.baseline];
        let ms = |c: &ConfigStats, m| c.median(m).map_or("n/a".into(), fmt_ms);
        let mut s = format!(
            "recommendation: {} (step p99 {}, mean {}",
            best.name,
            ms(best, Metric::P99),
            ms(best, Metric::Mean)
        );
        if r.best != self.baseline {
            if let Some(c) = self.vs_baseline(r.best, Metric::P99) {
                let ns = if c.is_significant() {
                    ""
                } else {
                    ", not significant"
                };
                s += &format!(
                    "; p99 {} than {}{ns}",
                    factor_text(c).trim_end_matches(" (n.s.)"),
                    self.name(self.baseline)
                );
            }
        }
        match (best.median(Metric::PeakRss), base.median(Metric::PeakRss)) {
            (Some(b), Some(d)) if r.best != self.baseline => {
                s += &format!(
                    "; peak RSS {} = {:.2} × {}'s, within the {:.2} × bound",
                    fmt_bytes(b),
                    b / d,
                    base.name,
                    self.rss_bound
                )
            }
            (Some(b), _) => s += &format!("; peak RSS {}", fmt_bytes(b)),
            _ => {}
        }
        s.push(')');
        if r.p99_ties.len() > 1 {
            let others: Vec<&str> = r
                .p99_ties
                .iter()
                .filter(|&&i| i != r.best)
                .map(|&i| self.name(i))
                .collect();
            s += &format!(
                "; p99 not significantly different from {}, chosen by the lower mean",
                others.join(", ")
            );
        }
        s
    }

    /// For each `learned` configuration that is not the recommendation: where it loses to it,
    /// and by how much (p99, mean, peak RSS), or that it does not.
    pub fn learned_lines(&self) -> Vec<String> {
        let best = self.recommendation.best;
        let mut out = Vec::new();
        for (i, c) in self.configs.iter().enumerate() {
            if !is_learned(&c.name) {
                continue;
            }
            if i == best {
                out.push(format!("{}: the recommendation", c.name));
                continue;
            }
            let mut losses = Vec::new();
            for m in [Metric::P99, Metric::Mean, Metric::PeakRss] {
                if let Some(cmp) = self.vs_best(i, m) {
                    if cmp.direction() == Direction::Higher {
                        losses.push(format!("{} {}", m.label(), factor_text(cmp)));
                    }
                }
            }
            if let Some(&(_, ratio)) = self.recommendation.over_rss.iter().find(|(j, _)| *j == i) {
                losses.push(format!(
                    "over the RSS bound ({ratio:.2} × {}'s peak RSS)",
                    self.name(self.baseline)
                ));
            }
            out.push(if losses.is_empty() {
                format!(
                    "{}: loses to {} on nothing measured (not recommended: {})",
                    c.name,
                    self.name(best),
                    if self.recommendation.p99_ties.contains(&i) {
                        "its p99 ties and its mean is higher or equal"
                    } else {
                        "its p99 is higher"
                    }
                )
            } else {
                format!(
                    "{}: loses to {} by {}",
                    c.name,
                    self.name(best),
                    losses.join(", ")
                )
            });
        }
        out
    }

    /// hyperfine's summary on the mean step time: `learned ran 1.12 ± 0.03 times faster than
    /// default`, one line per configuration other than the baseline.
    pub fn speed_lines(&self) -> Vec<String> {
        let base = self.name(self.baseline);
        (0..self.configs.len())
            .filter(|&i| i != self.baseline)
            .filter_map(|i| {
                let c = self.vs_baseline(i, Metric::Mean)?;
                let sig = if c.is_significant() {
                    ""
                } else {
                    " (not significant)"
                };
                Some(match c.factor() {
                    Some(f) if f.direction == Direction::Same => {
                        format!("{} ran as fast as {base}{sig}", self.name(i))
                    }
                    Some(f) => format!(
                        "{} ran {:.2} ± {:.2} times {} than {base}{sig}",
                        self.name(i),
                        f.value,
                        f.half_width,
                        if f.direction == Direction::Lower {
                            "faster"
                        } else {
                            "slower"
                        }
                    ),
                    None => c.summary(),
                })
            })
            .collect()
    }
}

/// Whether a configuration is the learned policy.
pub fn is_learned(name: &str) -> bool {
    name == "learned" || name.starts_with("learned,")
}

/// The best configuration (never `aa`, the baseline's A/A copy): within the RSS bound (peak RSS
/// at most `rss_bound` × the baseline's), the lowest median p99; among those whose p99 does not
/// differ significantly from that one's (paired, round by round), the lowest median mean.
pub fn recommend(
    configs: &[ConfigStats],
    baseline: usize,
    aa: Option<usize>,
    rss_bound: f64,
    cfg: &BootstrapConfig,
) -> Result<Recommendation> {
    let base_rss = configs[baseline].median(Metric::PeakRss);
    let mut over_rss = Vec::new();
    let mut eligible = Vec::new();
    for (i, c) in configs.iter().enumerate().filter(|&(i, _)| Some(i) != aa) {
        match (c.median(Metric::PeakRss), base_rss) {
            (Some(r), Some(b)) if b > 0.0 && i != baseline && r > rss_bound * b => {
                over_rss.push((i, r / b))
            }
            _ => eligible.push(i),
        }
    }
    let key = |i: usize, m| configs[i].median(m).unwrap_or(f64::INFINITY);
    let lowest_p99 = *eligible
        .iter()
        .min_by(|&&a, &&b| key(a, Metric::P99).total_cmp(&key(b, Metric::P99)))
        .expect("the baseline is always eligible");
    let mut p99_ties = Vec::new();
    for &i in &eligible {
        let tie = i == lowest_p99
            || compare(&configs[lowest_p99], &configs[i], Metric::P99, cfg)?
                .is_some_and(|c| !c.is_significant());
        if tie {
            p99_ties.push(i);
        }
    }
    let best = *p99_ties
        .iter()
        .min_by(|&&a, &&b| {
            key(a, Metric::Mean)
                .total_cmp(&key(b, Metric::Mean))
                .then(key(a, Metric::P99).total_cmp(&key(b, Metric::P99)))
        })
        .expect("the lowest p99 ties with itself");
    Ok(Recommendation {
        best,
        over_rss,
        p99_ties,
        lowest_p99,
    })
}

/// `1.52 ± 0.04 × lower` (the ratio of medians, hyperfine's way), with `(n.s.)` when not
/// significant.
pub fn factor_text(c: &Comparison) -> String {
    let sig = if c.is_significant() { "" } else { " (n.s.)" };
    match c.factor() {
        Some(f) if f.direction == Direction::Same => format!("same{sig}"),
        Some(f) => format!(
            "{:.2} ± {:.2} × {}{sig}",
            f.value,
            f.half_width,
            if f.direction == Direction::Lower {
                "lower"
            } else {
                "higher"
            }
        ),
        None => format!(
            "{:+.3} ± {:.3}{sig}",
            c.difference.estimate,
            c.difference.half_width()
        ),
    }
}

pub fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

pub fn fmt_bytes(b: f64) -> String {
    format!("{:.1} MiB", b / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: u64, step: u64, t: f64, step_ms: f64) -> StepRow {
        StepRow {
            run,
            step,
            start_time: t,
            step_ms,
            policy: "p".into(),
            action: "none".into(),
            ..StepRow::default()
        }
    }

    /// Steps of `ms` each, back to back from t = 1000 s.
    fn rows(ms: &[f64]) -> Vec<StepRow> {
        let mut t = 1000.0;
        ms.iter()
            .enumerate()
            .map(|(i, &m)| {
                let r = row(1, i as u64 + 1, t, m);
                t += m / 1e3;
                r
            })
            .collect()
    }

    fn run(ms: &[f64], rss: u64) -> RunMetrics {
        RunMetrics::from_rows(&rows(ms), 0, Some(rss)).unwrap()
    }

    fn cfg() -> BootstrapConfig {
        BootstrapConfig::default().with_resamples(2000)
    }

    /// A configuration of `rounds` runs whose steps are `ms` scaled a little per round.
    fn config(name: &str, ms: &[f64], rss: u64, rounds: usize) -> ConfigStats {
        let runs = (0..rounds)
            .map(|r| {
                let k = 1.0 + 0.01 * r as f64;
                run(&ms.iter().map(|m| m * k).collect::<Vec<_>>(), rss)
            })
            .collect();
        ConfigStats::new(name, runs, &cfg()).unwrap()
    }

    #[test]
    fn a_run_is_reduced_with_boundary_collections_in_its_steps() {
        let mut rs = rows(&[10.0, 10.0, 10.0, 10.0]);
        rs[1].in_step = [2, 0, 0];
        rs[1].in_step_ms = [1.0, 0.0, 0.0];
        rs[1].collected = [50, 0, 0];
        rs[3].boundary_gen = Some(1);
        rs[3].boundary_ms = Some(10.0);
        rs[3].collected = [0, 400, 0];
        rs[0].outside_gc = 1; // before the first step: not in the span
        rs[0].outside_gc_ms = 99.0;
        rs[2].rss_bytes = Some(7 << 20);
        let m = RunMetrics::from_rows(&rs, 0, None).unwrap();
        assert_eq!(m.steps, 4);
        assert_eq!(m.step_ms, vec![10.0, 10.0, 10.0, 20.0]);
        assert_eq!(m.mean_ms, 12.5);
        assert_eq!(m.max_ms, 20.0);
        assert_eq!(m.p50_ms, 10.0);
        assert!((m.p99_ms - 19.7).abs() < 1e-9, "{}", m.p99_ms);
        assert_eq!(m.collections, [2, 1, 0]);
        assert_eq!(m.outside, 1);
        assert_eq!(m.collected, [50, 400, 0]);
        // 11 ms of GC in a 50 ms span (the boundary collection ends the span).
        assert!((m.gc_share - 11.0 / 50.0).abs() < 1e-6, "{}", m.gc_share);
        assert_eq!(
            m.peak_rss,
            Some((7 << 20) as f64),
            "rows' RSS without a peak"
        );
        let skipped = RunMetrics::from_rows(&rs, 3, Some(1)).unwrap();
        assert_eq!((skipped.steps, skipped.peak_rss), (1, Some(1.0)));
        assert!(RunMetrics::from_rows(&rs, 4, None).is_err());
    }

    #[test]
    fn skipping_counts_from_each_hook_run_and_spans_leave_the_gap_out() {
        let mut rs = rows(&[10.0, 10.0]);
        let mut later = rows(&[10.0, 10.0]);
        for r in &mut later {
            r.run = 2;
            r.start_time += 100.0; // 100 s later: not training time
        }
        rs.extend(later);
        let m = RunMetrics::from_rows(&rs, 1, None).unwrap();
        assert_eq!(m.steps, 2);
        let all = RunMetrics::from_rows(&rs, 0, None).unwrap();
        assert_eq!(all.gc_share, 0.0);
        assert_eq!(all.steps, 4);
    }

    #[test]
    fn the_recommendation_is_the_lowest_p99_within_the_rss_bound() {
        let base = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 80.0];
        let mib = 1 << 20;
        let configs = vec![
            config("default", &base, 100 * mib, 5),
            // lowest p99, but 1.5 x the memory: left out
            config("disable", &[9.0; 10], 150 * mib, 5),
            config(
                "every:10,gen=1",
                &[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 30.0],
                105 * mib,
                5,
            ),
            config(
                "learned",
                &[11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 33.0],
                104 * mib,
                5,
            ),
        ];
        let a = Analysis::new(configs, None, 1.10, &cfg()).unwrap();
        assert_eq!(a.baseline, 0);
        assert_eq!(a.recommendation.over_rss.len(), 1);
        assert_eq!(a.recommendation.over_rss[0].0, 1);
        assert_eq!(a.name(a.recommendation.best), "every:10,gen=1");
        let line = a.recommendation_line();
        assert!(
            line.starts_with("recommendation: every:10,gen=1 (step p99 "),
            "{line}"
        );
        assert!(line.contains("× lower than default"), "{line}");
        assert!(line.contains("within the 1.10 × bound"), "{line}");
        let learned = a.learned_lines();
        assert_eq!(learned.len(), 1);
        assert!(
            learned[0].starts_with("learned: loses to every:10,gen=1 by step p99 1.10 ± "),
            "{}",
            learned[0]
        );
        assert!(learned[0].contains("step mean 1.10 ± "), "{}", learned[0]);
        let speed = a.speed_lines();
        assert_eq!(speed.len(), 3);
        assert!(
            speed[0].starts_with("disable ran 1.89 ± 0.00 times faster than default"),
            "{}",
            speed[0]
        );
        assert!(
            speed[0].contains("times faster than default"),
            "{}",
            speed[0]
        );
        assert!(!speed[0].contains("not significant"), "{}", speed[0]);
        // p99 against the baseline: every one lower and significant over 5 rounds
        let c = a.vs_baseline(2, Metric::P99).unwrap();
        assert!(c.is_significant() && c.direction() == Direction::Lower);
        // The learned policy against each of the others round by round, in summary.json: a
        // bar may name one that is neither the baseline nor the recommendation.
        let s = crate::report::summary(&a);
        let against: Vec<&str> = s
            .learned_against
            .iter()
            .map(|p| p.against.as_str())
            .collect();
        assert_eq!(against, ["default", "disable", "every:10,gen=1"]);
        let p99 = &s.learned_against[1].metrics["p99_ms"];
        // 31.02 ms (the 99th percentile of nine 11s and a 33) over 9 ms, every round.
        assert!(
            (p99.ratio.estimate - 31.02 / 9.0).abs() < 1e-6,
            "{}",
            p99.ratio.estimate
        );
        assert!(p99.significant);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["learned_against"][1]["learned"], "learned");
        assert!(json["learned_against"][1]["metrics"]["mean_ms"]["ratio"]["upper"].is_number());
    }

    #[test]
    fn a_p99_tie_is_broken_by_the_mean() {
        // Two configurations with p99s that cross over the rounds (no significant difference);
        // the second has the lower mean.
        let mib = 1 << 20;
        let mk = |name: &str, p99s: &[f64], body: f64| {
            let runs = p99s
                .iter()
                .map(|&p| {
                    run(
                        &[body, body, body, body, body, body, body, body, body, p],
                        mib,
                    )
                })
                .collect();
            ConfigStats::new(name, runs, &cfg()).unwrap()
        };
        let configs = vec![
            mk("default", &[50.0, 52.0, 51.0, 53.0], 20.0),
            mk("every:1,gen=1", &[20.0, 22.0, 20.5, 21.0], 12.0),
            mk("learned", &[21.0, 20.0, 21.5, 20.0], 10.0),
        ];
        let a = Analysis::new(configs, None, 1.10, &cfg()).unwrap();
        assert_eq!(a.name(a.recommendation.lowest_p99), "learned");
        assert_eq!(a.recommendation.p99_ties, vec![1, 2]);
        assert_eq!(a.name(a.recommendation.best), "learned");
        assert_eq!(a.learned_lines(), vec!["learned: the recommendation"]);
        assert!(a.recommendation_line().contains("chosen by the lower mean"));
    }

    #[test]
    fn the_aa_copy_is_compared_with_the_baseline_but_never_recommended_nor_an_opponent() {
        let mib = 1 << 20;
        let configs = vec![
            config("default", &[10.0; 10], 100 * mib, 5),
            config(
                "learned",
                &[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 12.0],
                100 * mib,
                5,
            ),
            // The copy had the luckiest runs: still not the recommendation.
            config("default (A/A)", &[9.0; 10], 100 * mib, 5),
        ];
        let a = Analysis::new(configs, Some(2), 1.10, &cfg()).unwrap();
        assert_eq!(a.name(a.recommendation.best), "default");
        assert!(!a.recommendation.p99_ties.contains(&2));
        let against: Vec<usize> = a.learned_vs.iter().map(|p| p.against).collect();
        assert_eq!(against, [0]);
        let line = a.aa_line().unwrap();
        assert!(
            line.starts_with(
                "A/A: default (A/A) against default, the same configuration, round by round: \
                 step mean × 0.900 [0.900, 0.900], significant; step p99 × 0.900"
            ),
            "{line}"
        );
        assert!(line.contains("peak RSS × 1.000 [1.000, 1.000]"), "{line}");
        let s = crate::report::summary(&a);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["aa"]["name"], "default (A/A)");
        assert_eq!(json["aa"]["against"], "default");
        assert!(
            (json["aa"]["metrics"]["mean_ms"]["ratio"]["estimate"]
                .as_f64()
                .unwrap()
                - 0.9)
                .abs()
                < 1e-9
        );
        // The baseline itself cannot be its own copy.
        let one = vec![config("default", &[10.0; 10], mib, 2)];
        assert!(Analysis::new(one, Some(0), 1.10, &cfg()).is_err());
    }

    #[test]
    fn without_default_the_first_configuration_is_the_baseline_and_one_round_is_never_significant()
    {
        let configs = vec![
            config("every:5", &[10.0, 20.0], 1 << 20, 1),
            config("learned", &[5.0, 10.0], 1 << 20, 1),
        ];
        let a = Analysis::new(configs, None, 1.10, &cfg()).unwrap();
        assert_eq!(a.baseline, 0);
        assert_eq!(a.name(a.recommendation.best), "learned");
        let speed = a.speed_lines();
        assert_eq!(
            speed,
            vec!["learned ran 2.00 ± 0.00 times faster than every:5 (not significant)"]
        );
    }
}
