//! From rows to training examples: labelling, time-ordered split, normalisation, windows.

use neurogc_model::{FeatureVector, Normalization, FEATURES, N_FEATURES};

use crate::dataset::Series;

/// Turns a series into one target per row. Pluggable: an outcome-based labeller comes next.
pub trait Labeller {
    fn name(&self) -> &str;
    /// Target for the window ending at `rows[end]` (raw, not normalised, values), or the column
    /// it needs that is empty (unmeasured, NaN) there: that window has no target and is skipped.
    fn label(&self, rows: &[FeatureVector], end: usize) -> Result<f32, &'static str>;
}

/// The seed's heuristic: `clip(0.4·mem/100 + 0.3·cpu/100 + 0.3·(1 − 0.5·gc_triggered), 0, 1)`,
/// on the window's last sample (none if one of the three is empty there).
pub struct SeedTarget;

impl Labeller for SeedTarget {
    fn name(&self) -> &str {
        "seed"
    }
    fn label(&self, rows: &[FeatureVector], end: usize) -> Result<f32, &'static str> {
        let r = &rows[end];
        let (cpu, mem, gc) = (r[0], r[1], r[9]);
        if let Some(f) = [0, 1, 9].into_iter().find(|&f| r[f].is_nan()) {
            return Err(FEATURES[f]);
        }
        Ok((0.4 * mem / 100.0 + 0.3 * cpu / 100.0 + 0.3 * (1.0 - 0.5 * gc)).clamp(0.0, 1.0))
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

    /// Refuses a non-finite target or input: it would reach the optimizer and train a model
    /// that cannot load. `part` says which examples ("training", "validation").
    pub fn check_finite(&self, part: &str, target: &str) -> Result<(), String> {
        if let Some((i, y)) = self.y.iter().enumerate().find(|(_, y)| !y.is_finite()) {
            return Err(format!(
                "internal error: {part} window {} has the {target} target {y}, not a finite \
                 number; nothing was trained",
                i + 1
            ));
        }
        if let Some((k, v)) = self.rows.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(format!(
                "internal error: a {part} window's column {:?} is {v} once normalised, not a \
                 finite number; nothing was trained",
                FEATURES[k % N_FEATURES]
            ));
        }
        Ok(())
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
    /// Windows left out because their target cannot be computed (an input of it is empty).
    pub skipped: usize,
    /// One line per file with skipped windows: how many, and the first.
    pub warnings: Vec<String>,
}

/// Splits every series in time order (the first `1 − val_fraction` of its windows train), fits
/// the z-score statistics on the training rows only, and builds windows that never cross files,
/// nor the processes of a file that holds several ([`Series::processes`]: each is split on its
/// own).
pub fn prepare(
    series: &[Series],
    window: usize,
    val_fraction: f64,
    labeller: &dyn Labeller,
) -> Result<Prepared, String> {
    let parts: Vec<Part> = series
        .iter()
        .flat_map(|s| {
            s.segments().into_iter().map(move |range| Part {
                path: &s.path,
                series: s,
                offset: range.start,
                rows: &s.rows[range],
            })
        })
        .collect();
    let mut spans = Vec::new();
    for s in &parts {
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
                let abs = |(s, r): (&Part, usize)| s.rows[r][f].abs();
                if abs(b) > abs(a) {
                    b
                } else {
                    a
                }
            })
            .expect("a training row");
        return Err(unscalable(s.series, s.offset + r, f, n));
    }
    let mut train = Examples {
        window,
        ..Default::default()
    };
    let mut val = Examples {
        window,
        ..Default::default()
    };
    let (mut warnings, mut total_skipped) = (Vec::new(), 0);
    for (s, n_train, windows) in &spans {
        let mut normed: Vec<FeatureVector> = Vec::with_capacity(s.rows.len());
        for (r, row) in s.rows.iter().enumerate() {
            let mut x = *row;
            normalization.apply(&mut x);
            if let Some(f) = x.iter().position(|v| !v.is_finite()) {
                return Err(unscalable(s.series, s.offset + r, f, n));
            }
            normed.push(x);
        }
        // A window whose target cannot be computed is left out of its part (the split stays
        // where it is in time); the first such window and the count are reported per file.
        let mut labels = Vec::with_capacity(*windows);
        let (mut skipped, mut first) = (0, None);
        for start in 0..*windows {
            let end = start + window - 1;
            match labeller.label(s.rows, end) {
                Ok(y) if y.is_finite() => labels.push(Some(y)),
                Ok(y) => {
                    return Err(format!(
                        "{}:{}: the {} target of the window ending here is {y}, not a finite \
                         number (an internal error in the target)",
                        s.path.display(),
                        s.series.line(s.offset + end),
                        labeller.name()
                    ))
                }
                Err(column) => {
                    skipped += 1;
                    first.get_or_insert((end, column));
                    labels.push(None);
                }
            }
        }
        if let Some((end, column)) = first {
            warnings.push(format!(
                "{}:{}: column {column:?} is empty, so the {} target of the window ending on \
                 this line cannot be computed: {skipped} window{} of {windows} skipped because \
                 an input of its target is empty; this is the first",
                s.path.display(),
                s.series.line(s.offset + end),
                labeller.name(),
                if skipped == 1 { "" } else { "s" },
            ));
            total_skipped += skipped;
        }
        let labels = &labels;
        let labelled = |range: std::ops::Range<usize>, offset: usize| {
            range.filter_map(move |start| labels[start].map(|y| (start - offset, y)))
        };
        if *n_train > 0 {
            train.extend(&normed[..n_train + window - 1], labelled(0..*n_train, 0));
        }
        if windows > n_train {
            val.extend(
                &normed[*n_train..windows + window - 1],
                labelled(*n_train..*windows, *n_train),
            );
        }
    }
    if train.is_empty() {
        let why = warnings.join("; ");
        return Err(if val.is_empty() {
            format!(
                "no window has a {} target to train on: {why}",
                labeller.name()
            )
        } else {
            format!(
                "no training windows left (only validation windows have a {} target): {why}",
                labeller.name()
            )
        });
    }
    Ok(Prepared {
        normalization,
        train,
        val,
        skipped: total_skipped,
        warnings,
    })
}

