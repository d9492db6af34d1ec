//! From rows to training examples: labelling, time-ordered split, normalisation, windows.

use neurogc_model::{FeatureVector, Normalization, FEATURES, N_FEATURES};

use crate::dataset::Series;

/// Turns a series into one target per row. Pluggable: an outcome-based labeller comes next.
pub trait Labeller {
    fn name(&self) -> &str;
    /// Target for the window ending at `rows[end]` (raw, not normalised, values).
    fn label(&self, rows: &[FeatureVector], end: usize) -> f32;
}

/// The seed's heuristic: `clip(0.4·mem/100 + 0.3·cpu/100 + 0.3·(1 − 0.5·gc_triggered), 0, 1)`,
/// on the window's last sample.
pub struct SeedTarget;

impl Labeller for SeedTarget {
    fn name(&self) -> &str {
        "seed"
    }
    fn label(&self, rows: &[FeatureVector], end: usize) -> f32 {
        let r = &rows[end];
        let (cpu, mem, gc) = (r[0], r[1], r[9]);
        (0.4 * mem / 100.0 + 0.3 * cpu / 100.0 + 0.3 * (1.0 - 0.5 * gc)).clamp(0.0, 1.0)
    }
}

pub fn labeller(name: &str) -> Result<Box<dyn Labeller>, String> {
    match name {
        "seed" => Ok(Box::new(SeedTarget)),
        other => Err(format!("unknown target {other:?}; known: seed")),
    }
}

/// Training examples: windows of normalised rows and their targets. A window is a run of
/// consecutive rows, so the rows are kept once and each window is where it starts (windows
/// overlap: copying each would take `window` times the rows' memory).
#[derive(Clone, Debug, Default)]
pub struct Examples {
    /// Normalised rows, `N_FEATURES` each, flattened.
    rows: Vec<f32>,
    /// The first row of each window.
    starts: Vec<usize>,
    pub y: Vec<f32>,
    pub window: usize,
}

impl Examples {
    pub fn len(&self) -> usize {
        self.y.len()
    }
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
    /// Window `i`: `window × N_FEATURES` values, flattened.
    pub fn x(&self, i: usize) -> &[f32] {
        let start = self.starts[i] * N_FEATURES;
        &self.rows[start..start + self.window * N_FEATURES]
    }
    pub fn window_rows(&self, i: usize) -> Vec<FeatureVector> {
        self.x(i)
            .chunks_exact(N_FEATURES)
            .map(|c| c.try_into().expect("N_FEATURES"))
            .collect()
    }

    /// Adds `rows` (normalised) and a window starting at each of `starts` (indices into
    /// `rows`) with its target.
    fn extend(&mut self, rows: &[FeatureVector], starts: impl Iterator<Item = (usize, f32)>) {
        let base = self.rows.len() / N_FEATURES;
        self.rows.extend(rows.iter().flatten());
        for (start, y) in starts {
            self.starts.push(base + start);
            self.y.push(y);
        }
    }
}

/// The prepared data set.
pub struct Prepared {
    pub normalization: Normalization,
    pub train: Examples,
    pub val: Examples,
}

