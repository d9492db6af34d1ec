//! Random-forest regression (bootstrap samples, a random feature subset per split, CART on
//! squared error), written here so the trees export to the flat arrays the agent reads.
//! Splits are searched over per-feature quantile bins: O(n) per feature per node, so 100 trees
//! train in seconds on the 2-core machine.

use neurogc_model::forest::Forest;

use neurogc_rng::Rng;

#[derive(Clone, Copy, Debug)]
pub struct ForestConfig {
    pub trees: usize,
    pub max_depth: usize,
    pub min_samples_leaf: usize,
    pub max_features: usize,
}

const MAX_BINS: usize = 64;

/// Per-feature candidate thresholds and each sample's bin.
struct Binned {
    p: usize,
    /// `edges[f][b]`: samples with `x <= edges[f][b]` fall in bins `0..=b`.
    edges: Vec<Vec<f32>>,
    /// `bins[i * p + f]`.
    bins: Vec<u8>,
}

fn bin(x: &[f32], n: usize, p: usize) -> Binned {
    let mut edges = Vec::with_capacity(p);
    let mut bins = vec![0u8; n * p];
    let mut column = vec![0f32; n];
    for f in 0..p {
        for i in 0..n {
            column[i] = x[i * p + f];
        }
        let mut sorted = column.clone();
        sorted.sort_by(f32::total_cmp);
        sorted.dedup();
        let e: Vec<f32> = if sorted.len() <= MAX_BINS {
            sorted
        } else {
            (1..=MAX_BINS)
                .map(|q| sorted[(q * (sorted.len() - 1)) / MAX_BINS])
                .collect()
        };
        for i in 0..n {
            // First edge >= value: the value's bin.
            bins[i * p + f] = e.partition_point(|&edge| edge < column[i]).min(e.len() - 1) as u8;
        }
        edges.push(e);
    }
    Binned { p, edges, bins }
}

pub fn train(x: &[f32], y: &[f32], p: usize, config: ForestConfig, rng: &mut Rng) -> Forest {
    let n = y.len();
    assert_eq!(x.len(), n * p);
    let binned = bin(x, n, p);
    let mut forest = Forest::default();
    for _ in 0..config.trees {
        let sample: Vec<usize> = (0..n).map(|_| rng.index(n)).collect();
        forest.roots.push(forest.feature.len() as i32);
        grow(&mut forest, &binned, y, sample, 0, &config, rng);
    }
    forest
}

/// Appends the subtree for `idx` in pre-order (children always after their parent).
fn grow(
    forest: &mut Forest,
    b: &Binned,
    y: &[f32],
    idx: Vec<usize>,
    depth: usize,
    c: &ForestConfig,
    rng: &mut Rng,
) {
    let node = forest.feature.len();
    let n = idx.len() as f64;
    let sum: f64 = idx.iter().map(|&i| y[i] as f64).sum();
    forest.feature.push(-1);
    forest.threshold.push(0.0);
    forest.left.push(-1);
    forest.right.push(-1);
    forest.value.push((sum / n) as f32);
    if depth >= c.max_depth || idx.len() < 2 * c.min_samples_leaf {
        return;
    }
    let mut features: Vec<usize> = (0..b.p).collect();
    rng.shuffle(&mut features);
    let mut best: Option<(f64, usize, usize)> = None; // (gain, feature, bin)
    let parent_score = sum * sum / n;
    let mut count = [0usize; MAX_BINS];
    let mut total = [0f64; MAX_BINS];
    for &f in features.iter().take(c.max_features.max(1)) {
        let nb = b.edges[f].len();
        count[..nb].fill(0);
        total[..nb].fill(0.0);
        for &i in &idx {
            let k = b.bins[i * b.p + f] as usize;
            count[k] += 1;
            total[k] += y[i] as f64;
        }
        let (mut nl, mut sl) = (0usize, 0f64);
        for k in 0..nb.saturating_sub(1) {
            nl += count[k];
            sl += total[k];
            let nr = idx.len() - nl;
            if nl < c.min_samples_leaf || nr < c.min_samples_leaf {
                continue;
            }
            let sr = sum - sl;
            // Reduction in squared error = Σl²/nl + Σr²/nr − Σ²/n.
            let gain = sl * sl / nl as f64 + sr * sr / nr as f64 - parent_score;
            if gain > 1e-12 && best.is_none_or(|(g, _, _)| gain > g) {
                best = Some((gain, f, k));
            }
        }
    }
    let Some((_, f, k)) = best else { return };
    let (left, right): (Vec<usize>, Vec<usize>) = idx
        .iter()
        .partition(|&&i| (b.bins[i * b.p + f] as usize) <= k);
    forest.feature[node] = f as i32;
    forest.threshold[node] = b.edges[f][k];
    forest.left[node] = forest.feature.len() as i32;
    grow(forest, b, y, left, depth + 1, c, rng);
    forest.right[node] = forest.feature.len() as i32;
    grow(forest, b, y, right, depth + 1, c, rng);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_a_step_function_and_exports_valid_arrays() {
        let mut rng = Rng::new(1);
        let n = 400;
        let p = 3;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..n {
            let a = i as f32 / n as f32;
            x.extend_from_slice(&[a, rng.next_f32(), rng.next_f32()]);
            y.push(if a > 0.5 { 0.9 } else { 0.1 });
        }
        let config = ForestConfig {
            trees: 20,
            max_depth: 6,
            min_samples_leaf: 2,
            max_features: 3,
        };
        let forest = train(&x, &y, p, config, &mut rng);
        forest.validate(p).unwrap();
        assert!((forest.predict(&[0.9, 0.5, 0.5]) - 0.9).abs() < 0.05);
        assert!((forest.predict(&[0.1, 0.5, 0.5]) - 0.1).abs() < 0.05);
    }
}
