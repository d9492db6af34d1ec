//! The trainable networks in candle, each mirroring its PyTorch definition and the agent's
//! hand-written forward pass (`neurogc_model::nets`), parameter name for parameter name.

use candle_core::{DType, Device, IndexOp, Module, Result, Tensor, Var, D};
use candle_nn::rnn::{LSTMConfig, RNN};
use candle_nn::{LayerNorm, Linear, VarBuilder, VarMap, LSTM};
use neurogc_model::nets::sinusoidal_positions;
use neurogc_model::Architecture;

use neurogc_rng::Rng;

/// Registers a parameter under its PyTorch name; the modules built next pick it up by name.
fn insert(varmap: &VarMap, name: &str, value: Tensor) -> Result<()> {
    let var = Var::from_tensor(&value)?;
    varmap
        .data()
        .lock()
        .expect("varmap lock")
        .insert(name.to_string(), var);
    Ok(())
}

/// PyTorch-style uniform initialisation, drawn from our seeded generator.
fn init(varmap: &VarMap, name: &str, shape: &[usize], bound: f32, rng: &mut Rng) -> Result<()> {
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.symmetric(bound)).collect();
    insert(varmap, name, Tensor::from_vec(values, shape, &Device::Cpu)?)
}

fn init_const(varmap: &VarMap, name: &str, shape: &[usize], value: f32) -> Result<()> {
    insert(varmap, name, Tensor::full(value, shape, &Device::Cpu)?)
}

fn init_linear(varmap: &VarMap, name: &str, out: usize, inp: usize, rng: &mut Rng) -> Result<()> {
    let bound = 1.0 / (inp as f32).sqrt();
    init(varmap, &format!("{name}.weight"), &[out, inp], bound, rng)?;
    init(varmap, &format!("{name}.bias"), &[out], bound, rng)
}

/// Inverted dropout with a mask from our generator (candle's own draws from an unseeded RNG).
pub fn dropout(x: &Tensor, p: f32, rng: &mut Rng) -> Result<Tensor> {
    if p <= 0.0 {
        return Ok(x.clone());
    }
    let keep = 1.0 / (1.0 - p);
    let mask: Vec<f32> = (0..x.elem_count())
        .map(|_| if rng.next_f32() < p { 0.0 } else { keep })
        .collect();
    x * Tensor::from_vec(mask, x.shape(), x.device())?
}

pub enum Net {
    Lstm {
        layers: Vec<LSTM>,
        fc: Linear,
        dropout: f32,
    },
    Transformer {
        input_proj: Linear,
        layers: Vec<EncoderLayer>,
        fc: Linear,
        positions: Tensor,
        heads: usize,
        dropout: f32,
    },
    Feedforward {
        layers: Vec<Linear>,
        dropout: f32,
    },
}

pub struct EncoderLayer {
    in_w: Tensor,
    in_b: Tensor,
    out_proj: Linear,
    linear1: Linear,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
}

impl Net {
    /// Creates the parameters in `varmap` (seeded) and the modules over them, for windows of
    /// `window` steps of `inputs` values each.
    pub fn new(
        arch: &Architecture,
        window: usize,
        inputs: usize,
        varmap: &VarMap,
        rng: &mut Rng,
    ) -> Result<Net> {
        let vb = VarBuilder::from_varmap(varmap, DType::F32, &Device::Cpu);
        match arch {
            Architecture::Lstm {
                hidden,
                layers,
                dropout,
            } => {
                let bound = 1.0 / (*hidden as f32).sqrt();
                let mut built = Vec::new();
                for k in 0..*layers {
                    let inp = if k == 0 { inputs } else { *hidden };
                    init(
                        varmap,
                        &format!("lstm.weight_ih_l{k}"),
                        &[4 * hidden, inp],
                        bound,
                        rng,
                    )?;
                    init(
                        varmap,
                        &format!("lstm.weight_hh_l{k}"),
                        &[4 * hidden, *hidden],
                        bound,
                        rng,
                    )?;
                    init(
                        varmap,
                        &format!("lstm.bias_ih_l{k}"),
                        &[4 * hidden],
                        bound,
                        rng,
                    )?;
                    init(
                        varmap,
                        &format!("lstm.bias_hh_l{k}"),
                        &[4 * hidden],
                        bound,
                        rng,
                    )?;
                    let config = LSTMConfig {
                        layer_idx: k,
                        ..Default::default()
                    };
                    built.push(candle_nn::lstm(inp, *hidden, config, vb.pp("lstm"))?);
                }
                init_linear(varmap, "fc", 1, *hidden, rng)?;
                Ok(Net::Lstm {
                    layers: built,
                    fc: candle_nn::linear(*hidden, 1, vb.pp("fc"))?,
                    dropout: *dropout,
                })
            }
            Architecture::Transformer {
                d_model: d,
                heads,
                layers,
                ff_dim,
                dropout,
            } => {
                let d = *d;
                init_linear(varmap, "input_proj", d, inputs, rng)?;
                let mut built = Vec::new();
                for k in 0..*layers {
                    let p = format!("encoder.layers.{k}");
                    // xavier_uniform for the packed projection, as nn.MultiheadAttention does.
                    let xavier = (6.0 / (d + 3 * d) as f32).sqrt();
                    init(
                        varmap,
                        &format!("{p}.self_attn.in_proj_weight"),
                        &[3 * d, d],
                        xavier,
                        rng,
                    )?;
                    init_const(
                        varmap,
                        &format!("{p}.self_attn.in_proj_bias"),
                        &[3 * d],
                        0.0,
                    )?;
                    init_linear(varmap, &format!("{p}.self_attn.out_proj"), d, d, rng)?;
                    init_linear(varmap, &format!("{p}.linear1"), *ff_dim, d, rng)?;
                    init_linear(varmap, &format!("{p}.linear2"), d, *ff_dim, rng)?;
                    for norm in ["norm1", "norm2"] {
                        init_const(varmap, &format!("{p}.{norm}.weight"), &[d], 1.0)?;
                        init_const(varmap, &format!("{p}.{norm}.bias"), &[d], 0.0)?;
                    }
                    let vbl = vb.pp(&p);
                    built.push(EncoderLayer {
                        in_w: vbl.get((3 * d, d), "self_attn.in_proj_weight")?,
                        in_b: vbl.get(3 * d, "self_attn.in_proj_bias")?,
                        out_proj: candle_nn::linear(d, d, vbl.pp("self_attn.out_proj"))?,
                        linear1: candle_nn::linear(d, *ff_dim, vbl.pp("linear1"))?,
                        linear2: candle_nn::linear(*ff_dim, d, vbl.pp("linear2"))?,
                        norm1: candle_nn::layer_norm(d, 1e-5, vbl.pp("norm1"))?,
                        norm2: candle_nn::layer_norm(d, 1e-5, vbl.pp("norm2"))?,
                    });
                }
                init_linear(varmap, "fc", 1, d, rng)?;
                Ok(Net::Transformer {
                    input_proj: candle_nn::linear(inputs, d, vb.pp("input_proj"))?,
                    layers: built,
                    fc: candle_nn::linear(d, 1, vb.pp("fc"))?,
                    positions: Tensor::from_vec(
                        sinusoidal_positions(window, d),
                        (window, d),
                        &Device::Cpu,
                    )?,
                    heads: *heads,
                    dropout: *dropout,
                })
            }
            Architecture::Feedforward { hidden, dropout } => {
                let mut sizes = vec![window * inputs];
                sizes.extend_from_slice(hidden);
                sizes.push(1);
                let mut layers = Vec::new();
                for (k, pair) in sizes.windows(2).enumerate() {
                    let name = format!("layers.{k}");
                    init_linear(varmap, &name, pair[1], pair[0], rng)?;
                    layers.push(candle_nn::linear(pair[0], pair[1], vb.pp(&name))?);
                }
                Ok(Net::Feedforward {
                    layers,
                    dropout: *dropout,
                })
            }
            Architecture::Forest { .. } => candle_core::bail!("a forest is not a neural network"),
        }
    }

