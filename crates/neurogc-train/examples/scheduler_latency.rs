//! Time per question of the scheduler's quiet-window net as the agent asks it (the survival
//! estimate it reads, features from a full ring of 1,024 arrivals, normalise, the LSTM), against
//! the online survival estimate alone, interleaved.
//!
//! `cargo run --release -p neurogc-train --example scheduler_latency -- MODEL_DIR`

use std::time::{Duration, Instant};

use neurogc_core::traffic::{Traffic, RING};
use neurogc_model::scheduler::quiet_inputs;
use neurogc_model::SchedulerModel;

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: scheduler_latency MODEL_DIR");
        std::process::exit(2);
    };
    let model = SchedulerModel::load(std::path::Path::new(&dir)).unwrap_or_else(|e| panic!("{e}"));
    let mut scratch = model.scratch();
    // Arrivals about 12 ms apart, jittered, as the ring holds them.
    let arrivals: Vec<u64> = (0..RING as u64)
        .map(|i| 1 + i * 12_000_000 + (i * 7_919 % 5_000) * 1_000)
        .collect();
    let last = *arrivals.last().unwrap();
    let (mut net, mut survival) = (Vec::new(), Vec::new());
    let mut sink = 0f64;
    for round in 0..5u64 {
        for i in 0..2_000u64 {
            let now = last + 1_000_000 + (round * 2_000 + i) % 10 * 1_000_000;
            let pause = Duration::from_millis(2 + i % 50);
            let t = Traffic {
                in_flight: 0,
                now_ns: now,
                arrivals: &arrivals,
                total: RING as u64,
            };
            let t0 = Instant::now();
            let p = t.quiet_chance(pause);
            survival.push(t0.elapsed().as_secs_f64() * 1e6);
            sink += p;
            // The net reads the survival estimate's answer too: its time is the two together.
            let t0 = Instant::now();
            let p = t.quiet_chance(pause);
            let x = quiet_inputs(&arrivals, now, pause.as_nanos() as u64, p).expect("history");
            sink += f64::from(model.quiet_chance(&x, &mut scratch));
            net.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    for (name, t) in [("with net", &mut net), ("survival", &mut survival)] {
        t.sort_by(f64::total_cmp);
        println!(
            "{name:9} p50 {:7.2} µs   p99 {:7.2} µs   ({} questions)",
            percentile(t, 0.5),
            percentile(t, 0.99),
            t.len()
        );
    }
    std::hint::black_box(sink);
}
