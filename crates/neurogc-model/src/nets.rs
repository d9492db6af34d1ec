//! Forward passes of the neural models, written to mirror their PyTorch definitions.
//! Each takes a normalised window (time-major, `window × N_FEATURES`) and returns the sigmoid output.

use crate::linalg::{layer_norm, relu_in_place, sigmoid, sigmoid_in_place, tanh_in_place, Dense};
use crate::model::{ModelError, TensorMap};

/// PyTorch's LayerNorm default.
const LN_EPS: f32 = 1e-5;

/// `nn.LSTM(batch_first=True)` → last step → `fc` → sigmoid.
#[derive(Clone, Debug)]
pub struct Lstm {
    hidden: usize,
    /// Per layer: input weights with both biases folded in, and recurrent weights.
    layers: Vec<(Dense, Dense)>,
    fc: Dense,
}

impl Lstm {
    pub fn load(
        t: &TensorMap,
        inputs: usize,
        hidden: usize,
        layers: usize,
    ) -> Result<Lstm, ModelError> {
        // Not `with_capacity(layers)`: a huge count in model.json aborted the process.
        let mut built = Vec::new();
        for k in 0..layers {
            let layer_in = if k == 0 { inputs } else { hidden };
            let w_ih = t.f32(&format!("lstm.weight_ih_l{k}"), &[4 * hidden, layer_in])?;
            let w_hh = t.f32(&format!("lstm.weight_hh_l{k}"), &[4 * hidden, hidden])?;
            let b_ih = t.f32(&format!("lstm.bias_ih_l{k}"), &[4 * hidden])?;
            let b_hh = t.f32(&format!("lstm.bias_hh_l{k}"), &[4 * hidden])?;
            let bias: Vec<f32> = b_ih.iter().zip(b_hh).map(|(a, b)| a + b).collect();
            built.push((
                Dense::from_torch(w_ih, Some(&bias), 4 * hidden, layer_in),
                Dense::from_torch(w_hh, None, 4 * hidden, hidden),
            ));
        }
        let fc = Dense::from_torch(
            t.f32("fc.weight", &[1, hidden])?,
            Some(t.f32("fc.bias", &[1])?),
            1,
            hidden,
        );
        t.expect_no_extra("lstm")?;
        Ok(Lstm {
            hidden,
            layers: built,
            fc,
        })
    }

    pub fn scratch(&self, window: usize) -> Vec<f32> {
        // gates (4H) + h (H) + c (H) + two sequence buffers (window × H).
        vec![0.0; 6 * self.hidden + 2 * window * self.hidden]
    }

    pub fn forward(&self, x: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        sigmoid(self.forward_logit(x, window, scratch))
    }

    /// [`Lstm::forward`] before its sigmoid.
    pub fn forward_logit(&self, x: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if crate::linalg::has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked at run time).
            return unsafe { self.forward_avx2(x, window, scratch) };
        }
        self.forward_impl(x, window, scratch)
    }

    /// The same code, compiled with AVX2+FMA: every helper is `#[inline(always)]`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_avx2(&self, x: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        self.forward_impl(x, window, scratch)
    }

    #[inline(always)]
    fn forward_impl(&self, x: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        let h_n = self.hidden;
        let (gates, rest) = scratch.split_at_mut(4 * h_n);
        let (h, rest) = rest.split_at_mut(h_n);
        let (c, rest) = rest.split_at_mut(h_n);
        let (seq_a, seq_b) = rest.split_at_mut(window * h_n);
        for (k, (ih, hh)) in self.layers.iter().enumerate() {
            // Layer k reads the previous layer's outputs: alternate the two sequence buffers.
            let (input, output): (&[f32], &mut [f32]) = match k {
                0 => (x, &mut *seq_a),
                k if k % 2 == 1 => (&*seq_a, &mut *seq_b),
                _ => (&*seq_b, &mut *seq_a),
            };
            let step_in = ih.inputs;
            h.fill(0.0);
            c.fill(0.0);
            for t in 0..window {
                ih.forward(&input[t * step_in..(t + 1) * step_in], gates);
                hh.accumulate(h, gates);
                let (i_g, rest) = gates.split_at_mut(h_n);
                let (f_g, rest) = rest.split_at_mut(h_n);
                let (g_g, o_g) = rest.split_at_mut(h_n);
                sigmoid_in_place(i_g);
                sigmoid_in_place(f_g);
                sigmoid_in_place(o_g);
                tanh_in_place(g_g);
                for j in 0..h_n {
                    c[j] = f_g[j] * c[j] + i_g[j] * g_g[j];
                }
                // tanh(c) goes through the i gate's slot, which is no longer needed.
                i_g.copy_from_slice(c);
                tanh_in_place(i_g);
                for j in 0..h_n {
                    h[j] = o_g[j] * i_g[j];
                }
                output[t * h_n..(t + 1) * h_n].copy_from_slice(h);
            }
        }
        let mut y = [0.0f32];
        self.fc.forward(h, &mut y);
        y[0]
    }
}

