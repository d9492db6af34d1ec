//! `neurogc bench`: every policy against the same load, repeated and interleaved (A B A B …):
//! the servers taking turns under one load on one core (`--mode alternating`, the default, and
//! `turns`), one at a time on a pinned core (`--mode sequential`) or all at once
//! (`--mode side-by-side`, the seed's way); then the report.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_load::Shape;
use neurogc_record::{AutoRate, Mode, RateSource, RunKind};
use neurogc_units::{fmt_clock, parse_duration};

use crate::args::{AppArgs, DashboardOpts, LoadOpts, LoadPlan, OutputArgs};
use crate::policies::{self, Policy};
use crate::proc;
use crate::progress::{Eta, START_STOP_S};
use crate::rate::{self, SearchConfig};
use crate::session::{Dashboard, Outcome, RunSpec, Session, TrialPlan};

/// `neurogc bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// A policy to bench, `[LABEL=]SPEC` (repeat; the first is the baseline), e.g. `default`,
    /// `neurogc-seed:models/lstm`, `big=threshold:50000,20,20`.
    #[arg(long = "policy", value_name = "[LABEL=]SPEC", required = true)]
    pub policies: Vec<String>,
    /// How the trials share the machine [default: alternating, whose A/A runs found no
    /// significant difference where sequential's found 36 % (docs/bench.md); sequential with
    /// --users, as taking turns needs an open-loop load].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
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
    /// With --rate auto: bisection steps between the last sustained and the first failed
    /// doubling; each halves the ratio between them (3: capacity within 2^(1/8), 9 %).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=6))]
    pub rate_refine: u32,
    /// With --rate auto: the load before a probed server's first probe [default: --warmup].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub rate_warmup: Option<Duration>,
    /// With --mode alternating or turns: how long each server has the load before the next
    /// takes over (a turn; --duration is then so many turns per server) [default: 2s, or
    /// --duration if shorter].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub slice: Option<Duration>,
    /// With --mode alternating or turns: start the servers and give them their turns in an
    /// order shuffled from this seed, each repetition its own, instead of as listed (rotated by
    /// one each repetition). Where a run has one repetition, a fixed order would put the same
    /// policy first every time: here the server started first collected its whole heap up to
    /// 1.8× slower than a copy of it started later (docs/bench.md).
    #[arg(long, value_name = "SEED")]
    pub shuffle: Option<u64>,
    /// With --mode turns: start a throwaway server under `default` first, warm it up and hold it
    /// stopped until the scored servers are done, so that the first start is none of theirs.
    /// (In a fixed order the server the suite started first collected its whole heap 1.05-1.8×
    /// slower than a copy started last; shuffled, the first place still cost whoever took it:
    /// docs/suite.md.) Its files go to `primer-rN/`. With one server, nothing to prime.
    #[arg(long)]
    pub primer: bool,
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
    /// Time the caller runs after this bench (the suite's later workloads): the progress line's
    /// ETA is for the whole run.
    #[arg(skip)]
    pub then: Duration,
    /// With --rate auto: a capacity already found for this service (the suite's explore run
    /// found it): probed once more, and searched again only if no longer sustained.
    #[arg(skip)]
    pub known_rate: Option<neurogc_record::RateSearch>,
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
    mode: Mode,
}

/// `--mode` as given, or the default: alternating, or sequential for a closed loop.
fn resolve_mode(args: &BenchArgs, plan: &LoadPlan) -> Mode {
    match (args.mode, plan) {
        (Some(mode), _) => mode,
        (None, LoadPlan::Fixed(Shape::Closed { .. })) => {
            eprintln!(
                "neurogc bench: --users is a closed loop, which cannot take turns: --mode sequential"
            );
            Mode::Sequential
        }
        (None, _) => Mode::Alternating,
    }
}

/// Doublings a capacity search is expected to take before its bisection steps.
const DOUBLINGS_EXPECTED: f64 = 5.0;

/// How long the bench is expected to take, in seconds, from its flags: the capacity search
/// (with `--rate auto`, estimated at 5 doublings plus the bisection steps per probed policy)
/// and every trial's start, warm-up, measurement and stop. The progress line's ETA starts from it.
pub fn planned_s(args: &BenchArgs, mode: Mode, policies: usize, auto_rate: bool) -> f64 {
    let search = if auto_rate {
        let warmup = args.rate_warmup.unwrap_or(args.warmup).as_secs_f64();
        args.rate_policies.len() as f64
            * (START_STOP_S
                + warmup
                + (DOUBLINGS_EXPECTED + f64::from(args.rate_refine))
                    * args.probe_time.as_secs_f64())
    } else {
        0.0
    };
    search + args.repeat as f64 * group_s(args, mode, policies) * groups(mode, policies) as f64
}

