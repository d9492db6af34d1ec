//! The model's inputs: the seed's ten sample columns, in the seed's order.

/// Feature names, in input order (`gc_triggered` as 0/1).
pub const FEATURES: [&str; N_FEATURES] = [
    "cpu",
    "mem",
    "disk_read",
    "disk_write",
    "net_sent",
    "net_recv",
    "rps",
    "p95",
    "p99",
    "gc_triggered",
];

pub const N_FEATURES: usize = 10;

/// One sample's features, raw (not normalised).
pub type FeatureVector = [f32; N_FEATURES];

/// Summary statistics the forest sees besides the raw window: per feature, over the window.
pub const WINDOW_STATS: [&str; 5] = ["mean", "std", "min", "max", "trend"];

/// Appends per-feature mean, population std, min, max and least-squares slope (per step) over
/// `window` (rows of normalised features) to `out`, feature-major (all stats of feature 0 first).
pub fn window_stats(window: &[FeatureVector], out: &mut Vec<f32>) {
    let n = window.len() as f32;
    let t_mean = (n - 1.0) / 2.0;
    let t_var: f32 = (0..window.len()).map(|t| (t as f32 - t_mean).powi(2)).sum();
    for f in 0..N_FEATURES {
        let mut sum = 0.0f32;
        let mut min = f32::INFINITY;
        let mut max = f32::NEG_INFINITY;
        for row in window {
            sum += row[f];
            min = min.min(row[f]);
            max = max.max(row[f]);
        }
        let mean = sum / n;
        let var = window.iter().map(|r| (r[f] - mean).powi(2)).sum::<f32>() / n;
        let cov: f32 = window
            .iter()
            .enumerate()
            .map(|(t, r)| (t as f32 - t_mean) * (r[f] - mean))
            .sum();
        let trend = if t_var > 0.0 { cov / t_var } else { 0.0 };
        out.extend_from_slice(&[mean, var.sqrt(), min, max, trend]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_a_ramp() {
        let window: Vec<FeatureVector> = (0..5).map(|t| [t as f32 * 2.0; N_FEATURES]).collect();
        let mut out = Vec::new();
        window_stats(&window, &mut out);
        assert_eq!(out.len(), N_FEATURES * 5);
        let (mean, std, min, max, trend) = (out[0], out[1], out[2], out[3], out[4]);
        assert!((mean - 4.0).abs() < 1e-6);
        assert!((std - 8f32.sqrt()).abs() < 1e-5);
        assert_eq!((min, max), (0.0, 8.0));
        assert!((trend - 2.0).abs() < 1e-6);
    }
}