/// Linear input projection + sinusoidal positions → post-norm encoder layers → last position →
/// `fc` → sigmoid. Names follow `nn.TransformerEncoder` (`encoder.layers.{k}.self_attn...`).
#[derive(Clone, Debug)]
pub struct Transformer {
    d: usize,
    heads: usize,
    input_proj: Dense,
    layers: Vec<EncoderLayer>,
    fc: Dense,
    positions: Vec<f32>,
}

#[derive(Clone, Debug)]
struct EncoderLayer {
    q: Dense,
    k: Dense,
    v: Dense,
    out: Dense,
    linear1: Dense,
    linear2: Dense,
    norm1: (Vec<f32>, Vec<f32>),
    norm2: (Vec<f32>, Vec<f32>),
}

/// `pe[t, 2i] = sin(t / 10000^(2i/d))`, `pe[t, 2i+1] = cos(...)`: the PyTorch tutorial's encoding.
pub fn sinusoidal_positions(window: usize, d: usize) -> Vec<f32> {
    let mut pe = vec![0.0f32; window * d];
    for t in 0..window {
        for i in (0..d).step_by(2) {
            let angle = t as f64 / 10000f64.powf(i as f64 / d as f64);
            pe[t * d + i] = angle.sin() as f32;
            if i + 1 < d {
                pe[t * d + i + 1] = angle.cos() as f32;
            }
        }
    }
    pe
}

impl Transformer {
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        t: &TensorMap,
        inputs: usize,
        window: usize,
        d: usize,
        heads: usize,
        layers: usize,
        ff: usize,
    ) -> Result<Transformer, ModelError> {
        if heads == 0 || !d.is_multiple_of(heads) {
            return Err(ModelError::meta(format!(
                "d_model {d} is not divisible by heads {heads}"
            )));
        }
        // Every count divides a d_model of 0, and each head of it computes nothing: one does
        // the same (a model.json with 2^40 heads spun a forward pass for minutes).
        let heads = if d == 0 { 1 } else { heads };
        let dense = |name: &str, out: usize, inp: usize| -> Result<Dense, ModelError> {
            Ok(Dense::from_torch(
                t.f32(&format!("{name}.weight"), &[out, inp])?,
                Some(t.f32(&format!("{name}.bias"), &[out])?),
                out,
                inp,
            ))
        };
        let norm = |name: &str| -> Result<(Vec<f32>, Vec<f32>), ModelError> {
            Ok((
                t.f32(&format!("{name}.weight"), &[d])?.to_vec(),
                t.f32(&format!("{name}.bias"), &[d])?.to_vec(),
            ))
        };
        // Not `with_capacity(layers)`: a huge count in model.json aborted the process.
        let mut built = Vec::new();
        for k in 0..layers {
            let p = format!("encoder.layers.{k}");
            let in_w = t.f32(&format!("{p}.self_attn.in_proj_weight"), &[3 * d, d])?;
            let in_b = t.f32(&format!("{p}.self_attn.in_proj_bias"), &[3 * d])?;
            let part = |j: usize| {
                Dense::from_torch(
                    &in_w[j * d * d..(j + 1) * d * d],
                    Some(&in_b[j * d..(j + 1) * d]),
                    d,
                    d,
                )
            };
            built.push(EncoderLayer {
                q: part(0),
                k: part(1),
                v: part(2),
                out: dense(&format!("{p}.self_attn.out_proj"), d, d)?,
                linear1: dense(&format!("{p}.linear1"), ff, d)?,
                linear2: dense(&format!("{p}.linear2"), d, ff)?,
                norm1: norm(&format!("{p}.norm1"))?,
                norm2: norm(&format!("{p}.norm2"))?,
            });
        }
        let model = Transformer {
            d,
            heads,
            input_proj: dense("input_proj", d, inputs)?,
            layers: built,
            fc: dense("fc", 1, d)?,
            positions: sinusoidal_positions(window, d),
        };
        t.expect_no_extra("transformer")?;
        Ok(model)
    }

    pub fn scratch(&self, window: usize) -> Vec<f32> {
        let ff = self.layers.first().map_or(0, |l| l.linear1.outputs);
        // x, q, k, v, attn (window × d each), scores (window), tmp (d), ff buffer.
        vec![0.0; 5 * window * self.d + window + self.d + ff]
    }

    pub fn forward(&self, x_in: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if crate::linalg::has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked at run time).
            return unsafe { self.forward_avx2(x_in, window, scratch) };
        }
        self.forward_impl(x_in, window, scratch)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_avx2(&self, x_in: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        self.forward_impl(x_in, window, scratch)
    }

    #[inline(always)]
    fn forward_impl(&self, x_in: &[f32], window: usize, scratch: &mut [f32]) -> f32 {
        let d = self.d;
        let dh = d / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let (x, rest) = scratch.split_at_mut(window * d);
        let (q, rest) = rest.split_at_mut(window * d);
        let (k, rest) = rest.split_at_mut(window * d);
        let (v, rest) = rest.split_at_mut(window * d);
        let (attn, rest) = rest.split_at_mut(window * d);
        let (scores, rest) = rest.split_at_mut(window);
        let (tmp, ff_buf) = rest.split_at_mut(d);
        let inputs = self.input_proj.inputs;
        for t in 0..window {
            let row = &mut x[t * d..(t + 1) * d];
            self.input_proj
                .forward(&x_in[t * inputs..(t + 1) * inputs], row);
            for (r, p) in row.iter_mut().zip(&self.positions[t * d..(t + 1) * d]) {
                *r += p;
            }
        }
        let n_layers = self.layers.len();
        for (li, layer) in self.layers.iter().enumerate() {
            // The last layer only needs the last position's output (K and V still use all).
            let first_query = if li + 1 == n_layers { window - 1 } else { 0 };
            for t in 0..window {
                let row = &x[t * d..(t + 1) * d];
                layer.k.forward(row, &mut k[t * d..(t + 1) * d]);
                layer.v.forward(row, &mut v[t * d..(t + 1) * d]);
                if t >= first_query {
                    layer.q.forward(row, &mut q[t * d..(t + 1) * d]);
                }
            }
            for t in first_query..window {
                for h in 0..self.heads {
                    let qh = &q[t * d + h * dh..t * d + (h + 1) * dh];
                    let mut max = f32::NEG_INFINITY;
                    for (s, score) in scores.iter_mut().enumerate() {
                        let kh = &k[s * d + h * dh..s * d + (h + 1) * dh];
                        *score = qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f32>() * scale;
                        max = max.max(*score);
                    }
                    let mut total = 0.0;
                    for score in scores.iter_mut() {
                        *score = crate::linalg::exp(*score - max);
                        total += *score;
                    }
                    let out = &mut attn[t * d + h * dh..t * d + (h + 1) * dh];
                    out.fill(0.0);
                    for (s, score) in scores.iter().enumerate() {
                        let p = score / total;
                        for (o, vv) in out.iter_mut().zip(&v[s * d + h * dh..s * d + (h + 1) * dh])
                        {
                            *o += p * vv;
                        }
                    }
                }
                let row = &mut x[t * d..(t + 1) * d];
                layer.out.forward(&attn[t * d..(t + 1) * d], tmp);
                for (r, a) in row.iter_mut().zip(tmp.iter()) {
                    *r += a;
                }
                layer_norm(row, &layer.norm1.0, &layer.norm1.1, LN_EPS);
                layer.linear1.forward(row, ff_buf);
                relu_in_place(ff_buf);
                layer.linear2.forward(ff_buf, tmp);
                for (r, a) in row.iter_mut().zip(tmp.iter()) {
                    *r += a;
                }
                layer_norm(row, &layer.norm2.0, &layer.norm2.1, LN_EPS);
            }
        }
        let mut y = [0.0f32];
        self.fc.forward(&x[(window - 1) * d..window * d], &mut y);
        sigmoid(y[0])
    }
}

