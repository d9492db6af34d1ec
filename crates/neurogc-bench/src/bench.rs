//! `neurogc bench`: every policy against the same load, repeated and interleaved (A B A B …),
//! one at a time on a pinned core (`--mode sequential`) or all at once (`--mode side-by-side`,
//! the seed's way), then the report.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_load::Shape;
use neurogc_record::{AutoRate, Mode, RateSource, RunKind};
use neurogc_units::parse_duration;

use crate::args::{AppArgs, DashboardOpts, LoadOpts, LoadPlan, OutputArgs};
use crate::policies::{self, Policy};
use crate::proc;
use crate::rate::{self, SearchConfig};
use crate::session::{Dashboard, Outcome, RunSpec, Session, TrialPlan};

/// `neurogc bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// A policy to bench, `[LABEL=]SPEC` (repeat; the first is the baseline), e.g. `default`,
    /// `neurogc-seed:models/lstm`, `big=threshold:50000,20,20`.
    #[arg(long = "policy", value_name = "[LABEL=]SPEC", required = true)]
    pub policies: Vec<String>,
    #[arg(long, value_enum, default_value = "sequential")]
    pub mode: Mode,
    /// Repetitions per policy, interleaved A B A B.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: u32,
    /// Load before each measurement, not recorded (imports, caches, the first full collections).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Measured time per trial.
    #[arg(long, visible_alias = "run-time", value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// With --rate auto: the share of the sustainable rate to run at.
    #[arg(long, value_name = "F", default_value_t = 0.6)]
    pub rate_fraction: f64,
    /// With --rate auto: the first rate probed (doubled until not sustained).
    #[arg(long, value_name = "RPS", default_value_t = 5.0)]
    pub rate_start: f64,
    /// With --rate auto: the policies under which the service's capacity is probed (comma-separated
    /// or repeated); every policy runs at a fraction of the lowest capacity found. The default
    /// probes with the collector off and as CPython ships: where collecting costs much CPU, the
    /// collector-off capacity alone would leave the policies that collect queueing.
    #[arg(
        long = "rate-policy",
        value_name = "SPEC,...",
        value_delimiter = ',',
        default_value = "gc-off,default"
    )]
    pub rate_policies: Vec<String>,
    /// With --rate auto: the length of each probe.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub probe_time: Duration,
    /// With --rate auto: the load before a probed server's first probe [default: --warmup].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub rate_warmup: Option<Duration>,
    /// With --mode alternating or turns: how long each server has the load before the next
    /// takes over (a turn; --duration is then so many turns per server).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub slice: Duration,
    /// Do not pin the server and the load generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Do not write the report at the end.
    #[arg(long)]
    pub no_report: bool,
    #[command(flatten)]
    pub app: AppArgs,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub dashboard: DashboardOpts,
}

/// A finished (or interrupted) bench.
pub struct BenchDone {
    pub run_dir: PathBuf,
    pub outcome: Outcome,
    pub dashboard: Dashboard,
}

struct Checked {
    policies: Vec<Policy>,
    plan: LoadPlan,
}

fn check(args: &BenchArgs) -> Result<Checked> {
    let policies = policies::parse_all(&args.policies)?;
    if args.repeat == 0 || args.repeat > 1000 {
        bail!("--repeat {} must be between 1 and 1000", args.repeat);
    }
    if args.duration.is_zero() {
        bail!("--duration must be above 0");
    }
    if !(args.rate_fraction > 0.0 && args.rate_fraction <= 1.0) {
        bail!("--rate-fraction {} must be in (0, 1]", args.rate_fraction);
    }
    if !(args.rate_start.is_finite() && args.rate_start > 0.0) {
        bail!("--rate-start {} must be above 0", args.rate_start);
    }
    let plan = args.load.plan(None)?;
    if matches!(plan, LoadPlan::AutoRate) {
        policies::parse_all(&args.rate_policies).map_err(|e| e.context("--rate-policy"))?;
    }
    if args.mode.takes_turns() {
        if matches!(&plan, LoadPlan::Fixed(Shape::Closed { .. })) {
            bail!(
                "--mode {} switches an open-loop load between servers: give --rate RPS or --rate auto, not --users",
                args.mode
            );
        }
        if args.slice < Duration::from_millis(100) || args.slice > args.duration {
            bail!(
                "--slice {:?} must be at least 100ms and at most --duration ({:?})",
                args.slice,
                args.duration
            );
        }
    }
    Ok(Checked { policies, plan })
}

