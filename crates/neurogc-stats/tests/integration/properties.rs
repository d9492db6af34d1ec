//! Properties of the bootstrap intervals and the comparison, on seeded synthetic data.

use neurogc_rng::Rng;
use neurogc_stats::{
    median, median_ci, median_difference_ci, median_ratio_ci, welch_t_test, BootstrapConfig,
    Comparison, DEFAULT_RESAMPLES,
};

/// Right-skewed positive values, like latencies: exp of a sum of uniforms.
fn latencies(rng: &mut Rng, n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let z: f64 = (0..4).map(|_| rng.next_f64() - 0.5).sum();
            scale * (0.5 * z).exp()
        })
        .collect()
}

fn fast() -> BootstrapConfig {
    BootstrapConfig::default().with_resamples(2_000)
}

#[test]
fn defaults() {
    let c = BootstrapConfig::default();
    assert_eq!(c.resamples, DEFAULT_RESAMPLES);
    assert_eq!(c.resamples, 10_000);
    assert_eq!(c.confidence, 0.95);
}

#[test]
fn intervals_contain_their_estimates() {
    let mut rng = Rng::new(11);
    for n in [2, 3, 5, 8, 20, 64] {
        for _ in 0..5 {
            let a = latencies(&mut rng, n, 0.3);
            let b = latencies(&mut rng, n + 1, 0.25);
            let cfg = BootstrapConfig::default()
                .with_resamples(1_000)
                .with_seed(rng.next_u64());
            let m = median_ci(&a, &cfg).unwrap();
            assert_eq!(m.estimate, median(&a).unwrap());
            assert!(m.contains(m.estimate), "n={n} {m:?}");
            let d = median_difference_ci(&a, &b, &cfg).unwrap();
            assert!(d.contains(d.estimate), "n={n} {d:?}");
            let r = median_ratio_ci(&a, &b, &cfg).unwrap();
            assert_eq!(r.estimate, median(&b).unwrap() / median(&a).unwrap());
            assert!(r.contains(r.estimate), "n={n} {r:?}");
            assert!(r.lower > 0.0 && r.lower <= r.upper);
        }
    }
}

#[test]
fn intervals_shrink_with_n() {
    let mut rng = Rng::new(5);
    let widths: Vec<[f64; 3]> = [10, 100, 1000]
        .iter()
        .map(|&n| {
            let a = latencies(&mut rng, n, 1.0);
            let b = latencies(&mut rng, n, 1.2);
            [
                median_ci(&a, &fast()).unwrap().width(),
                median_difference_ci(&a, &b, &fast()).unwrap().width(),
                median_ratio_ci(&a, &b, &fast()).unwrap().width(),
            ]
        })
        .collect();
    for k in 0..3 {
        assert!(
            widths[0][k] > widths[1][k] && widths[1][k] > widths[2][k],
            "{widths:?}"
        );
        // ~1/sqrt(n): a hundred times the data, about a tenth of the width.
        let shrink = widths[2][k] / widths[0][k];
        assert!(shrink > 0.03 && shrink < 0.3, "{widths:?}");
    }
}

#[test]
fn identical_samples() {
    // Constant, identical runs: ratio exactly 1 with the interval [1, 1], difference [0, 0].
    let a = [0.25; 5];
    let r = median_ratio_ci(&a, &a, &fast()).unwrap();
    assert_eq!((r.estimate, r.lower, r.upper), (1.0, 1.0, 1.0));
    let d = median_difference_ci(&a, &a, &fast()).unwrap();
    assert_eq!((d.estimate, d.lower, d.upper), (0.0, 0.0, 0.0));

    // The same varying runs on both sides: estimate exactly 1, an interval around it.
    let mut rng = Rng::new(3);
    let xs = latencies(&mut rng, 7, 0.1);
    let r = median_ratio_ci(&xs, &xs, &fast()).unwrap();
    assert_eq!(r.estimate, 1.0);
    assert!(r.lower < 1.0 && 1.0 < r.upper, "{r:?}");
    let c = Comparison::new("p99", "A", &xs, "A", &xs, &fast()).unwrap();
    assert!(!c.is_significant());
    assert_eq!(c.p_value(), Some(1.0));
}

