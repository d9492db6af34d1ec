//! The few kernels the networks need: dense layers as column-wise AXPYs (every output lane is
//! independent, so the loops vectorise without reassociating sums), and a branch-free `exp`.
//! On x86-64 with AVX2+FMA, detected once at run time, the same code is compiled with those
//! features enabled; elsewhere it runs as portable code.

/// A dense layer `y = b + W x`, with `W` stored transposed (`[in][out]`).
#[derive(Clone, Debug)]
pub struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    wt: Vec<f32>,
    bias: Vec<f32>,
}

impl Dense {
    /// From PyTorch's layout: `weight` is `[out][in]` row-major, `bias` `[out]` (zeros if None).
    pub fn from_torch(
        weight: &[f32],
        bias: Option<&[f32]>,
        outputs: usize,
        inputs: usize,
    ) -> Dense {
        assert_eq!(weight.len(), outputs * inputs, "weight shape");
        let mut wt = vec![0.0; inputs * outputs];
        for o in 0..outputs {
            for i in 0..inputs {
                wt[i * outputs + o] = weight[o * inputs + i];
            }
        }
        let bias = bias.map_or_else(|| vec![0.0; outputs], <[f32]>::to_vec);
        assert_eq!(bias.len(), outputs, "bias shape");
        Dense {
            inputs,
            outputs,
            wt,
            bias,
        }
    }

    /// `y = b + W x`.
    #[inline(always)]
    pub fn forward(&self, x: &[f32], y: &mut [f32]) {
        y.copy_from_slice(&self.bias);
        self.accumulate(x, y);
    }

    /// `y += W x` (no bias).
    #[inline(always)]
    pub fn accumulate(&self, x: &[f32], y: &mut [f32]) {
        debug_assert_eq!(x.len(), self.inputs);
        debug_assert_eq!(y.len(), self.outputs);
        axpy_columns(&self.wt, x, y);
    }
}

/// Outputs accumulated in registers at a time: 64 f32 = 8 AVX registers, enough independent
/// FMA chains to keep both FMA ports busy while each weight column streams through once.
const BLOCK: usize = 64;

#[inline(always)]
fn axpy_columns_generic<const FMA: bool>(wt: &[f32], x: &[f32], y: &mut [f32]) {
    let n = y.len();
    let mut start = 0;
    while start + BLOCK <= n {
        let mut acc = [0f32; BLOCK];
        acc.copy_from_slice(&y[start..start + BLOCK]);
        for (i, &xi) in x.iter().enumerate() {
            let column: &[f32; BLOCK] = wt[i * n + start..i * n + start + BLOCK]
                .try_into()
                .expect("block in range");
            for k in 0..BLOCK {
                acc[k] = if FMA {
                    column[k].mul_add(xi, acc[k])
                } else {
                    acc[k] + column[k] * xi
                };
            }
        }
        y[start..start + BLOCK].copy_from_slice(&acc);
        start += BLOCK;
    }
    if start < n {
        // The remainder (outputs not a multiple of the block): one pass per column.
        for (i, &xi) in x.iter().enumerate() {
            let column = &wt[i * n + start..(i + 1) * n];
            for (yo, &w) in y[start..].iter_mut().zip(column) {
                *yo = if FMA {
                    w.mul_add(xi, *yo)
                } else {
                    *yo + w * xi
                };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn axpy_columns_avx2(wt: &[f32], x: &[f32], y: &mut [f32]) {
    axpy_columns_generic::<true>(wt, x, y)
}

#[inline(always)]
fn axpy_columns(wt: &[f32], x: &[f32], y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time).
        return unsafe { axpy_columns_avx2(wt, x, y) };
    }
    axpy_columns_generic::<false>(wt, x, y)
}

/// Whether this CPU runs the AVX2+FMA builds of the kernels (checked once).
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_avx2_fma() -> bool {
    use std::sync::OnceLock;
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    })
}

/// `e^x` to within a few ulp for |x| < 87, branch-free so slice loops vectorise.
/// Cody–Waite range reduction to `x = n ln2 + r`, |r| ≤ ln2/2, then a degree-6 polynomial.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5·2²³ rounds to the nearest integer without a libm call, so
    // loops over slices stay vectorised.
    const ROUNDER: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 87.0);
    let n = (x * LOG2E + ROUNDER) - ROUNDER;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor coefficients 1/k!, evaluated by Horner.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    // tanh(x) = 2 σ(2x) − 1: absolute error stays at f32 rounding level, which is what we need.
    2.0 * sigmoid(2.0 * x) - 1.0
}

#[inline(always)]
pub fn sigmoid_in_place(v: &mut [f32]) {
    for x in v {
        *x = sigmoid(*x);
    }
}

#[inline(always)]
pub fn tanh_in_place(v: &mut [f32]) {
    for x in v {
        *x = tanh(*x);
    }
}

#[inline(always)]
pub fn relu_in_place(v: &mut [f32]) {
    for x in v {
        *x = x.max(0.0);
    }
}

#[inline(always)]
/// LayerNorm over `x` with PyTorch's biased variance and `eps`.
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in x.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std_closely() {
        let mut worst: f32 = 0.0;
        let mut x = -80.0f32;
        while x < 80.0 {
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-7);
        assert!((tanh(0.3) - 0.3f32.tanh()).abs() < 1e-6);
        assert!(sigmoid(-200.0) >= 0.0 && sigmoid(200.0) <= 1.0);
    }

    #[test]
    fn dense_matches_naive() {
        let (o, i) = (7, 5);
        let w: Vec<f32> = (0..o * i).map(|k| (k as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..o).map(|k| k as f32 * 0.1).collect();
        let x: Vec<f32> = (0..i).map(|k| (k as f32).cos()).collect();
        let d = Dense::from_torch(&w, Some(&b), o, i);
        let mut y = vec![0.0; o];
        d.forward(&x, &mut y);
        for r in 0..o {
            let naive: f32 = b[r] + (0..i).map(|c| w[r * i + c] * x[c]).sum::<f32>();
            assert!((y[r] - naive).abs() < 1e-5);
        }
    }
}
