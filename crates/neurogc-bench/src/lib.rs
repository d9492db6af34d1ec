//! `neurogc collect`, `neurogc bench` and `neurogc demo`: the seed's experiment, orchestrated.
//!
//! A run starts the service (the bundled demo app, or `--cmd`) with the agent and a policy,
//! warms it up, drives it with `neurogc load` in its own process, records everything into a run
//! directory (`docs/runs.md`), streams samples to a live dashboard, and stops every process it
//! started, Ctrl-C included. Layout: [`args`] shared flags · [`policies`] `--policy` parsing ·
//! [`app`] starting services · [`proc`] process groups, pinning, Ctrl-C · [`loader`] the load
//! generator process · [`session`] trials · [`rate`] `--rate auto` · [`rundir`] the run
//! directory · [`stream`] dashboard streaming · [`collect`], [`bench`], [`demo`] the commands.
pub mod app;
pub mod args;
pub mod bench;
pub mod collect;
pub mod demo;
pub mod http;
pub mod loader;
pub mod policies;
pub mod proc;
pub mod progress;
pub mod rate;
pub mod rundir;
pub mod session;
pub mod stream;
pub mod system;
pub mod tail;

pub use bench::BenchArgs;
pub use collect::CollectArgs;
pub use demo::DemoArgs;

use std::path::{Path, PathBuf};

use session::{Dashboard, Outcome};

/// Writes a run directory's report and returns its path (`neurogc-report`, passed in by the
/// command line so that this crate does not build the chart renderer).
pub type Reporter = fn(&Path) -> anyhow::Result<PathBuf>;

fn command_line() -> Vec<String> {
    std::env::args().collect()
}

fn exit_code(outcome: Outcome) -> i32 {
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

/// `neurogc bench`.
pub fn run_bench(args: BenchArgs, report: Reporter) -> anyhow::Result<i32> {
    let dashboard = Dashboard::connect(&args.dashboard)?;
    let done = bench::execute(&args, command_line(), dashboard)?;
    println!("run:      {}", done.run_dir.display());
    if !args.no_report {
        match report(&done.run_dir) {
            Ok(path) => println!("report:   {}", path.display()),
            Err(e) if done.outcome == Outcome::Interrupted => {
                eprintln!("neurogc bench: no report for the interrupted run: {e:#}")
            }
            Err(e) => return Err(e),
        }
    }
    if done.outcome == Outcome::Interrupted {
        eprintln!("interrupted: what was measured is kept");
    }
    Ok(exit_code(done.outcome))
}

/// `neurogc demo`.
pub fn run_demo(args: DemoArgs, report: Reporter) -> anyhow::Result<i32> {
    demo::run(args, report)
}