/// The rows of one series windows may span (all of a file's, or one process' of it).
struct Part<'a> {
    path: &'a std::path::Path,
    series: &'a Series,
    /// Where `rows` start in `series.rows`.
    offset: usize,
    rows: &'a [FeatureVector],
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
            line_jumps: vec![],
            warnings: vec![],
            processes: vec![],
        }
    }

    #[test]
    fn windows_never_span_two_processes() {
        // 30 rows of two processes, 15 each: 6 windows of 10 in each, none across the seam.
        let mut s = series(30);
        s.processes = vec![0..15, 15..30];
        let p = prepare(&[s], 10, 0.0, &SeedTarget).unwrap();
        assert_eq!((p.train.len(), p.val.len()), (12, 0));
        let firsts: Vec<f32> = (0..p.train.len())
            .map(|i| {
                let row = p.train.window_rows(i)[0];
                (row[0] * p.normalization.std[0] + p.normalization.mean[0]).round()
            })
            .collect();
        let expected: Vec<f32> = (0..6).chain(15..21).map(|i| i as f32).collect();
        assert_eq!(firsts, expected);
        // A process with fewer rows than a window is an error naming the file.
        let mut s = series(30);
        s.processes = vec![0..25, 25..30];
        let Err(e) = prepare(&[s], 10, 0.0, &SeedTarget) else {
            panic!("a process of 5 rows made windows of 10")
        };
        assert!(
            e.contains("s.csv: 5 rows, fewer than one window of 10"),
            "{e}"
        );
    }

    #[test]
    fn seed_target_formula() {
        let rows = vec![[50.0, 60.0, 0., 0., 0., 0., 0., 0., 0., 1.0]];
        let y = SeedTarget.label(&rows, 0).unwrap();
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

    #[test]
    fn a_window_whose_target_has_an_empty_input_is_skipped_and_counted() {
        let mut s = series(30);
        // Row 12 ends a training window, rows 27 and 28 two validation windows.
        s.rows[12][1] = f32::NAN;
        s.rows[27][9] = f32::NAN;
        s.rows[28][0] = f32::NAN;
        // An empty feature that no target reads is the training mean, as before.
        s.rows[15][4] = f32::NAN;
        let p = prepare(&[s], 10, 0.2, &SeedTarget).unwrap();
        assert_eq!((p.train.len(), p.val.len(), p.skipped), (16, 2, 3));
        assert_eq!(
            p.warnings,
            [
                "s.csv:14: column \"mem\" is empty, so the seed target of the window ending on \
              this line cannot be computed: 3 windows of 21 skipped because an input of its \
              target is empty; this is the first"
            ]
        );
        // The validation windows kept are the first and the last: they end on rows 26 and 29.
        let cpu = |ex: &Examples, i: usize| {
            ex.window_rows(i)[9][0] * p.normalization.std[0] + p.normalization.mean[0]
        };
        assert!((cpu(&p.val, 0) - 26.0).abs() < 1e-3 && (cpu(&p.val, 1) - 29.0).abs() < 1e-3);
        assert!(p.train.y.iter().chain(&p.val.y).all(|y| y.is_finite()));
        p.train.check_finite("training", "seed").unwrap();
    }

    #[test]
    fn a_target_that_is_not_finite_is_an_error_not_a_skip() {
        struct Broken;
        impl Labeller for Broken {
            fn name(&self) -> &str {
                "broken"
            }
            fn label(&self, _: &[FeatureVector], end: usize) -> Result<f32, &'static str> {
                Ok(if end == 20 { f32::NAN } else { 0.5 })
            }
        }
        let err = prepare(&[series(30)], 10, 0.2, &Broken).err().unwrap();
        assert!(
            err.starts_with("s.csv:22: the broken target of the window ending here is NaN"),
            "{err}"
        );
    }

    #[test]
    fn non_finite_examples_are_refused_naming_the_column() {
        let mut p = prepare(&[series(30)], 10, 0.2, &SeedTarget).unwrap();
        p.train.y[3] = f32::INFINITY;
        let err = p.train.check_finite("training", "seed").unwrap_err();
        assert!(
            err.contains("training window 4 has the seed target inf"),
            "{err}"
        );
        p.val.rows[N_FEATURES + 2] = f32::NAN;
        let err = p.val.check_finite("validation", "seed").unwrap_err();
        assert!(err.contains("column \"disk_read\" is NaN"), "{err}");
    }
}