/// Splits every series in time order (the first `1 − val_fraction` of its windows train), fits
/// the z-score statistics on the training rows only, and builds windows that never cross files.
pub fn prepare(
    series: &[Series],
    window: usize,
    val_fraction: f64,
    labeller: &dyn Labeller,
) -> Result<Prepared, String> {
    let mut spans = Vec::new();
    for s in series {
        if s.rows.len() < window {
            return Err(format!(
                "{}: {} rows, fewer than one window of {window}",
                s.path.display(),
                s.rows.len()
            ));
        }
        let windows = s.rows.len() - window + 1;
        let n_val = ((windows as f64) * val_fraction).round() as usize;
        let n_train = windows - n_val.min(windows);
        spans.push((s, n_train, windows));
    }
    if spans.iter().all(|(_, n_train, _)| *n_train == 0) {
        return Err("no training windows left after the validation split".into());
    }
    // Statistics over rows that appear in training windows only.
    // Statistics of the rows the training windows use (never the validation part).
    let normalization = Normalization::fit(spans.iter().flat_map(|(s, n_train, _)| {
        let rows_used = if *n_train == 0 {
            0
        } else {
            n_train + window - 1
        };
        &s.rows[..rows_used]
    }));
    // Values near f32's limits fit the file but not the scaling: refuse them by name here, not
    // as a model that fails to load after training.
    let n = &normalization;
    if let Some(f) = (0..N_FEATURES).find(|&f| !(n.mean[f].is_finite() && n.std[f].is_finite())) {
        let (s, r) = spans
            .iter()
            .flat_map(|(s, _, _)| (0..s.rows.len()).map(move |r| (*s, r)))
            .reduce(|a, b| {
                let abs = |(s, r): (&Series, usize)| s.rows[r][f].abs();
                if abs(b) > abs(a) {
                    b
                } else {
                    a
                }
            })
            .expect("a training row");
        return Err(unscalable(s, r, f, n));
    }
    let mut train = Examples {
        window,
        ..Default::default()
    };
    let mut val = Examples {
        window,
        ..Default::default()
    };
    for (s, n_train, windows) in &spans {
        let mut normed: Vec<FeatureVector> = Vec::with_capacity(s.rows.len());
        for (r, row) in s.rows.iter().enumerate() {
            let mut x = *row;
            normalization.apply(&mut x);
            if let Some(f) = x.iter().position(|v| !v.is_finite()) {
                return Err(unscalable(s, r, f, n));
            }
            normed.push(x);
        }
        let label = |start: usize| labeller.label(&s.rows, start + window - 1);
        if *n_train > 0 {
            train.extend(
                &normed[..n_train + window - 1],
                (0..*n_train).map(|start| (start, label(start))),
            );
        }
        if windows > n_train {
            val.extend(
                &normed[*n_train..windows + window - 1],
                (*n_train..*windows).map(|start| (start - n_train, label(start))),
            );
        }
    }
    Ok(Prepared {
        normalization,
        train,
        val,
    })
}

fn unscalable(s: &Series, r: usize, f: usize, n: &Normalization) -> String {
    format!(
        "{}: row {}: column {:?}: {:?} is too large to scale (the training rows' mean {:?}, \
         std {:?}): values this far apart overflow f32",
        s.path.display(),
        r + 1,
        FEATURES[f],
        s.rows[r][f],
        n.mean[f],
        n.std[f]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn series(n: usize) -> Series {
        Series {
            path: PathBuf::from("s.csv"),
            sha256: String::new(),
            rows: (0..n)
                .map(|i| [i as f32, 50.0, 0., 0., 0., 0., 0., 0., 0., (i % 2) as f32])
                .collect(),
            warnings: vec![],
        }
    }

    #[test]
    fn seed_target_formula() {
        let rows = vec![[50.0, 60.0, 0., 0., 0., 0., 0., 0., 0., 1.0]];
        let y = SeedTarget.label(&rows, 0);
        assert!((y - (0.4 * 0.6 + 0.3 * 0.5 + 0.3 * 0.5)).abs() < 1e-6);
    }

    #[test]
    fn split_is_in_time_order_and_stats_come_from_training_rows() {
        let p = prepare(&[series(30)], 10, 0.2, &SeedTarget).unwrap();
        // 21 windows: 17 train, 4 validation (the last ones).
        assert_eq!((p.train.len(), p.val.len()), (17, 4));
        // Training rows are 0..=25: mean of cpu = 12.5.
        assert!((p.normalization.mean[0] - 12.5).abs() < 1e-4);
        assert_eq!(p.normalization.std[1], 0.0, "a constant column has std 0");
        // The first validation window ends at row 26.
        let last_row = p.val.window_rows(0)[9];
        assert!(
            (last_row[0] * p.normalization.std[0] + p.normalization.mean[0] - 26.0).abs() < 1e-3
        );
    }

    #[test]
    fn too_few_rows_is_an_error_naming_the_file() {
        let err = prepare(&[series(5)], 10, 0.2, &SeedTarget).err().unwrap();
        assert!(
            err.contains("s.csv: 5 rows, fewer than one window of 10"),
            "{err}"
        );
    }
}