/// Runs the bench; `command` is recorded in run.json. Ctrl-C stops it and keeps what finished.
pub fn execute(args: &BenchArgs, command: Vec<String>, dashboard: Dashboard) -> Result<BenchDone> {
    let Checked { policies, plan } = check(args)?;
    let spec = RunSpec {
        kind: RunKind::Bench,
        app: &args.app,
        load: &args.load,
        output: &args.output,
        pin: !args.no_pin && args.mode != Mode::SideBySide,
        mode: args.mode,
        alternate: args.mode.takes_turns().then_some(args.slice),
        repeat: args.repeat,
        warmup: args.warmup,
        duration: args.duration,
        policies: &policies,
    };
    let mut session = Session::open(&spec, command, dashboard)?;
    let result = run_trials(args, &mut session, &policies, plan);
    session.finish(&result)?;
    let run_dir = session.run.path.clone();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) if proc::interrupted() => {
            eprintln!("neurogc bench: interrupted: {e:#}");
            Outcome::Interrupted
        }
        Err(e) => return Err(e.context(format!("run directory {}", run_dir.display()))),
    };
    Ok(BenchDone {
        run_dir,
        outcome,
        dashboard: std::mem::take(&mut session.dashboard),
    })
}

fn run_trials(
    args: &BenchArgs,
    session: &mut Session,
    policies: &[Policy],
    plan: LoadPlan,
) -> Result<Outcome> {
    let shape = match plan {
        LoadPlan::Fixed(shape) => {
            session.set_load(shape.clone(), RateSource::Fixed, None)?;
            shape
        }
        LoadPlan::AutoRate => {
            if args.mode == Mode::SideBySide {
                bail!("--rate auto probes one server at a time: use it with --mode sequential or alternating, or give --rate RPS");
            }
            let probed =
                policies::parse_all(&args.rate_policies).map_err(|e| e.context("--rate-policy"))?;
            let found = rate::search(
                session,
                &probed,
                &SearchConfig {
                    start_rps: args.rate_start,
                    max_rps: 100_000.0,
                    probe: args.probe_time,
                    warmup: args.rate_warmup.unwrap_or(args.warmup),
                    fraction: args.rate_fraction,
                },
            )?;
            eprintln!(
                "rate auto: the {} server sustains at most {} req/s; running every policy at {} % of it: {} req/s",
                found.limited_by,
                found.sustainable_rps,
                (args.rate_fraction * 100.0).round(),
                found.rate
            );
            let shape = Shape::Open { rate: found.rate };
            let auto = AutoRate {
                sustainable_rps: found.sustainable_rps,
                fraction: args.rate_fraction,
                limited_by: found.limited_by,
            };
            session.set_load(shape.clone(), RateSource::Auto, Some(auto))?;
            shape
        }
    };
    let together = args.mode != Mode::Sequential;
    let total = if together {
        args.repeat as usize
    } else {
        args.repeat as usize * policies.len()
    };
    let plan = TrialPlan {
        shape: &shape,
        warmup: args.warmup,
        duration: args.duration,
    };
    let mut n = 0;
    for rep in 1..=args.repeat {
        let groups: Vec<Vec<&Policy>> = if together {
            vec![policies.iter().collect()]
        } else {
            policies.iter().map(|p| vec![p]).collect()
        };
        for group in groups {
            n += 1;
            let names: Vec<&str> = group.iter().map(|p| p.label.as_str()).collect();
            let progress = format!("[{n}/{total}] {} r{rep}", names.join(" + "));
            let outcome = session.run_together(&group, rep, &plan, &progress)?;
            if outcome == Outcome::Interrupted || proc::interrupted() {
                return Ok(Outcome::Interrupted);
            }
        }
    }
    Ok(Outcome::Complete)
}
