//! Welch's unequal-variance two-sample t-test, as `scipy.stats.ttest_ind(a, b, equal_var=False)`.
//!
//! Meant for per-run values (one p99 per repetition), not per-second samples of one run, which
//! are not independent.

use crate::descriptive::{check, mean_unchecked, variance_unchecked};
use crate::error::{Result, StatsError};
use crate::student_t::two_sided_unchecked;

/// The result of [`welch_t_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WelchTest {
    /// t = (mean(a) − mean(b)) / sqrt(var(a)/n_a + var(b)/n_b) — SciPy's sign convention.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom:
    /// (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1)) with v = var/n.
    pub df: f64,
    /// Two-sided p-value 2·(1 − T_df.cdf(|t|)).
    pub p: f64,
    pub mean_a: f64,
    pub mean_b: f64,
    /// Sample variances (divisor n − 1).
    pub var_a: f64,
    pub var_b: f64,
    pub n_a: usize,
    pub n_b: usize,
}

/// Welch's two-sample t-test of `a` against `b` (two-sided).
///
/// Errors: either sample empty or holding NaN/±∞, or with fewer than two values
/// ([`StatsError::TooFew`]; no variance can be estimated from one run).
///
/// Degenerate case, documented rather than NaN: when **both** samples are constant (zero
/// variance), `df = n_a + n_b − 2` and
/// - equal constants: `t = 0`, `p = 1` (no evidence of a difference);
/// - different constants: `t = ±∞` (sign of mean(a) − mean(b)), `p = 0`.
///
/// SciPy returns NaN for both. One constant side is not degenerate: the test is then driven by
/// the other side's variance (df = its n − 1), exactly as in SciPy.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Result<WelchTest> {
    check(a)?;
    check(b)?;
    for xs in [a, b] {
        if xs.len() < 2 {
            return Err(StatsError::TooFew {
                needed: 2,
                got: xs.len(),
            });
        }
    }
    let (n_a, n_b) = (a.len(), b.len());
    let (mean_a, mean_b) = (mean_unchecked(a), mean_unchecked(b));
    let (var_a, var_b) = (variance_unchecked(a), variance_unchecked(b));
    let (va, vb) = (var_a / n_a as f64, var_b / n_b as f64);
    let se2 = va + vb;
    let diff = mean_a - mean_b;

    let (t, df, p) = if se2 == 0.0 {
        let df = (n_a + n_b - 2) as f64;
        if diff == 0.0 {
            (0.0, df, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, df, 0.0)
        }
    } else {
        let t = diff / se2.sqrt();
        let df = se2 * se2 / (va * va / (n_a - 1) as f64 + vb * vb / (n_b - 1) as f64);
        (t, df, two_sided_unchecked(t, df))
    };
    Ok(WelchTest {
        t,
        df,
        p,
        mean_a,
        mean_b,
        var_a,
        var_b,
        n_a,
        n_b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_cases() {
        let same = welch_t_test(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!((same.t, same.df, same.p), (0.0, 3.0, 1.0));
        let apart = welch_t_test(&[2.0, 2.0], &[3.0, 3.0, 3.0]).unwrap();
        assert_eq!((apart.t, apart.df, apart.p), (f64::NEG_INFINITY, 3.0, 0.0));
        let apart = welch_t_test(&[0.1, 0.1, 0.1], &[0.2, 0.2]).unwrap();
        assert_eq!((apart.t, apart.p), (f64::NEG_INFINITY, 0.0));
        let apart = welch_t_test(&[0.2, 0.2], &[0.1, 0.1, 0.1]).unwrap();
        assert_eq!((apart.t, apart.p), (f64::INFINITY, 0.0));
        // One constant side: df comes from the other side alone.
        let one = welch_t_test(&[5.0, 5.0, 5.0, 5.0], &[4.0, 6.0, 5.0]).unwrap();
        assert!((one.df - 2.0).abs() < 1e-12);
        assert_eq!(one.t, 0.0);
        assert_eq!(one.p, 1.0);
    }

    #[test]
    fn errors() {
        assert_eq!(
            welch_t_test(&[1.0], &[1.0, 2.0]),
            Err(StatsError::TooFew { needed: 2, got: 1 })
        );
        assert_eq!(welch_t_test(&[], &[1.0, 2.0]), Err(StatsError::Empty));
        assert!(matches!(
            welch_t_test(&[1.0, 2.0], &[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn antisymmetric() {
        let a = [1.0, 2.5, 2.0, 3.1];
        let b = [2.2, 3.9, 3.0, 4.4, 3.3];
        let ab = welch_t_test(&a, &b).unwrap();
        let ba = welch_t_test(&b, &a).unwrap();
        assert_eq!(ab.t, -ba.t);
        assert_eq!(ab.df, ba.df);
        assert_eq!(ab.p, ba.p);
        assert!(ab.t < 0.0 && ab.p > 0.0 && ab.p < 1.0);
    }
}
