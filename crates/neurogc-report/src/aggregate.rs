//! From per-trial values to per-policy medians, comparisons with the baseline, marks, and the
//! A/A check. All statistics come from `neurogc-stats`.

use std::collections::BTreeMap;

use neurogc_stats::{
    median_ci, BootstrapConfig, Comparison, ConfidenceInterval, Direction, NoiseFloor,
};

use crate::metric::{Better, Metric};
use crate::noise::{AaSummary, Floors};
use crate::rundir::RunData;
use crate::trial::{self, TrialMetrics, Usable};
use neurogc_record::Mode;

/// The A/A acceptance bound on |Δ p99|.
pub const AA_P99_BOUND: f64 = 0.05;

/// One policy's trials and medians.
#[derive(Debug, Clone)]
pub struct PolicyStats {
    pub label: String,
    pub spec: String,
    /// Indices into [`Analysis::trials`], all of this policy's trials.
    pub trials: Vec<usize>,
    /// The trials the medians are taken over: the complete ones, or the partial ones when
    /// none is complete.
    pub used: Vec<usize>,
    /// No complete trial: the medians come from partial trials.
    pub partial_only: bool,
    /// Per metric, the used trials' values (trials without the value are left out).
    pub values: BTreeMap<Metric, Vec<f64>>,
    /// Per metric, the pair key of each value (see [`TrialMetrics::pair`]).
    pub pairs: BTreeMap<Metric, Vec<(u32, u32)>>,
    /// Median with its bootstrap interval.
    pub medians: BTreeMap<Metric, ConfidenceInterval>,
}

impl PolicyStats {
    pub fn median(&self, m: Metric) -> Option<f64> {
        self.medians.get(&m).map(|c| c.estimate)
    }

    /// The largest value over the used trials (or rounds): for the peak RSS, the run's peak,
    /// where the median is a typical round's (a policy whose memory grows peaks in its last).
    pub fn max(&self, m: Metric) -> Option<f64> {
        self.values.get(&m)?.iter().copied().reduce(f64::max)
    }
}

/// How a difference is marked in the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Significant, beyond the noise floor, in the good direction.
    Better,
    /// Significant, beyond the noise floor, in the bad direction.
    Worse,
    /// Significant and beyond the floor, for a metric with no good direction.
    Changed,
    /// Smaller than the noise floor.
    WithinNoise,
    /// Not significant (p ≥ 0.05 or the interval includes no change, or < 2 trials).
    NotSignificant,
    /// Significant, but no noise floor was measured with this run's design: not judged.
    NoFloor,
}

impl Mark {
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Better => "🟢",
            Mark::Worse => "🔴",
            Mark::Changed => "🔵",
            Mark::WithinNoise | Mark::NotSignificant | Mark::NoFloor => "⚪",
        }
    }
}

/// The mark of a comparison: within the floor first, then significance, then direction. A
/// significant difference with no floor of the run's design is shown but not judged: a floor
/// holds only for the design that measured it.
pub fn mark(c: &Comparison, better: Better, floor: Option<NoiseFloor>) -> Mark {
    if floor.is_some_and(|f| c.within_noise(f)) {
        return Mark::WithinNoise;
    }
    if !c.is_significant() {
        return Mark::NotSignificant;
    }
    if floor.is_none() {
        return Mark::NoFloor;
    }
    match (better, c.direction()) {
        (_, Direction::Same) => Mark::NotSignificant,
        (Better::Neither, _) => Mark::Changed,
        (Better::Lower, Direction::Lower) | (Better::Higher, Direction::Higher) => Mark::Better,
        _ => Mark::Worse,
    }
}

/// A candidate's metric against the baseline's.
#[derive(Debug, Clone)]
pub struct Cell {
    pub comparison: Comparison,
    pub floor: Option<NoiseFloor>,
    pub mark: Mark,
}

