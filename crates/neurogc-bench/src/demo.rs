//! `neurogc demo`: the seed's three phases on the bundled app with small defaults — collect,
//! train an LSTM, bench with and without it — streamed to the live dashboard, ending with the
//! report. About four minutes.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::bench::{self, BenchArgs};
use crate::collect::{self, CollectArgs};
use crate::proc;
use crate::session::{Dashboard, Outcome};

/// `neurogc demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Demo workload: seed or large-heap.
    #[arg(long, default_value = "seed")]
    pub scenario: String,
    /// Measured collection time.
    #[arg(long, default_value = "40s")]
    pub collect_time: String,
    /// Measured time per bench trial.
    #[arg(long, default_value = "20s")]
    pub bench_time: String,
    /// Warm-up before every measurement.
    #[arg(long, default_value = "5s")]
    pub warmup: String,
    /// Length of each `--rate auto` probe.
    #[arg(long, default_value = "3s")]
    pub probe_time: String,
    /// First rate `--rate auto` probes, requests per second.
    #[arg(long, default_value_t = 40.0)]
    pub rate_start: f64,
    /// Bench repetitions per policy.
    #[arg(long, default_value_t = 2)]
    pub repeat: usize,
    /// LSTM training epochs.
    #[arg(long, default_value_t = 40)]
    pub epochs: usize,
    /// Agent sample interval, seconds.
    #[arg(long, default_value_t = 0.5)]
    pub interval: f64,
    /// Parent of the run directories.
    #[arg(long, default_value = "runs")]
    pub runs_dir: PathBuf,
    /// Python with `neurogc` installed [default: the project's .venv].
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The dashboard's port on 127.0.0.1.
    #[arg(long, default_value_t = 8003)]
    pub dashboard_port: u16,
    /// No dashboard.
    #[arg(long)]
    pub no_dashboard: bool,
    /// Keep serving the dashboard after the run, until Ctrl-C.
    #[arg(long)]
    pub serve: bool,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct Collect {
    #[command(flatten)]
    args: CollectArgs,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct Bench {
    #[command(flatten)]
    args: BenchArgs,
}

pub fn run(args: DemoArgs, report: crate::Reporter) -> Result<i32> {
    let started = std::time::Instant::now();
    let exe = std::env::current_exe().context("cannot find the neurogc binary")?;
    let runs = args.runs_dir.display().to_string();
    let interval = args.interval.to_string();
    let port = args.dashboard_port.to_string();
    let mut common: Vec<String> = vec!["--runs-dir".into(), runs, "--interval".into(), interval];
    if let Some(p) = &args.python {
        common.extend(["--python".into(), p.display().to_string()]);
    }
    common.extend(["--dashboard-port".into(), port]);
    common.push(
        if args.no_dashboard {
            "--no-dashboard"
        } else {
            "--dashboard"
        }
        .into(),
    );
    let command: Vec<String> = std::env::args().collect();

    eprintln!("== 1/3 collect: the demo app under the seed's Locust-style load, CPython's own GC");
    let mut collect_argv: Vec<String> = [
        "--name",
        "demo-collect",
        "--scenario",
        &args.scenario,
        "--users",
        "20",
        "--spawn-rate",
        "10",
        "--run-time",
        &args.collect_time,
        "--warmup",
        &args.warmup,
    ]
    .map(String::from)
    .to_vec();
    collect_argv.extend(common.clone());
    let collect_args = Collect::try_parse_from(&collect_argv)?.args;
    let dashboard = Dashboard::connect(&collect_args.dashboard)?;
    let collected = collect::execute(&collect_args, command.clone(), dashboard)?;
    if collected.outcome == Outcome::Interrupted {
        eprintln!("interrupted; data so far: {}", collected.data.display());
        return Ok(130);
    }
    eprintln!(
        "   {} samples in {}",
        collected.rows,
        collected.data.display()
    );

    eprintln!("== 2/3 train: the seed's LSTM on those samples");
    let model = collected.run_dir.join("model");
    let status = Command::new(&exe)
        .arg("train")
        .arg("--data")
        .arg(&collected.data)
        .args([
            "--model",
            "lstm",
            "--epochs",
            &args.epochs.to_string(),
            "--quiet",
        ])
        .arg("--out")
        .arg(&model)
        .status()
        .context("cannot run neurogc train")?;
    if proc::interrupted() {
        return Ok(130);
    }
    if !status.success() {
        bail!("training failed ({status})");
    }

    eprintln!(
        "== 3/3 bench: without and with the model, taking turns on one core, below saturation"
    );
    let policy = format!("neurogc-seed:{}", model.display());
    let mut bench_argv: Vec<String> = [
        "--name",
        "demo-bench",
        "--scenario",
        &args.scenario,
        "--policy",
        "default",
        "--policy",
        &policy,
        "--mode",
        "alternating",
        "--repeat",
        &args.repeat.to_string(),
        "--rate",
        "auto",
        "--probe-time",
        "4s",
        "--duration",
        &args.bench_time,
        "--warmup",
        &args.warmup,
    ]
    .map(String::from)
    .to_vec();
    bench_argv.extend(common);
    let bench_args = Bench::try_parse_from(&bench_argv)?.args;
    let done = bench::execute(&bench_args, command, collected.dashboard)?;
    let report = report(&done.run_dir)?;
    println!(
        "\ndemo finished in {:.0} s.\nreport:    {}",
        started.elapsed().as_secs_f64(),
        report.display()
    );
    if let Some(url) = done.dashboard.url() {
        let note = if args.serve || !done.dashboard.started_here() {
            ""
        } else {
            " (live during the run; --serve keeps it up)"
        };
        println!("dashboard: {url}{note}");
    }
    println!(
        "replay:    neurogc dashboard --replay {}",
        done.run_dir.display()
    );
    if args.serve && done.dashboard.started_here() && done.outcome == Outcome::Complete {
        eprintln!("serving the dashboard until Ctrl-C");
        while proc::sleep_unless_interrupted(std::time::Duration::from_secs(1)) {}
    }
    Ok(match done.outcome {
        Outcome::Complete => 0,
        Outcome::Interrupted => 130,
    })
}
