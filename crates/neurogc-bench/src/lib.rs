//! `neurogc collect` and `neurogc bench`: the seed's experiment, orchestrated.
//!
//! A run starts the service (the bundled demo app, or `--cmd`) with the agent and a policy,
//! warms it up, drives it with `neurogc load` in its own process, records everything into a run
//! directory (`neurogc-record`, `docs/runs.md`), streams samples to a live dashboard, and stops
//! every process it started, Ctrl-C included. Layout: [`args`] shared flags · [`policies`]
//! `--policy` parsing · [`app`] starting services · [`inject`] the agent in any command · [`proc`] process groups, pinning, Ctrl-C ·
//! [`loader`] the load generator process · [`session`] trials · [`rate`] `--rate auto` ·
//! [`stream`] dashboard streaming · [`collect`], [`bench`] the commands. The report is written
//! by the command line (`neurogc-report`), so this crate does not build the chart renderer.
pub mod app;
pub mod args;
pub mod bench;
pub mod collect;
pub mod http;
pub mod inject;
pub mod loader;
pub mod policies;
pub mod proc;
pub mod progress;
pub mod rate;
pub mod session;
pub mod stream;
pub mod system;
pub mod tail;

pub use bench::BenchArgs;
pub use collect::CollectArgs;

use session::{Dashboard, Outcome};

fn command_line() -> Vec<String> {
    std::env::args().collect()
}

/// The process exit code of a run that ended so: 0, or 130 when interrupted.
pub fn exit_code(outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Complete => 0,
        Outcome::Interrupted => 130,
    }
}

/// `neurogc collect`.
pub fn run_collect(args: CollectArgs) -> anyhow::Result<i32> {
    let dashboard = Dashboard::connect(&args.dashboard)?;
    let c = collect::execute(&args, command_line(), dashboard)?;
    println!("samples:  {} ({} rows)", c.data.display(), c.rows);
    println!("run:      {}", c.run_dir.display());
    if c.outcome == Outcome::Interrupted {
        eprintln!("interrupted: the samples measured so far are kept");
    }
    Ok(exit_code(c.outcome))
}

/// `neurogc bench`, up to its run directory (the command line then writes the report).
pub fn run_bench(args: &BenchArgs) -> anyhow::Result<bench::BenchDone> {
    let dashboard = Dashboard::connect(&args.dashboard)?;
    let done = bench::execute(args, command_line(), dashboard)?;
    println!("run:      {}", done.run_dir.display());
    Ok(done)
}
