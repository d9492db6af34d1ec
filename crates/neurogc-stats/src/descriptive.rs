//! Descriptive statistics on `&[f64]`: mean, median, sample variance and standard deviation,
//! percentiles (NumPy's default linear interpolation), minimum and maximum.
//!
//! Every function rejects an empty sample ([`StatsError::Empty`]) and NaN or ±∞ values
//! ([`StatsError::NonFinite`], with the offending index); none of them panics.

use crate::error::{Result, StatsError};

/// Checks that `xs` is non-empty and all finite.
pub(crate) fn check(xs: &[f64]) -> Result<()> {
    if xs.is_empty() {
        return Err(StatsError::Empty);
    }
    match xs.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: xs[index],
        }),
        None => Ok(()),
    }
}

/// Arithmetic mean (compensated summation, so long samples keep their precision).
pub fn mean(xs: &[f64]) -> Result<f64> {
    check(xs)?;
    Ok(mean_unchecked(xs))
}

/// Mean of a non-empty, finite sample; exact for a constant sample.
pub(crate) fn mean_unchecked(xs: &[f64]) -> f64 {
    if is_constant(xs) {
        return xs[0];
    }
    // Neumaier's variant of Kahan summation.
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for &x in xs {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            comp += (sum - t) + x;
        } else {
            comp += (x - t) + sum;
        }
        sum = t;
    }
    (sum + comp) / xs.len() as f64
}

fn is_constant(xs: &[f64]) -> bool {
    xs.iter().all(|&x| x == xs[0])
}

/// Sample variance (divisor n − 1, NumPy's `var(ddof=1)`); needs at least two values. Exactly 0
/// for a constant sample.
pub fn variance(xs: &[f64]) -> Result<f64> {
    check(xs)?;
    if xs.len() < 2 {
        return Err(StatsError::TooFew {
            needed: 2,
            got: xs.len(),
        });
    }
    Ok(variance_unchecked(xs))
}

/// Variance of a finite sample of at least two values.
pub(crate) fn variance_unchecked(xs: &[f64]) -> f64 {
    if is_constant(xs) {
        return 0.0;
    }
    let m = mean_unchecked(xs);
    let ss: f64 = xs.iter().map(|&x| (x - m) * (x - m)).sum();
    ss / (xs.len() - 1) as f64
}

/// Sample standard deviation (divisor n − 1, NumPy's `std(ddof=1)`); needs at least two values.
pub fn std_dev(xs: &[f64]) -> Result<f64> {
    variance(xs).map(f64::sqrt)
}

/// Median: the middle value, or the mean of the two middle values for an even count (as
/// `numpy.median`).
pub fn median(xs: &[f64]) -> Result<f64> {
    check(xs)?;
    let mut buf = xs.to_vec();
    Ok(median_in_place(&mut buf))
}

/// Median of a non-empty, finite buffer, reordering it (selection, O(n)).
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    let mid = n / 2;
    let (left, &mut upper, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// The `p`-th percentile (`p` in [0, 100]) with linear interpolation between the closest ranks —
/// NumPy's default (`method="linear"`): the value at rank `(n − 1)·p/100` of the sorted sample.
pub fn percentile(xs: &[f64], p: f64) -> Result<f64> {
    check_percentile(p)?;
    check(xs)?;
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(percentile_sorted(&sorted, p))
}

/// Several percentiles of one sample, sorting it once; the result follows the order of `ps`.
pub fn percentiles(xs: &[f64], ps: &[f64]) -> Result<Vec<f64>> {
    for &p in ps {
        check_percentile(p)?;
    }
    check(xs)?;
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(ps.iter().map(|&p| percentile_sorted(&sorted, p)).collect())
}

fn check_percentile(p: f64) -> Result<()> {
    if (0.0..=100.0).contains(&p) {
        Ok(())
    } else {
        Err(StatsError::InvalidArgument {
            name: "percentile",
            value: p,
            expected: "a value in [0, 100]",
        })
    }
}

/// Percentile of a sorted, non-empty, finite sample; `p` in [0, 100].
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let h = (n - 1) as f64 * (p / 100.0);
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let (a, b) = (sorted[lo], sorted[hi]);
    let t = h - lo as f64;
    // NumPy's `_lerp`: interpolate from the nearer end, which keeps the result within [a, b].
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// Smallest value.
pub fn min(xs: &[f64]) -> Result<f64> {
    check(xs)?;
    Ok(xs.iter().copied().fold(f64::INFINITY, f64::min))
}

/// Largest value.
pub fn max(xs: &[f64]) -> Result<f64> {
    check(xs)?;
    Ok(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_non_finite_are_errors() {
        let empty: [f64; 0] = [];
        assert_eq!(mean(&empty), Err(StatsError::Empty));
        assert_eq!(median(&empty), Err(StatsError::Empty));
        assert_eq!(percentile(&empty, 50.0), Err(StatsError::Empty));
        assert_eq!(min(&empty), Err(StatsError::Empty));
        assert_eq!(max(&empty), Err(StatsError::Empty));
        assert_eq!(std_dev(&empty), Err(StatsError::Empty));
        assert!(matches!(
            median(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            mean(&[f64::INFINITY]),
            Err(StatsError::NonFinite { index: 0, .. })
        ));
        assert_eq!(
            std_dev(&[1.0]),
            Err(StatsError::TooFew { needed: 2, got: 1 })
        );
        assert!(matches!(
            percentile(&[1.0], 100.5),
            Err(StatsError::InvalidArgument { .. })
        ));
        assert!(percentile(&[1.0], f64::NAN).is_err());
        assert!(percentiles(&[1.0], &[50.0, -1.0]).is_err());
    }

    #[test]
    fn small_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Ok(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Ok(2.5));
        assert_eq!(median(&[7.0]), Ok(7.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 25.0), Ok(2.0));
        assert_eq!(percentile(&[1.0, 2.0], 75.0), Ok(1.75));
        assert_eq!(
            percentiles(&[10.0, 0.0], &[0.0, 50.0, 100.0]),
            Ok(vec![0.0, 5.0, 10.0])
        );
        assert_eq!(min(&[2.0, -1.0, 3.0]), Ok(-1.0));
        assert_eq!(max(&[2.0, -1.0, 3.0]), Ok(3.0));
        assert_eq!(variance(&[0.1, 0.1, 0.1]), Ok(0.0));
        assert_eq!(mean(&[0.1, 0.1, 0.1]), Ok(0.1));
        let sd = std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-15, "{sd}");
    }
}