/// The A/A check of a run whose policies all have the same spec.
#[derive(Debug, Clone)]
pub struct AaCheck {
    /// Per metric, the floor measured by this run (largest over its candidates).
    pub floors: BTreeMap<Metric, f64>,
    /// Largest |Δ median p99| / baseline over the candidates.
    pub p99_change: Option<f64>,
    pub p99_significant: bool,
    /// Other metrics with a significant difference (expected about 1 in 20 by chance).
    pub significant: Vec<Metric>,
}

impl AaCheck {
    pub fn pass(&self) -> bool {
        self.p99_change.is_some_and(|c| c < AA_P99_BOUND) && !self.p99_significant
    }

    pub fn summary(&self) -> AaSummary {
        AaSummary {
            p99_change: self.p99_change,
            p99_significant: self.p99_significant,
            pass: self.pass(),
        }
    }
}

/// A run, analysed.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub trials: Vec<TrialMetrics>,
    /// In `run.json` order; the first is the baseline.
    pub policies: Vec<PolicyStats>,
    /// `cells[i]` compares `policies[i + 1]` with the baseline.
    pub cells: Vec<BTreeMap<Metric, Cell>>,
    pub floors: Option<Floors>,
    pub aa: Option<AaCheck>,
    /// Candidates were compared with the baseline in pairs (units that ran in the same window).
    pub paired: bool,
}

impl Analysis {
    pub fn baseline(&self) -> &PolicyStats {
        &self.policies[0]
    }

    pub fn cell(&self, candidate: usize, m: Metric) -> Option<&Cell> {
        candidate
            .checked_sub(1)
            .and_then(|i| self.cells.get(i))
            .and_then(|c| c.get(&m))
    }

    /// Each policy's peak RSS over the run against the `default` policy's, in `policies` order:
    /// the run's peak (the largest round's), not a typical round's, since memory that keeps
    /// growing peaks in the last round. `None` where either was not measured.
    pub fn peak_rss_to_default(&self) -> Vec<Option<f64>> {
        let peak = |p: &PolicyStats| p.max(Metric::RssPeak);
        let default = self.policies.iter().find(|p| p.spec == "default");
        self.policies
            .iter()
            .map(|p| Some(peak(p)? / peak(default?)?).filter(|r| r.is_finite()))
            .collect()
    }
}

/// The bootstrap settings of every interval in a report (seeded: reports are reproducible).
pub fn bootstrap() -> BootstrapConfig {
    BootstrapConfig::default()
}