    /// `x`: `[batch, window, inputs]` normalised → `[batch]` in (0, 1). Dropout only when
    /// `rng` is given (training).
    pub fn forward(&self, x: &Tensor, rng: Option<&mut Rng>) -> Result<Tensor> {
        candle_nn::ops::sigmoid(&self.forward_logit(x, rng)?)
    }

    /// [`Net::forward`] before its sigmoid: `[batch]` logits.
    pub fn forward_logit(&self, x: &Tensor, mut rng: Option<&mut Rng>) -> Result<Tensor> {
        let mut drop = |t: Tensor, p: f32| -> Result<Tensor> {
            match rng.as_deref_mut() {
                Some(r) => dropout(&t, p, r),
                None => Ok(t),
            }
        };
        let out = match self {
            Net::Lstm {
                layers,
                fc,
                dropout: p,
            } => {
                let mut input = x.clone();
                let mut last_h = None;
                for (k, lstm) in layers.iter().enumerate() {
                    let states = lstm.seq(&input)?;
                    last_h = states.last().map(|s| s.h.clone());
                    if k + 1 < layers.len() {
                        // nn.LSTM's dropout: on every layer's outputs but the last.
                        input = drop(lstm.states_to_tensor(&states)?, *p)?;
                    }
                }
                fc.forward(&last_h.expect("at least one layer"))?
            }
            Net::Transformer {
                input_proj,
                layers,
                fc,
                positions,
                heads,
                dropout: p,
            } => {
                let (b, w, _) = x.dims3()?;
                let mut h = input_proj.forward(x)?.broadcast_add(positions)?;
                let d = h.dim(2)?;
                let dh = d / heads;
                for layer in layers {
                    let qkv = h
                        .broadcast_matmul(&layer.in_w.t()?)?
                        .broadcast_add(&layer.in_b)?;
                    let split = |i: usize| -> Result<Tensor> {
                        qkv.narrow(2, i * d, d)?
                            .reshape((b, w, *heads, dh))?
                            .transpose(1, 2)?
                            .contiguous()
                    };
                    let (q, k, v) = (split(0)?, split(1)?, split(2)?);
                    let scores = (q.matmul(&k.t()?.contiguous()?)? / (dh as f64).sqrt())?;
                    let probs = drop(candle_nn::ops::softmax_last_dim(&scores)?, *p)?;
                    let attn = probs
                        .matmul(&v)?
                        .transpose(1, 2)?
                        .contiguous()?
                        .reshape((b, w, d))?;
                    let sa = drop(layer.out_proj.forward(&attn)?, *p)?;
                    h = layer.norm1.forward(&(h + sa)?)?;
                    let ff = drop(layer.linear1.forward(&h)?.relu()?, *p)?;
                    let ff = drop(layer.linear2.forward(&ff)?, *p)?;
                    h = layer.norm2.forward(&(h + ff)?)?;
                }
                fc.forward(&h.i((.., w - 1, ..))?)?
            }
            Net::Feedforward { layers, dropout: p } => {
                let (b, w, f) = x.dims3()?;
                let mut h = x.reshape((b, w * f))?;
                for (k, layer) in layers.iter().enumerate() {
                    h = layer.forward(&h)?;
                    if k + 1 < layers.len() {
                        h = drop(h.relu()?, *p)?;
                    }
                }
                h
            }
        };
        out.squeeze(D::Minus1)
    }
}
