//! Time per decision of the agent's inference path (`Predictor::push`: normalise the newest
//! sample, slide the window, run the model), for each model directory given, interleaved.
//!
//! `cargo run --release -p neurogc-train --example inference_latency -- DIR... [--json]`

use std::time::Instant;

use neurogc_model::{FeatureVector, Model};

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let dirs: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if dirs.is_empty() {
        eprintln!("usage: inference_latency MODEL_DIR... [--json]");
        std::process::exit(2);
    }
    let models: Vec<Model> = dirs
        .iter()
        .map(|d| Model::load(std::path::Path::new(d)).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let mut predictors: Vec<_> = models.iter().map(|m| m.predictor()).collect();
    // Plausible, varying inputs: a slow ramp on every feature.
    let sample = |i: usize| -> FeatureVector {
        std::array::from_fn(|f| ((i * 7 + f * 13) % 101) as f32 * if f == 9 { 0.01 } else { 1.0 })
    };
    for (k, p) in predictors.iter_mut().enumerate() {
        for i in 0..models[k].window() {
            p.push(sample(i));
        }
    }
    const ROUNDS: usize = 5;
    const PER_ROUND: usize = 2_000;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); models.len()];
    let mut sink = 0f32;
    for round in 0..ROUNDS {
        for (k, p) in predictors.iter_mut().enumerate() {
            for i in 0..PER_ROUND {
                let x = sample(round * PER_ROUND + i);
                let t0 = Instant::now();
                sink += p.push(x).expect("window full");
                times[k].push(t0.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    for (k, t) in times.iter_mut().enumerate() {
        t.sort_by(f64::total_cmp);
        let (p50, p99, max) = (percentile(t, 0.5), percentile(t, 0.99), t[t.len() - 1]);
        let kind = models[k].meta.architecture.name();
        if json {
            println!(
                r#"{{"kind":"{kind}","dir":"{}","p50_us":{p50:.2},"p99_us":{p99:.2},"max_us":{max:.2},"n":{}}}"#,
                dirs[k],
                t.len()
            );
        } else {
            println!(
                "{kind:12} p50 {p50:8.2} µs   p99 {p99:8.2} µs   max {max:8.2} µs   ({} decisions)",
                t.len()
            );
        }
    }
    std::hint::black_box(sink);
}