#[test]
fn deterministic_per_seed() {
    let mut rng = Rng::new(9);
    let a = latencies(&mut rng, 6, 1.0);
    let b = latencies(&mut rng, 6, 1.1);
    let cfg = fast().with_seed(42);
    assert_eq!(
        median_ratio_ci(&a, &b, &cfg).unwrap(),
        median_ratio_ci(&a, &b, &cfg).unwrap()
    );
    assert_eq!(
        Comparison::new("m", "a", &a, "b", &b, &cfg).unwrap(),
        Comparison::new("m", "a", &a, "b", &b, &cfg).unwrap()
    );
    let other = median_ratio_ci(&a, &b, &cfg.with_seed(43)).unwrap();
    assert_ne!(median_ratio_ci(&a, &b, &cfg).unwrap(), other);
    // The comparison's intervals are the public functions' intervals.
    let c = Comparison::new("m", "a", &a, "b", &b, &cfg).unwrap();
    assert_eq!(c.ratio.unwrap(), median_ratio_ci(&a, &b, &cfg).unwrap());
    assert_eq!(c.difference, median_difference_ci(&a, &b, &cfg).unwrap());
    assert_eq!(c.baseline_median, median_ci(&a, &cfg).unwrap());
}

#[test]
fn median_interval_covers_the_true_median() {
    // Uniform(0, 1): true median 0.5. A 95 % interval should cover it in roughly 95 % of
    // independent samples (percentile bootstrap of a median is a little conservative/liberal
    // depending on n; the bound is loose and the seeds fixed).
    let mut rng = Rng::new(2024);
    let trials = 200;
    let cfg = BootstrapConfig::default().with_resamples(1_000);
    let covered = (0..trials)
        .filter(|&i| {
            let xs: Vec<f64> = (0..31).map(|_| rng.next_f64()).collect();
            median_ci(&xs, &cfg.with_seed(i)).unwrap().contains(0.5)
        })
        .count();
    let rate = covered as f64 / trials as f64;
    assert!((0.88..=0.995).contains(&rate), "coverage {rate}");
}

#[test]
fn scale_invariance() {
    let mut rng = Rng::new(17);
    let a = latencies(&mut rng, 9, 0.3);
    let b = latencies(&mut rng, 7, 0.2);
    let scaled = |xs: &[f64]| xs.iter().map(|x| x * 1000.0).collect::<Vec<_>>();
    let (a_ms, b_ms) = (scaled(&a), scaled(&b));
    let r = median_ratio_ci(&a, &b, &fast()).unwrap();
    let r_ms = median_ratio_ci(&a_ms, &b_ms, &fast()).unwrap();
    assert!((r.estimate - r_ms.estimate).abs() < 1e-12);
    assert!((r.lower - r_ms.lower).abs() < 1e-12 && (r.upper - r_ms.upper).abs() < 1e-12);
    let w = welch_t_test(&a, &b).unwrap();
    let w_ms = welch_t_test(&a_ms, &b_ms).unwrap();
    assert!((w.t - w_ms.t).abs() < 1e-9 && (w.p - w_ms.p).abs() < 1e-12);
}

#[test]
fn welch_p_falls_as_the_effect_grows() {
    let mut rng = Rng::new(8);
    let base = latencies(&mut rng, 5, 1.0);
    let ps: Vec<f64> = [0.0, 0.05, 0.1, 0.2, 0.4, 0.8]
        .iter()
        .map(|shift| {
            let cand: Vec<f64> = base.iter().map(|x| x + shift).collect();
            welch_t_test(&base, &cand).unwrap().p
        })
        .collect();
    assert_eq!(ps[0], 1.0);
    assert!(ps.windows(2).all(|w| w[1] < w[0]), "{ps:?}");
    assert!(ps[5] < 0.05, "{ps:?}");
}
