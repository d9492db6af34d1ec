//! Student's t distribution with `df` degrees of freedom (any finite df > 0, integer or not).
//!
//! With x = df / (df + t²), the two-sided tail is P(|T| ≥ |t|) = I_x(df/2, 1/2) (regularized
//! incomplete beta), and the CDF follows by symmetry. Tails are computed directly rather than as
//! `1 − cdf`, so a p-value of 1e-50 keeps its relative precision.

use crate::error::{Result, StatsError};
use crate::special::beta_inc;

fn check(t: f64, df: f64) -> Result<()> {
    if t.is_nan() {
        return Err(StatsError::InvalidArgument {
            name: "t",
            value: t,
            expected: "a number (±∞ is allowed)",
        });
    }
    if !(df.is_finite() && df > 0.0) {
        return Err(StatsError::InvalidArgument {
            name: "df",
            value: df,
            expected: "finite degrees of freedom > 0",
        });
    }
    Ok(())
}

/// P(|T| ≥ |t|) for valid inputs.
pub(crate) fn two_sided_unchecked(t: f64, df: f64) -> f64 {
    if t == 0.0 {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    // r = t²/df; x = 1/(1 + r), y = 1 − x = r/(1 + r), each without cancellation or ∞/∞.
    let r = (t / df.sqrt()) * (t / df.sqrt());
    let x = 1.0 / (1.0 + r);
    let y = if r > 1.0 {
        1.0 / (1.0 + 1.0 / r)
    } else {
        r / (1.0 + r)
    };
    beta_inc(df / 2.0, 0.5, x, y).clamp(0.0, 1.0)
}

/// P(T ≤ t).
pub fn student_t_cdf(t: f64, df: f64) -> Result<f64> {
    check(t, df)?;
    let tail = two_sided_unchecked(t, df) / 2.0;
    Ok(if t > 0.0 { 1.0 - tail } else { tail })
}

/// P(T > t), the survival function `1 − cdf`, accurate in the far right tail.
pub fn student_t_sf(t: f64, df: f64) -> Result<f64> {
    student_t_cdf(-t, df)
}

/// Two-sided p-value P(|T| ≥ |t|) = 2·(1 − cdf(|t|)), computed without the subtraction.
pub fn student_t_two_sided_p(t: f64, df: f64) -> Result<f64> {
    check(t, df)?;
    Ok(two_sided_unchecked(t, df))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms() {
        // df = 1 is Cauchy: cdf(t) = 1/2 + atan(t)/π.
        for t in [-30.0, -2.0, -0.3, 0.0, 0.7, 5.0] {
            let want = 0.5 + f64::atan(t) / std::f64::consts::PI;
            let got = student_t_cdf(t, 1.0).unwrap();
            assert!((got - want).abs() < 1e-14, "t={t}: {got} vs {want}");
        }
        // df = 2: cdf(t) = 1/2 + t / (2·sqrt(2 + t²)).
        for t in [-4.0f64, -1.0, 0.5, 3.0] {
            let want = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
            assert!((student_t_cdf(t, 2.0).unwrap() - want).abs() < 1e-14);
        }
    }

    #[test]
    fn edges() {
        assert_eq!(student_t_cdf(0.0, 3.5), Ok(0.5));
        assert_eq!(student_t_cdf(f64::INFINITY, 3.5), Ok(1.0));
        assert_eq!(student_t_cdf(f64::NEG_INFINITY, 3.5), Ok(0.0));
        assert_eq!(student_t_two_sided_p(0.0, 10.0), Ok(1.0));
        assert_eq!(student_t_two_sided_p(f64::INFINITY, 10.0), Ok(0.0));
        // Huge |t| whose square overflows.
        assert_eq!(student_t_two_sided_p(1e200, 10.0), Ok(0.0));
        assert_eq!(student_t_cdf(-1e200, 10.0), Ok(0.0));
        assert!(student_t_cdf(f64::NAN, 3.0).is_err());
        assert!(student_t_cdf(1.0, 0.0).is_err());
        assert!(student_t_cdf(1.0, f64::INFINITY).is_err());
        assert!(student_t_sf(1.0, -2.0).is_err());
    }

    #[test]
    fn symmetry() {
        for df in [0.5, 3.0, 17.3, 400.0] {
            for t in [0.1, 1.3, 6.0] {
                let lo = student_t_cdf(-t, df).unwrap();
                let hi = student_t_cdf(t, df).unwrap();
                assert!((lo + hi - 1.0).abs() < 1e-15);
                assert_eq!(student_t_sf(t, df).unwrap(), lo);
                let p = student_t_two_sided_p(-t, df).unwrap();
                assert!((p - 2.0 * lo).abs() <= 1e-15 * p.max(1e-300));
            }
        }
    }
}
