//! `neurogc load`: an HTTP load generator that speaks Locust's language and measures latency
//! honestly.
//!
//! Two ways to offer load:
//! - **closed loop** (Locust semantics): `--users N --spawn-rate R`; each user picks a task by
//!   weight, sends it, waits for the answer, waits a uniform think time, repeats. Latency is
//!   measured from the actual send, so a stalled server also stalls the load (coordinated
//!   omission): fine for reproducing Locust runs, not for judging tail latency.
//! - **open loop** (wrk2 semantics): `--rate RPS`; every request has an intended send time and
//!   its latency is measured from it, whatever the server did to the requests before it.
//!
//! Several `--host`s get the same schedule at the same time and their own statistics. Every
//! percentile comes from HDR histograms (µs, 3 significant digits) rolled over each second; the
//! per-second JSON-lines stream (`--json-out`, schema in `docs/load.md`) is what the rest of
//! NeuroGC consumes. This crate does not know about the agent or the demo app.
//!
//! Layout: [`args`] flags and validation · [`tasks`] weighted task sets · [`schedule`] arrivals,
//! waits, spawns · [`client`] the HTTP/1.1 client · [`stats`] histograms and rows · [`report`]
//! outputs · [`requests`] the per-request log · `engine` the loops · `timer` the open loop's sub-millisecond sleep.
pub mod args;
pub mod client;
mod engine;
pub mod report;
pub mod requests;
pub mod schedule;
pub mod stats;
pub mod tasks;
mod timer;

pub use args::{Config, LoadArgs, Mode, Shape};
pub use engine::execute;
pub use report::{read_json_lines, Output, Summary};
pub use stats::Row;

/// Runs `neurogc load`. Returns the process exit code: 0 if every request succeeded, 1 if some
/// failed (as Locust), 130 if interrupted by Ctrl-C. Bad input and an unreachable host are errors.
pub fn run(args: LoadArgs) -> anyhow::Result<i32> {
    let summary = execute(Config::from_args(args)?)?;
    Ok(if summary.interrupted {
        130
    } else if summary.failures > 0 {
        1
    } else {
        0
    })
}