/// Analyses a run with the given floors (none: "not measured").
pub fn analyse(run: &RunData, floors: Option<Floors>) -> Analysis {
    let cfg = bootstrap();
    let interval = Some(run.info.interval_s);
    // In a turns run each round is a unit; elsewhere each trial.
    let trials: Vec<TrialMetrics> = if run.info.mode == Mode::Turns {
        run.trials
            .iter()
            .flat_map(|t| trial::compute_rounds(t, interval))
            .collect()
    } else {
        run.trials
            .iter()
            .map(|t| trial::compute(t, interval))
            .collect()
    };
    // Trials that ran in the same window are compared as pairs.
    let paired = run.info.mode != Mode::Sequential;
    let policies: Vec<PolicyStats> = run
        .info
        .policies
        .iter()
        .map(|p| {
            let mine: Vec<usize> = (0..trials.len())
                .filter(|&i| trials[i].label == p.label)
                .collect();
            let complete: Vec<usize> = mine
                .iter()
                .copied()
                .filter(|&i| trials[i].usable == Usable::Complete)
                .collect();
            let (used, partial_only) = if complete.is_empty() {
                let partial: Vec<usize> = mine
                    .iter()
                    .copied()
                    .filter(|&i| trials[i].usable == Usable::Partial)
                    .collect();
                let any = !partial.is_empty();
                (partial, any)
            } else {
                (complete, false)
            };
            let mut values = BTreeMap::new();
            let mut pairs = BTreeMap::new();
            let mut medians = BTreeMap::new();
            for &m in Metric::ALL {
                let (k, v): (Vec<(u32, u32)>, Vec<f64>) = used
                    .iter()
                    .filter_map(|&i| Some((trials[i].pair, trials[i].get(m)?)))
                    .filter(|(_, x)| x.is_finite())
                    .unzip();
                if v.is_empty() {
                    continue;
                }
                if let Ok(ci) = median_ci(&v, &cfg) {
                    medians.insert(m, ci);
                }
                values.insert(m, v);
                pairs.insert(m, k);
            }
            PolicyStats {
                label: p.label.clone(),
                spec: p.spec.clone(),
                trials: mine,
                used,
                partial_only,
                values,
                pairs,
                medians,
            }
        })
        .collect();

    let compare = |floors: Option<&Floors>| -> Vec<BTreeMap<Metric, Cell>> {
        let base = &policies[0];
        policies[1..]
            .iter()
            .map(|cand| {
                let mut cells = BTreeMap::new();
                for &m in Metric::ALL {
                    let (Some(b), Some(c)) = (base.values.get(&m), cand.values.get(&m)) else {
                        continue;
                    };
                    let comparison = if paired {
                        let (b, c) = aligned(&base.pairs[&m], b, &cand.pairs[&m], c);
                        Comparison::paired(m.short(), &base.label, &b, &cand.label, &c, &cfg)
                    } else {
                        Comparison::new(m.short(), &base.label, b, &cand.label, c, &cfg)
                    };
                    let Ok(comparison) = comparison else {
                        continue;
                    };
                    let floor = floors.and_then(|f| f.get(m));
                    let mark = mark(&comparison, m.better(), floor);
                    cells.insert(
                        m,
                        Cell {
                            comparison,
                            floor,
                            mark,
                        },
                    );
                }
                cells
            })
            .collect()
    };
    let cells = compare(floors.as_ref());
    let aa = run.is_aa().then(|| aa_check(&cells));
    Analysis {
        trials,
        policies,
        cells,
        floors,
        aa,
        paired,
    }
}

/// The values of the pairs both sides have, in pair order.
fn aligned(
    base_keys: &[(u32, u32)],
    base: &[f64],
    cand_keys: &[(u32, u32)],
    cand: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let cand_by_key: BTreeMap<_, _> = cand_keys.iter().zip(cand).collect();
    base_keys
        .iter()
        .zip(base)
        .filter_map(|(k, b)| Some((*b, **cand_by_key.get(k)?)))
        .unzip()
}

fn aa_check(cells: &[BTreeMap<Metric, Cell>]) -> AaCheck {
    let mut floors: BTreeMap<Metric, f64> = BTreeMap::new();
    let mut p99_change: Option<f64> = None;
    let mut p99_significant = false;
    let mut significant = Vec::new();
    for cand in cells {
        for (&m, cell) in cand {
            if let Some(f) = NoiseFloor::from_aa(&cell.comparison) {
                let e = floors.entry(m).or_insert(0.0);
                *e = e.max(f.relative());
            }
            let sig = cell.comparison.is_significant();
            if m == Metric::P99 {
                p99_significant |= sig;
                if let Some(c) = cell.comparison.relative_change() {
                    p99_change = Some(p99_change.map_or(c.abs(), |p: f64| p.max(c.abs())));
                }
            } else if sig && !significant.contains(&m) {
                significant.push(m);
            }
        }
    }
    AaCheck {
        floors,
        p99_change,
        p99_significant,
        significant,
    }
}

#[cfg(test)]
mod tests {
    //! Every branch of the verdicts, pinned on constructed measurements.
    use super::*;
    use neurogc_stats::BootstrapConfig;

    fn compare(base: &[f64], cand: &[f64]) -> Comparison {
        Comparison::new("p99", "a", base, "b", cand, &BootstrapConfig::default()).unwrap()
    }

