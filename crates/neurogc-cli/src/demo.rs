//! `neurogc demo`: the seed's three phases on the bundled app with small defaults — collect,
//! train an LSTM, bench with and without it — streamed to the live dashboard, ending with the
//! report. About four minutes. Each phase is the library call its command makes.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use neurogc_bench::args::{flags_with_defaults, AppArgs, DashboardOpts, OutputArgs};
use neurogc_bench::session::{Dashboard, Outcome};
use neurogc_bench::{bench, collect, proc, BenchArgs, CollectArgs};
use neurogc_record::Mode;
use neurogc_units::parse_duration;

/// `neurogc demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The bundled workload (`neurogc suite` lists them): seed, the seed's endpoints, by default.
    #[arg(long, visible_alias = "workload", default_value = "seed")]
    pub scenario: String,
    /// Measured collection time.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub collect_time: Duration,
    /// Measured time per bench trial.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub bench_time: Duration,
    /// Warm-up before every measurement.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Length of each `--rate auto` probe.
    #[arg(long, default_value = "4s", value_parser = parse_duration)]
    pub probe_time: Duration,
    /// First rate `--rate auto` probes, requests per second.
    #[arg(long, default_value_t = 40.0)]
    pub rate_start: f64,
    /// Bench repetitions per policy.
    #[arg(long, default_value_t = 2)]
    pub repeat: u32,
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

impl DemoArgs {
    /// What collect and bench share in the demo: the app, where runs go, the dashboard.
    fn apply(&self, app: &mut AppArgs, output: &mut OutputArgs, dashboard: &mut DashboardOpts) {
        output.runs_dir = self.runs_dir.clone();
        app.interval = self.interval;
        app.python = self.python.clone();
        app.workload = Some(self.scenario.clone());
        dashboard.dashboard_port = self.dashboard_port;
        dashboard.dashboard = !self.no_dashboard;
        dashboard.no_dashboard = self.no_dashboard;
    }
}

pub fn run(args: DemoArgs) -> Result<i32> {
    let started = std::time::Instant::now();
    let command: Vec<String> = std::env::args().collect();

    eprintln!("== 1/3 collect: the demo app under the seed's Locust-style load, CPython's own GC");
    let mut c: CollectArgs = flags_with_defaults(&[])?;
    args.apply(&mut c.app, &mut c.output, &mut c.dashboard);
    c.warmup = args.warmup;
    c.output.name = Some("demo-collect".into());
    c.run_time = args.collect_time;
    c.load.users = Some(20);
    c.load.spawn_rate = Some(10.0);
    let dashboard = Dashboard::connect(&c.dashboard)?;
    let collected = collect::execute(&c, command.clone(), dashboard)?;
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
    let mut t = neurogc_train::TrainArgs::new(vec![collected.data.clone()], model.clone());
    t.epochs = args.epochs;
    t.quiet = true;
    neurogc_train::train_model(&t)?;
    if proc::interrupted() {
        return Ok(130);
    }

    eprintln!(
        "== 3/3 bench: without and with the model, taking turns on one core, below saturation"
    );
    let policy = format!("neurogc-seed:{}", model.display());
    let mut b: BenchArgs = flags_with_defaults(&["--policy", "default"])?;
    args.apply(&mut b.app, &mut b.output, &mut b.dashboard);
    b.warmup = args.warmup;
    b.output.name = Some("demo-bench".into());
    b.policies.push(policy);
    b.mode = Mode::Alternating;
    b.repeat = args.repeat;
    b.load.rate = Some("auto".into());
    b.probe_time = args.probe_time;
    b.rate_start = args.rate_start;
    b.duration = args.bench_time;
    let done = bench::execute(&b, command, collected.dashboard)?;
    let report = neurogc_report::write_report(&done.run_dir)?;
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
        while proc::sleep_unless_interrupted(Duration::from_secs(1)) {}
    }
    Ok(match done.outcome {
        Outcome::Complete => 0,
        Outcome::Interrupted => 130,
    })
}
