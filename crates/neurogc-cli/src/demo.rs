//! `neurogc demo`: the seed's three phases on the bundled app with small defaults — collect,
//! train an LSTM, bench with and without it — streamed to the live dashboard, ending with the
//! report. About four minutes. Each phase is the library call its command makes.

use std::path::{Path, PathBuf};
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
    /// Agent sample interval: 500ms, 1s, 0.25 (a bare number is seconds).
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub interval: Duration,
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

/// What training the demo's LSTM is expected to take, seconds per epoch, for the ETA.
const TRAIN_S_PER_EPOCH: f64 = 0.25;

impl DemoArgs {
    /// Phase 1: the collect run, `then` (the training and bench after it) for its ETA.
    fn collect_args(&self, then: Duration) -> Result<CollectArgs> {
        let mut c: CollectArgs = flags_with_defaults(&[])?;
        self.apply(&mut c.app, &mut c.output, &mut c.dashboard);
        c.warmup = self.warmup;
        c.output.name = Some("demo-collect".into());
        c.run_time = self.collect_time;
        c.load.users = Some(20);
        c.load.spawn_rate = Some(10.0);
        c.then = then;
        Ok(c)
    }

    /// Phase 3: `default` against the model in `model`, taking turns, at an automatic rate.
    fn bench_args(&self, model: &Path) -> Result<BenchArgs> {
        let policy = format!("neurogc-seed:{}", model.display());
        let mut b: BenchArgs = flags_with_defaults(&["--policy", "default"])?;
        self.apply(&mut b.app, &mut b.output, &mut b.dashboard);
        b.warmup = self.warmup;
        b.output.name = Some("demo-bench".into());
        b.policies.push(policy);
        b.mode = Some(Mode::Alternating);
        b.repeat = self.repeat;
        b.load.rate = Some("auto".into());
        b.probe_time = self.probe_time;
        b.rate_start = self.rate_start;
        b.duration = self.bench_time;
        Ok(b)
    }

    /// Seconds the training and the bench are expected to take.
    fn after_collect_s(&self) -> Result<f64> {
        let b = self.bench_args(Path::new("model"))?;
        Ok(self.epochs as f64 * TRAIN_S_PER_EPOCH
            + bench::planned_s(&b, Mode::Alternating, b.policies.len(), true))
    }
}

pub fn run(args: DemoArgs) -> Result<i32> {
    let started = std::time::Instant::now();
    let command: Vec<String> = std::env::args().collect();

    eprintln!("== 1/3 collect: the demo app under the seed's Locust-style load, CPython's own GC");
    let c = args.collect_args(Duration::from_secs_f64(args.after_collect_s()?))?;
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
    t.epochs = Some(args.epochs);
    t.quiet = true;
    neurogc_train::train_model(&t)?;
    if proc::interrupted() {
        return Ok(130);
    }

    eprintln!(
        "== 3/3 bench: without and with the model, taking turns on one core, below saturation"
    );
    let b = args.bench_args(&model)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag of the demo reaches the phase it is for.
    #[test]
    fn flags_reach_their_phase() {
        let demo: DemoArgs = flags_with_defaults(&[
            "--probe-time",
            "1s",
            "--rate-start",
            "80",
            "--interval",
            "250ms",
            "--warmup",
            "2s",
            "--bench-time",
            "7s",
            "--collect-time",
            "9s",
            "--repeat",
            "4",
            "--runs-dir",
            "elsewhere",
            "--no-dashboard",
            "--scenario",
            "bursty",
        ])
        .unwrap();
        let b = demo.bench_args(Path::new("m")).unwrap();
        assert_eq!((b.probe_time, b.rate_start), (Duration::from_secs(1), 80.0));
        assert_eq!(
            (b.warmup, b.duration, b.repeat),
            (Duration::from_secs(2), Duration::from_secs(7), 4)
        );
        assert_eq!(b.mode, Some(Mode::Alternating));
        assert_eq!(b.load.rate.as_deref(), Some("auto"));
        assert_eq!(b.policies, ["default", "neurogc-seed:m"]);
        let c = demo.collect_args(Duration::from_secs(60)).unwrap();
        assert_eq!(
            (c.run_time, c.warmup),
            (Duration::from_secs(9), Duration::from_secs(2))
        );
        assert_eq!(c.then, Duration::from_secs(60));
        for (app, output, dash) in [
            (&b.app, &b.output, &b.dashboard),
            (&c.app, &c.output, &c.dashboard),
        ] {
            assert_eq!(app.interval, Duration::from_millis(250));
            assert_eq!(app.workload.as_deref(), Some("bursty"));
            assert_eq!(output.runs_dir, PathBuf::from("elsewhere"));
            assert!(dash.no_dashboard);
        }
        // The ETA before the collect: training and a bench with its rate search.
        assert!(demo.after_collect_s().unwrap() > 2.0 * 4.0 * (2.0 + 7.0));
    }
}