    const BASE: [f64; 5] = [10.0, 10.2, 9.9, 10.1, 10.0];
    const LOWER: [f64; 5] = [5.0, 5.1, 4.9, 5.0, 5.05];
    const HIGHER: [f64; 5] = [20.0, 20.3, 19.8, 20.1, 20.0];
    const NOISY: [f64; 5] = [9.0, 11.5, 10.4, 8.8, 10.9];
    const SLIGHTLY_LOWER: [f64; 5] = [9.70, 9.88, 9.61, 9.79, 9.70];

    fn floor(f: f64) -> Option<NoiseFloor> {
        Some(NoiseFloor::new(f).unwrap())
    }

    #[test]
    fn marks_follow_the_metric_direction() {
        let lower = compare(&BASE, &LOWER);
        let higher = compare(&BASE, &HIGHER);
        assert!(lower.is_significant() && higher.is_significant());
        let f = floor(0.05);
        assert_eq!(mark(&lower, Better::Lower, f), Mark::Better);
        assert_eq!(mark(&higher, Better::Lower, f), Mark::Worse);
        assert_eq!(mark(&higher, Better::Higher, f), Mark::Better);
        assert_eq!(mark(&lower, Better::Higher, f), Mark::Worse);
        assert_eq!(mark(&lower, Better::Neither, f), Mark::Changed);
        assert_eq!(mark(&higher, Better::Neither, f), Mark::Changed);
    }

    #[test]
    fn the_floor_comes_before_significance() {
        let small = compare(&BASE, &SLIGHTLY_LOWER);
        assert!(small.is_significant(), "3 % lower, consistently");
        assert_eq!(mark(&small, Better::Lower, floor(0.05)), Mark::WithinNoise);
        // A floor smaller than the change lets the verdict through.
        assert_eq!(mark(&small, Better::Lower, floor(0.01)), Mark::Better);
        // Without a floor of the run's design, a significant difference is not judged.
        assert_eq!(mark(&small, Better::Lower, None), Mark::NoFloor);
        assert_eq!(
            mark(&compare(&BASE, &HIGHER), Better::Lower, None),
            Mark::NoFloor
        );
    }

    #[test]
    fn noise_is_not_significant() {
        let noisy = compare(&BASE, &NOISY);
        assert!(!noisy.is_significant());
        assert_eq!(mark(&noisy, Better::Lower, None), Mark::NotSignificant);
        let same = compare(&BASE, &BASE);
        assert_eq!(mark(&same, Better::Lower, None), Mark::NotSignificant);
        let one_trial = compare(&[10.0], &[5.0]);
        assert_eq!(mark(&one_trial, Better::Lower, None), Mark::NotSignificant);
    }

    fn cells(p99: Comparison) -> Vec<BTreeMap<Metric, Cell>> {
        let mark = mark(&p99, Better::Lower, None);
        vec![BTreeMap::from([(
            Metric::P99,
            Cell {
                comparison: p99,
                floor: None,
                mark,
            },
        )])]
    }

    #[test]
    fn aa_passes_only_when_p99_is_close_and_not_significant() {
        let close = aa_check(&cells(compare(&BASE, &NOISY)));
        assert!(close.p99_change.unwrap() < AA_P99_BOUND, "{close:?}");
        assert!(close.pass());
        assert!(
            close.floors[&Metric::P99] > 0.0,
            "the spread becomes the floor"
        );
        // Significant, though under 5 %: fails.
        let biased = aa_check(&cells(compare(&BASE, &SLIGHTLY_LOWER)));
        assert!(biased.p99_significant && biased.p99_change.unwrap() < AA_P99_BOUND);
        assert!(!biased.pass());
        // Far apart: fails.
        let far = aa_check(&cells(compare(&BASE, &HIGHER)));
        assert!(!far.pass());
        assert!(!far.summary().pass);
    }
}
