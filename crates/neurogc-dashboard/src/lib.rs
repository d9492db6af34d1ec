//! `neurogc dashboard`: the live monitor, as one embedded server.
//!
//! Samples come in over HTTP (`POST /api/metrics`, one JSON sample or a batch; see [`ingest`]),
//! or from a recorded run (`--replay`, see [`replay`]). The [`store`] keeps a bounded recent
//! window per server and broadcasts each batch; [`ws`] streams history then live batches to each
//! browser; [`assets`] serves the page (plain HTML/JS with uPlot, all embedded: no CDN, no files
//! on disk). Routes are in [`server`]; the user's guide is `docs/dashboard.md`.
//!
//! Not here: computing samples (the agent does), or storing them beyond the window (the agent's
//! CSVs are the record; replay reads them back).

pub mod args;
pub mod assets;
pub mod ingest;
pub mod replay;
pub mod schema;
pub mod server;
pub mod store;
pub mod ws;

pub use args::DashboardArgs;
pub use server::{Background, Config, Dashboard};

use std::sync::Arc;

/// Runs `neurogc dashboard` until Ctrl-C; returns the exit code.
pub fn run(args: DashboardArgs) -> anyhow::Result<i32> {
    let config = args.config()?;
    // Load before binding, so a bad path fails at once and not after the page is up.
    let recording = match &args.replay {
        Some(path) => Some(replay::load(path)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let dashboard = Dashboard::bind(&config).await?;
        let addr = dashboard.addr();
        println!("neurogc dashboard: http://{addr}/ (ingest: POST http://{addr}/api/metrics)");
        if !addr.ip().is_loopback() {
            eprintln!("neurogc: warning: listening on {addr}, reachable from other machines");
        }
        if let (Some(rec), Some(path)) = (recording, &args.replay) {
            let source = path.display().to_string();
            start_replay(dashboard.store(), rec, source, args.speed);
        }
        dashboard
            .serve(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(0)
    })
}

/// Reports what was loaded (and skipped), then plays it in the background.
fn start_replay(store: Arc<store::Store>, rec: replay::Recording, source: String, speed: f64) {
    const SHOWN: usize = 20;
    for w in rec.warnings.iter().take(SHOWN) {
        eprintln!("neurogc: replay: {w}");
    }
    if rec.warnings.len() > SHOWN {
        eprintln!(
            "neurogc: replay: … and {} more skipped",
            rec.warnings.len() - SHOWN
        );
    }
    let span = rec.span_s();
    println!(
        "replay: {} samples of {} ({}) from {} file(s): {span:.1} s of recording in {:.1} s (×{speed})",
        rec.samples.len(),
        rec.servers().len(),
        rec.servers().join(", "),
        rec.files.len(),
        span / speed,
    );
    let status = move |done| store::ReplayStatus {
        source: source.clone(),
        speed,
        done,
    };
    store.set_replay(status(false));
    tokio::spawn(async move {
        let n = rec.samples.len();
        replay::play(&store, rec.samples, speed).await;
        store.set_replay(status(true));
        println!("replay: done ({n} samples); still serving, Ctrl-C to stop");
    });
}
