//! `neurogc collect`: the seed's first phase. The app runs with the agent observing only
//! (policy `default`: CPython's own GC), is warmed up and driven by `neurogc load`, and its
//! samples of the measured window become a training set.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_core::sample::read::{BadRows, CsvTable};
use neurogc_record::{files, Mode, RateSource, RunKind, RunRecord, TrialEntry};
use neurogc_units::parse_duration;

use crate::args::{AppArgs, DashboardOpts, LoadOpts, LoadPlan, OutputArgs};
use crate::policies::{self, Policy};
use crate::progress::{Eta, START_STOP_S};
use crate::session::{Dashboard, Outcome, RunSpec, Session, TrialPlan};

/// `neurogc collect`.
#[derive(clap::Args, Debug, Clone)]
pub struct CollectArgs {
    /// Where the training set goes (the measured window's samples) [default: RUN_DIR/data.csv].
    #[arg(long, value_name = "FILE.csv")]
    pub out: Option<PathBuf>,
    /// Measured time.
    #[arg(short = 't', long, visible_alias = "duration", value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub run_time: Duration,
    /// Load before the measurement, not recorded.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// The policy the app runs under while collecting.
    #[arg(long, value_name = "SPEC", default_value = "default")]
    pub policy: String,
    /// Adds collections at random moments (a mean gap of MEAN apart, 2s if not given) to
    /// CPython's own, and records what each cost and freed: labels for moments the default
    /// would never have collected at (`neurogc train --model scheduler` learns from them).
    /// The policy `explore[:MEAN]`.
    #[arg(long, value_name = "MEAN", num_args = 0..=1, default_missing_value = "2s", value_parser = parse_duration)]
    pub explore: Option<Duration>,
    /// Do not pin the server and the load generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    #[command(flatten)]
    pub app: AppArgs,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub dashboard: DashboardOpts,
    /// Time the caller runs after this collect (the demo's training and bench, the suite's
    /// later steps): the progress line's ETA is for the whole run.
    #[arg(skip)]
    pub then: Duration,
}

pub struct Collected {
    pub run_dir: PathBuf,
    pub data: PathBuf,
    pub rows: usize,
    pub outcome: Outcome,
    pub dashboard: Dashboard,
}

pub fn execute(
    args: &CollectArgs,
    command: Vec<String>,
    dashboard: Dashboard,
) -> Result<Collected> {
    let spec = match args.explore {
        None => args.policy.clone(),
        Some(mean) if args.policy == "default" => {
            format!("explore:{}ms", mean.as_millis())
        }
        Some(_) => bail!(
            "--explore adds random collections to CPython's default: give it without --policy {:?}",
            args.policy
        ),
    };
    let policy: Policy = policies::parse_all(std::slice::from_ref(&spec))?.remove(0);
    // The seed's load: 100 users, 10 per second.
    let shape = match args.load.plan(Some((100, 10.0)))? {
        LoadPlan::Fixed(shape) => shape,
        LoadPlan::AutoRate => {
            bail!("--rate auto is for bench; collect takes --rate RPS or --users N")
        }
    };
    if args.run_time.is_zero() {
        bail!("--run-time must be above 0");
    }
    if let Some(out) = &args.out {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--out {}: cannot create its folder", out.display()))?;
        }
    }
    let policies = [policy];
    let spec = RunSpec {
        kind: RunKind::Collect,
        app: &args.app,
        load: &args.load,
        output: &args.output,
        pin: !args.no_pin,
        mode: Mode::Sequential,
        alternate: None,
        shuffle: None,
        primer: false,
        repeat: 1,
        warmup: args.warmup,
        duration: args.run_time,
        policies: &policies,
    };
    let mut session = Session::open(&spec, command, dashboard)?;
    session.eta =
        Eta::start(START_STOP_S + (args.warmup + args.run_time + args.then).as_secs_f64());
    session.set_load(shape.clone(), RateSource::Fixed, None)?;
    let policy = &policies[0];
    let plan = TrialPlan {
        shape: &shape,
        warmup: args.warmup,
        duration: args.run_time,
    };
    let result = session.run_together(&[policy], 1, &plan, &format!("collect · {}", policy.label));
    let run_dir = session.run.path.clone();
    let data = args.out.clone().unwrap_or_else(|| run_dir.join("data.csv"));
    // The training set is part of the run: a failure to write it fails the run.
    let result = result.and_then(|outcome| {
        let record = RunRecord::open(&run_dir)?;
        let trial = record.trials.first().context("the run has no trial")?;
        let rows = write_training_set(trial, &data)?;
        Ok((outcome, rows))
    });
    session.finish(
        &result
            .as_ref()
            .map(|(o, _)| *o)
            .map_err(|e| anyhow::anyhow!("{e:#}")),
    )?;
    let (outcome, rows) =
        result.map_err(|e| e.context(format!("run directory {}", run_dir.display())))?;
    Ok(Collected {
        run_dir,
        data,
        rows,
        outcome,
        dashboard: std::mem::take(&mut session.dashboard),
    })
}

/// Copies the samples of the trial's measured window to `out` (atomically): header, then the
/// rows of every process of the service (its first process' `samples.csv`, then each worker's
/// `samples-<pid>.csv`), each file's rows together; their `pid` column tells them apart, and the
/// trainer's windows never span two processes.
fn write_training_set(trial: &TrialEntry, out: &Path) -> Result<usize> {
    let info = trial.info.as_ref().context("the trial has no trial.json")?;
    let start = info.measure_start.unwrap_or(f64::NEG_INFINITY);
    let end = info.measure_end.unwrap_or(f64::INFINITY);
    let process_files = trial.process_files(files::SAMPLES);
    if process_files.is_empty() {
        bail!(
            "no samples were recorded ({})",
            trial.file(files::SAMPLES).display()
        );
    }
    let mut header: Option<(String, String)> = None;
    let mut body = String::new();
    let mut rows = 0;
    for file in &process_files {
        let text = std::fs::read_to_string(&file.path)
            .with_context(|| format!("cannot read {}", file.path.display()))?;
        let table = CsvTable::parse(&file.shown, text.as_bytes(), BadRows::Fail)?;
        let lines: Vec<&str> = text.lines().collect();
        let Some(&head) = lines.first() else {
            bail!("{}: empty", file.shown)
        };
        match &header {
            None => header = Some((head.to_string(), file.shown.clone())),
            Some((first, shown)) if first != head => bail!(
                "{} and {shown} have different headers (written by different agent versions?); \
                 cannot make one training set of them",
                file.shown
            ),
            Some(_) => {}
        }
        for row in &table.rows {
            let t = table.time(row);
            if t >= start && t <= end + 1e-3 {
                body.push_str(lines[row.line as usize - 1]);
                body.push('\n');
                rows += 1;
            }
        }
    }
    let (header, _) = header.context("no samples were recorded")?;
    let tmp = out.with_extension("csv.tmp");
    std::fs::write(&tmp, format!("{header}\n{body}"))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(rows)
}