/// Trial groups per repetition: one per policy when they run alone, else one.
fn groups(mode: Mode, policies: usize) -> usize {
    if mode == Mode::Sequential {
        policies
    } else {
        1
    }
}

/// Seconds one group of trials run together is expected to take.
fn group_s(args: &BenchArgs, mode: Mode, policies: usize) -> f64 {
    let (warmup, duration) = (args.warmup.as_secs_f64(), args.duration.as_secs_f64());
    let servers = if mode == Mode::Sequential {
        1.0
    } else {
        policies as f64
    };
    let turns = if mode.takes_turns() { servers } else { 1.0 };
    let primer = if crate::session::primes(args.primer, mode, policies) {
        START_STOP_S + warmup
    } else {
        0.0
    };
    servers * START_STOP_S + turns * (warmup + duration) + primer
}

/// The turn length: `--slice`, or 2 s, or the whole `--duration` if that is shorter.
fn slice(args: &BenchArgs) -> Duration {
    args.slice
        .unwrap_or_else(|| Duration::from_secs(2).min(args.duration))
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
    let mode = resolve_mode(args, &plan);
    if args.primer && mode != Mode::Turns {
        bail!(
            "--primer holds a throwaway server stopped while the others take turns: it needs \
             --mode turns, not --mode {mode}"
        );
    }
    if args.shuffle.is_some() && !mode.takes_turns() {
        bail!(
            "--shuffle orders the servers that take turns: it needs --mode alternating or turns, \
             not --mode {mode}"
        );
    }
    if mode.takes_turns() {
        if matches!(&plan, LoadPlan::Fixed(Shape::Closed { .. })) {
            bail!(
                "--mode {mode} switches an open-loop load between servers: give --rate RPS or --rate auto, not --users"
            );
        }
        let slice = slice(args);
        if slice < Duration::from_millis(100) || slice > args.duration {
            bail!(
                "--slice {slice:?} must be at least 100ms and at most --duration ({:?})",
                args.duration
            );
        }
    }
    Ok(Checked {
        policies,
        plan,
        mode,
    })
}