/// The window flattened (time-major) → `layers.{k}` Linear+ReLU → last Linear → sigmoid.
#[derive(Clone, Debug)]
pub struct Feedforward {
    layers: Vec<Dense>,
}

impl Feedforward {
    pub fn load(t: &TensorMap, inputs: usize, hidden: &[usize]) -> Result<Feedforward, ModelError> {
        let mut sizes = vec![inputs];
        sizes.extend_from_slice(hidden);
        sizes.push(1);
        let mut layers = Vec::with_capacity(sizes.len() - 1);
        for (k, pair) in sizes.windows(2).enumerate() {
            let (inp, out) = (pair[0], pair[1]);
            layers.push(Dense::from_torch(
                t.f32(&format!("layers.{k}.weight"), &[out, inp])?,
                Some(t.f32(&format!("layers.{k}.bias"), &[out])?),
                out,
                inp,
            ));
        }
        t.expect_no_extra("feedforward")?;
        Ok(Feedforward { layers })
    }

    pub fn scratch(&self) -> Vec<f32> {
        let widest = self.layers.iter().map(|l| l.outputs).max().unwrap_or(1);
        vec![0.0; 2 * widest]
    }

    pub fn forward(&self, x: &[f32], scratch: &mut [f32]) -> f32 {
        let half = scratch.len() / 2;
        let (a, b) = scratch.split_at_mut(half);
        let last = self.layers.len() - 1;
        let mut input: &[f32] = x;
        let (mut cur, mut other) = (a, b);
        for (k, layer) in self.layers.iter().enumerate() {
            let out = &mut cur[..layer.outputs];
            layer.forward(input, out);
            if k < last {
                relu_in_place(out);
            }
            std::mem::swap(&mut cur, &mut other);
            input = &other[..layer.outputs];
        }
        sigmoid(input[0])
    }
}
