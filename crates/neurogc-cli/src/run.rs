//! `neurogc run --policy P -- <command ...>`: runs any Python command with the agent injected and
//! no code change ([`neurogc_bench::inject`]).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Result};
use neurogc_bench::inject::Injection;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[arg(long, default_value = "default", help = format!("Policy spec: {}", neurogc_core::policy::spec::KNOWN_POLICIES))]
    policy: String,
    /// Sample interval: 1s, 500ms, 0.25 (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = neurogc_units::parse_duration)]
    interval: std::time::Duration,
    /// Append one row per sample to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Append one row per collection to this CSV file
    /// (time,generation,pause_ms,collected,uncollectable,reason).
    #[arg(long, value_name = "PATH")]
    gc_events_csv: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

pub fn run(args: RunArgs) -> Result<i32> {
    let injection = Injection::new(
        &args.policy,
        args.interval.as_secs_f64(),
        args.csv.as_deref(),
        args.gc_events_csv.as_deref(),
    )?;
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut command = Command::new(program);
    command.args(rest);
    injection.apply(&mut command)?;
    // exec: the program takes over this process, so signals and the exit code are its own.
    let err = command.exec();
    bail!("cannot run {:?}: {err}", program)
}
