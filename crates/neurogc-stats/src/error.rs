//! The one error type of the crate.

use std::fmt;

/// Why a statistic could not be computed. Every function of the crate reports bad input with this
/// type instead of panicking or returning NaN.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StatsError {
    /// The sample has no values.
    Empty,
    /// The sample holds NaN or ±∞ at `index`.
    NonFinite { index: usize, value: f64 },
    /// The statistic needs at least `needed` values and got `got` (a sample standard deviation
    /// needs two).
    TooFew { needed: usize, got: usize },
    /// A parameter is outside its domain (a percentile above 100, a confidence level of 1, …).
    InvalidArgument {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
    /// A ratio's denominator — the baseline's median, in the original sample or in a bootstrap
    /// resample — is zero.
    ZeroDenominator,
}

/// `Result` with [`StatsError`].
pub type Result<T> = std::result::Result<T, StatsError>;

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::Empty => write!(f, "empty sample: no values to compute a statistic on"),
            StatsError::NonFinite { index, value } => {
                write!(f, "sample value {index} is {value}, not a finite number")
            }
            StatsError::TooFew { needed, got } => {
                write!(f, "needs at least {needed} values, got {got}")
            }
            StatsError::InvalidArgument {
                name,
                value,
                expected,
            } => write!(f, "{name} = {value} is invalid: expected {expected}"),
            StatsError::ZeroDenominator => {
                write!(f, "ratio undefined: the baseline's median is zero")
            }
        }
    }
}

impl std::error::Error for StatsError {}
