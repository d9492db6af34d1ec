//! Regression-tree ensembles: flat node arrays, the same for the trainer and the agent.

use crate::features::{window_stats, FeatureVector};
use crate::model::{ModelError, TensorMap};

/// One ensemble. Node `i` of the flat arrays is a leaf when `feature[i] < 0`; otherwise rows with
/// `x[feature] <= threshold` go `left`, others `right`. `roots[t]` is tree `t`'s first node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Forest {
    pub feature: Vec<i32>,
    pub threshold: Vec<f32>,
    pub left: Vec<i32>,
    pub right: Vec<i32>,
    pub value: Vec<f32>,
    pub roots: Vec<i32>,
}

impl Forest {
    pub fn load(t: &TensorMap, n_inputs: usize) -> Result<Forest, ModelError> {
        let forest = Forest {
            feature: t.i32("forest.feature")?.to_vec(),
            threshold: t.f32_any("forest.threshold")?.to_vec(),
            left: t.i32("forest.left")?.to_vec(),
            right: t.i32("forest.right")?.to_vec(),
            value: t.f32_any("forest.value")?.to_vec(),
            roots: t.i32("forest.roots")?.to_vec(),
        };
        forest.validate(n_inputs)?;
        t.expect_no_extra("forest")?;
        Ok(forest)
    }

    /// Every index in range and every path ends in a leaf (children come after their parent).
    pub fn validate(&self, n_inputs: usize) -> Result<(), ModelError> {
        let n = self.feature.len();
        let same = [
            self.threshold.len(),
            self.left.len(),
            self.right.len(),
            self.value.len(),
        ];
        if same.iter().any(|&l| l != n) || n == 0 || self.roots.is_empty() {
            return Err(ModelError::meta(
                "forest node arrays differ in length or are empty".into(),
            ));
        }
        for i in 0..n {
            let f = self.feature[i];
            if f >= 0 {
                let (l, r) = (self.left[i], self.right[i]);
                let bad_child = |c: i32| c <= i as i32 || c as usize >= n;
                if f as usize >= n_inputs || bad_child(l) || bad_child(r) {
                    return Err(ModelError::meta(format!("forest node {i} is malformed")));
                }
            }
        }
        if self.roots.iter().any(|&r| r < 0 || r as usize >= n) {
            return Err(ModelError::meta("forest root out of range".into()));
        }
        Ok(())
    }

    pub fn predict_tree(&self, tree: usize, x: &[f32]) -> f32 {
        let mut i = self.roots[tree] as usize;
        while self.feature[i] >= 0 {
            i = if x[self.feature[i] as usize] <= self.threshold[i] {
                self.left[i] as usize
            } else {
                self.right[i] as usize
            };
        }
        self.value[i]
    }

    pub fn predict(&self, x: &[f32]) -> f32 {
        let sum: f32 = (0..self.roots.len()).map(|t| self.predict_tree(t, x)).sum();
        (sum / self.roots.len() as f32).clamp(0.0, 1.0)
    }
}

/// The forest's input: the normalised window flattened (time-major) plus per-feature statistics.
pub fn forest_inputs(window: &[FeatureVector], out: &mut Vec<f32>) {
    out.clear();
    for row in window {
        out.extend_from_slice(row);
    }
    window_stats(window, out);
}
