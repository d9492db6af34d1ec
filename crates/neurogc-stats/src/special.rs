//! Special functions behind the Student-t distribution: ln Γ (Lanczos) and the regularized
//! incomplete beta function I_x(a, b) (continued fraction evaluated with the modified Lentz
//! method). Both agree with SciPy's `gammaln` / `betainc` to about 1e-13 relative on the golden
//! inputs (`tests/golden.rs`).

use crate::error::{Result, StatsError};

/// ln Γ(x) for finite x > 0.
pub fn ln_gamma(x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(ln_gamma_unchecked(x))
    } else {
        Err(StatsError::InvalidArgument {
            name: "x",
            value: x,
            expected: "a finite value > 0",
        })
    }
}

/// Lanczos approximation, g = 7, n = 9 (relative error of Γ about 1e-15).
pub(crate) fn ln_gamma_unchecked(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) = Γ(x + 1) / x keeps the series in its accurate range without the reflection
        // formula (x > 0 here).
        return ln_gamma_unchecked(x + 1.0) - x.ln();
    }
    let z = x - 1.0;
    let mut sum = COEF[0];
    for (i, &c) in COEF.iter().enumerate().skip(1) {
        sum += c / (z + i as f64);
    }
    let t = z + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 (finite) and x in [0, 1].
pub fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> Result<f64> {
    for (name, v) in [("a", a), ("b", b)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(StatsError::InvalidArgument {
                name,
                value: v,
                expected: "a finite value > 0",
            });
        }
    }
    if !(0.0..=1.0).contains(&x) {
        return Err(StatsError::InvalidArgument {
            name: "x",
            value: x,
            expected: "a value in [0, 1]",
        });
    }
    Ok(beta_inc(a, b, x, 1.0 - x))
}

/// I_x(a, b) with `y = 1 − x` supplied by the caller, who can often compute it without
/// cancellation (the t distribution does). Valid inputs only.
pub(crate) fn beta_inc(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = ln_gamma_unchecked(a + b) - ln_gamma_unchecked(a) - ln_gamma_unchecked(b)
        + a * x.ln()
        + b * y.ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a + 1)/(a + b + 2); beyond that, use the
    // symmetry I_x(a, b) = 1 − I_{1−x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, y) / b
    }
}

/// The continued fraction of I_x(a, b) (Numerical Recipes' `betacf`), modified Lentz.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITERATIONS: usize = 100_000;
    const EPS: f64 = 1e-16;
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };

    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITERATIONS {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step.
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        // Odd step.
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() <= EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert!(ln_gamma(1.0).unwrap().abs() < 1e-15);
        assert!(ln_gamma(2.0).unwrap().abs() < 1e-15);
        let half = ln_gamma(0.5).unwrap();
        assert!((half - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        // ln 9! = ln 362880
        assert!((ln_gamma(10.0).unwrap() - 362_880f64.ln()).abs() < 1e-12);
        // I_x(1, 1) = x; I_x(a, 1) = x^a.
        assert!((regularized_incomplete_beta(1.0, 1.0, 0.3).unwrap() - 0.3).abs() < 1e-15);
        assert!((regularized_incomplete_beta(3.0, 1.0, 0.5).unwrap() - 0.125).abs() < 1e-15);
        assert_eq!(regularized_incomplete_beta(2.0, 3.0, 0.0), Ok(0.0));
        assert_eq!(regularized_incomplete_beta(2.0, 3.0, 1.0), Ok(1.0));
    }

    #[test]
    fn bad_arguments() {
        assert!(ln_gamma(0.0).is_err());
        assert!(ln_gamma(-1.5).is_err());
        assert!(ln_gamma(f64::NAN).is_err());
        assert!(regularized_incomplete_beta(0.0, 1.0, 0.5).is_err());
        assert!(regularized_incomplete_beta(1.0, f64::INFINITY, 0.5).is_err());
        assert!(regularized_incomplete_beta(1.0, 1.0, 1.5).is_err());
        assert!(regularized_incomplete_beta(1.0, 1.0, f64::NAN).is_err());
    }
}
