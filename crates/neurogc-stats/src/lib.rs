//! Statistics for NeuroGC's benchmark reports, in pure Rust with no dependency beyond the
//! workspace's seeded generator (`neurogc-rng`).
//!
//! A bench repeats each policy a few times (A B A B …) and reduces every run to one value per
//! metric (its p99, its peak RSS, …). This crate turns those per-run values into what the
//! report prints:
//!
//! - [`descriptive`]: median, mean, sample standard deviation, percentiles (NumPy's default
//!   linear interpolation), min/max on `&[f64]`; empty input and NaN/±∞ are [`StatsError`]s,
//!   never panics.
//! - [`welch`]: Welch's two-sample t-test (Welch–Satterthwaite df, two-sided p), matching
//!   `scipy.stats.ttest_ind(equal_var=False)`, with documented results for zero-variance input.
//! - [`student_t`] and [`special`]: the Student-t CDF via the regularized incomplete beta
//!   function (continued fraction, modified Lentz; ln Γ by Lanczos).
//! - [`bootstrap`]: seeded percentile-bootstrap intervals for a median, a difference of medians
//!   and a ratio of medians (default 10,000 resamples, 95 %).
//! - [`paired`]: the paired t-test and pair-resampling intervals, for trials that ran in the
//!   same window (rounds of alternating or turns runs).
//! - [`compare`]: [`Comparison`] of a candidate against a baseline — medians, ratio and
//!   difference with intervals, Welch's p, significance, a noise-floor check, and the
//!   hyperfine-style sentence `neurogc-seed: p99 1.31 ± 0.08 × lower than default`.
//!
//! ```
//! use neurogc_stats::{BootstrapConfig, Comparison};
//!
//! let default = [0.300, 0.310, 0.295, 0.320, 0.305]; // p99 (s) per repetition
//! let seed = [0.231, 0.236, 0.229, 0.240, 0.233];
//! let c = Comparison::new("p99", "default", &default, "neurogc-seed", &seed,
//!                         &BootstrapConfig::default()).unwrap();
//! assert!(c.summary().starts_with("neurogc-seed: p99 1.31 ± "));
//! assert!(c.is_significant());
//! ```
//!
//! Reference values come from SciPy/NumPy (`bench/stats/golden.py` writes
//! `tests/fixtures/golden.json`; `tests/golden.rs` checks them).

pub mod bootstrap;
pub mod compare;
pub mod descriptive;
mod error;
pub mod paired;
pub mod special;
pub mod student_t;
pub mod welch;

pub use bootstrap::{
    median_ci, median_difference_ci, median_ratio_ci, statistic_ci, BootstrapConfig,
    ConfidenceInterval, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
};
pub use compare::{Comparison, Direction, Factor, NoiseFloor, SIGNIFICANCE_LEVEL};
pub use descriptive::{max, mean, median, min, percentile, percentiles, std_dev, variance};
pub use error::{Result, StatsError};
pub use paired::{paired_ratio_and_difference, paired_t_test, PairedTest};
pub use special::{ln_gamma, regularized_incomplete_beta};
pub use student_t::{student_t_cdf, student_t_sf, student_t_two_sided_p};
pub use welch::{welch_t_test, WelchTest};