/// Runs the bench; `command` is recorded in run.json. Ctrl-C stops it and keeps what finished.
pub fn execute(args: &BenchArgs, command: Vec<String>, dashboard: Dashboard) -> Result<BenchDone> {
    let Checked {
        policies,
        plan,
        mode,
    } = check(args)?;
    let spec = RunSpec {
        kind: RunKind::Bench,
        app: &args.app,
        load: &args.load,
        output: &args.output,
        pin: !args.no_pin && mode != Mode::SideBySide,
        mode,
        alternate: mode.takes_turns().then(|| slice(args)),
        shuffle: args.shuffle,
        primer: args.primer,
        repeat: args.repeat,
        warmup: args.warmup,
        duration: args.duration,
        policies: &policies,
    };
    let mut session = Session::open(&spec, command, dashboard)?;
    let auto = matches!(plan, LoadPlan::AutoRate);
    let planned = planned_s(args, mode, policies.len(), auto);
    session.eta = Eta::start(planned + args.then.as_secs_f64());
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    eprintln!(
        "neurogc bench: {} × {} (--mode {mode}){}: about {} in all",
        plural(policies.len(), "policy").replace("policys", "policies"),
        plural(args.repeat as usize, "repetition"),
        if auto { ", after the rate search" } else { "" },
        fmt_clock(planned)
    );
    let result = run_trials(args, mode, &mut session, &policies, plan);
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
    mode: Mode,
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
            if mode == Mode::SideBySide {
                bail!("--rate auto probes one server at a time: use it with --mode sequential or alternating, or give --rate RPS");
            }
            let probed =
                policies::parse_all(&args.rate_policies).map_err(|e| e.context("--rate-policy"))?;
            let cfg = SearchConfig {
                start_rps: args.rate_start,
                max_rps: 100_000.0,
                probe: args.probe_time,
                warmup: args.rate_warmup.unwrap_or(args.warmup),
                fraction: args.rate_fraction,
                refine: args.rate_refine,
            };
            let found = match &args.known_rate {
                Some(known) => rate::recheck(session, &probed, known, &cfg)?,
                None => rate::search(session, &probed, &cfg)?,
            };
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
    let together = mode != Mode::Sequential;
    let total = args.repeat as usize * groups(mode, policies.len());
    // The ETA from here: the groups left, each as long as the plan says until one has run, then
    // as long as those run so far took.
    let mut per_group = group_s(args, mode, policies.len());
    let trials_started = std::time::Instant::now();
    let plan = TrialPlan {
        shape: &shape,
        warmup: args.warmup,
        duration: args.duration,
    };
    let mut n = 0;
    for rep in 1..=args.repeat {
        let sets: Vec<Vec<&Policy>> = if together {
            vec![policies.iter().collect()]
        } else {
            policies.iter().map(|p| vec![p]).collect()
        };
        for group in sets {
            if n > 0 {
                per_group = trials_started.elapsed().as_secs_f64() / n as f64;
            }
            let left = (total - n) as f64 * per_group + args.then.as_secs_f64();
            session.eta.replan(left);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::flags_with_defaults;

    fn args(argv: &[&str]) -> BenchArgs {
        let mut all = vec!["--policy", "default", "--policy", "gc-off"];
        all.extend_from_slice(argv);
        flags_with_defaults(&all).unwrap()
    }

    /// The default is the design whose A/A run passes: taking turns, open loop.
    #[test]
    fn the_default_mode_is_alternating() {
        assert_eq!(check(&args(&[])).unwrap().mode, Mode::Alternating);
        assert_eq!(
            check(&args(&["--rate", "50"])).unwrap().mode,
            Mode::Alternating
        );
        // A closed loop cannot take turns: sequential unless the mode is given.
        assert_eq!(
            check(&args(&["--users", "5"])).unwrap().mode,
            Mode::Sequential
        );
        let e = check(&args(&["--users", "5", "--mode", "alternating"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("--mode alternating"), "{e}");
        let given = args(&["--mode", "side-by-side", "--rate", "9"]);
        assert_eq!(check(&given).unwrap().mode, Mode::SideBySide);
        // A measurement shorter than the default turn is one turn; a --slice given is checked.
        let short = args(&["--duration", "1s"]);
        assert_eq!(
            (check(&short).unwrap().mode, slice(&short)),
            (Mode::Alternating, Duration::from_secs(1))
        );
        assert_eq!(slice(&args(&[])), Duration::from_secs(2));
        let e = check(&args(&["--duration", "1s", "--slice", "2s"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("--slice"), "{e}");
        // An order of servers is for servers that take turns; run one after another, it was
        // once ignored without a word.
        let e = check(&args(&["--mode", "sequential", "--shuffle", "7"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("--shuffle"), "{e}");
        assert!(check(&args(&["--mode", "turns", "--rate", "9", "--shuffle", "7"])).is_ok());
    }

    #[test]
    fn the_plan_counts_every_trial_and_the_rate_search() {
        let a = args(&["--warmup", "10s", "--duration", "60s", "--repeat", "3"]);
        // Alternating: 3 rounds, each both servers' start and stop and both turns of load.
        let per_round = 2.0 * START_STOP_S + 2.0 * 70.0;
        assert_eq!(planned_s(&a, Mode::Alternating, 2, false), 3.0 * per_round);
        // Sequential: 6 trials of one server.
        assert_eq!(
            planned_s(&a, Mode::Sequential, 2, false),
            6.0 * (START_STOP_S + 70.0)
        );
        // The rate search: two probed policies (gc-off, default), 8 probes of 5 s each after a
        // warm-up of --warmup.
        let search = 2.0 * (START_STOP_S + 10.0 + 8.0 * 5.0);
        assert_eq!(
            planned_s(&a, Mode::Alternating, 2, true),
            search + 3.0 * per_round
        );
        // Turns with a primer: one more server started and warmed up each round, and none
        // where one server has nothing to be primed for.
        let primed = args(&[
            "--warmup",
            "10s",
            "--duration",
            "60s",
            "--repeat",
            "3",
            "--primer",
        ]);
        assert_eq!(
            planned_s(&primed, Mode::Turns, 2, false),
            3.0 * (per_round + START_STOP_S + 10.0)
        );
        assert_eq!(
            planned_s(&primed, Mode::Turns, 1, false),
            planned_s(&a, Mode::Turns, 1, false)
        );
    }
}
