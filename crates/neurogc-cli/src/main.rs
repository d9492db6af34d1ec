//! `neurogc`: the command line. Thin glue over the crates that do the work.
use clap::{Parser, Subcommand};

mod demo;
mod run;

#[derive(Parser)]
#[command(
    name = "neurogc",
    version,
    about = "Learned scheduling of CPython's garbage collector"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate HTTP load (Locust-style closed loop or wrk2-style open loop).
    Load(neurogc_load::LoadArgs),
    /// Serve the live dashboard (ingest, WebSocket stream, web page, replay).
    Dashboard(neurogc_dashboard::DashboardArgs),
    /// Train a model on sample CSVs (ours or the seed's).
    Train(neurogc_train::TrainArgs),
    /// Convert a PyTorch state_dict trained by the seed's code into a NeuroGC model.
    ImportTorch(neurogc_train::ImportArgs),
    /// Run a Python command with the NeuroGC agent injected (no code change).
    Run(run::RunArgs),
    /// Record a training set: the app under load with CPython's own GC, the agent observing.
    Collect(neurogc_bench::CollectArgs),
    /// Compare policies on the same app and load, repeated and interleaved; writes a report.
    Bench(Box<neurogc_bench::BenchArgs>),
    /// The seed's experiment end to end on the demo app: collect, train an LSTM, bench, report.
    Demo(demo::DemoArgs),
    /// Write a run's report (README.md and charts), or compare runs.
    Report(neurogc_report::ReportArgs),
    /// Every bundled workload × GC policy, in turns on one core; the scoreboard of where each wins.
    Suite(neurogc_suite::SuiteArgs),
    /// A training script under each GC step policy, interleaved; which one is best for it.
    Sweep(neurogc_sweep::SweepArgs),
    /// Replay a recorded run's traffic under any GC policy, and the best schedule in hindsight.
    Simulate(neurogc_sim::SimulateArgs),
    /// Internal: kills process group PGID when the process that started it ends.
    #[command(name = "__keep", hide = true)]
    Keep { pgid: i32 },
}

/// `neurogc bench`: the run, then its report.
fn bench(args: &neurogc_bench::BenchArgs) -> anyhow::Result<i32> {
    let done = neurogc_bench::run_bench(args)?;
    let interrupted = done.outcome == neurogc_bench::session::Outcome::Interrupted;
    if !args.no_report {
        match neurogc_report::write_report(&done.run_dir) {
            Ok(path) => println!("report:   {}", path.display()),
            Err(e) if interrupted => {
                eprintln!("neurogc bench: no report for the interrupted run: {e:#}")
            }
            Err(e) => return Err(e),
        }
    }
    if interrupted {
        eprintln!("interrupted: what was measured is kept");
    }
    Ok(neurogc_bench::exit_code(done.outcome))
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Load(args) => neurogc_load::run(args),
        Command::Run(args) => run::run(args),
        Command::Train(args) => neurogc_train::run_train(args),
        Command::ImportTorch(args) => neurogc_train::run_import(args),
        Command::Dashboard(args) => neurogc_dashboard::run(args),
        Command::Collect(args) => neurogc_bench::run_collect(args),
        Command::Bench(args) => bench(&args),
        Command::Demo(args) => demo::run(args),
        Command::Report(args) => neurogc_report::run(args),
        Command::Sweep(args) => neurogc_sweep::run(&args),
        Command::Simulate(args) => neurogc_sim::run(args),
        Command::Keep { pgid } => Ok(neurogc_bench::proc::keep(pgid)),
        Command::Suite(args) => neurogc_suite::run(&args).map(|d| {
            println!("scoreboard: {}", d.readme.display());
            if let Some(failure) = d.failure() {
                eprintln!("{failure}");
            }
            d.exit_code()
        }),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("neurogc: error: {err:#}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every option of every command says what it does in `--help`.
    #[test]
    fn every_option_of_every_command_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                let help = arg.get_help().or(arg.get_long_help());
                if help.is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "neurogc", &mut missing);
        assert!(missing.is_empty(), "options without help: {missing:#?}");
    }

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `run --interval` takes the duration grammar every other flag takes.
    #[test]
    fn run_interval_is_a_duration() {
        let parse =
            |i: &str| match Cli::try_parse_from(["neurogc", "run", "--interval", i, "--", "x"]) {
                Ok(Cli {
                    command: Command::Run(args),
                }) => Ok(format!("{args:?}")),
                Ok(_) => unreachable!(),
                Err(e) => Err(e.to_string()),
            };
        for (text, parsed) in [("500ms", "500ms"), ("0.25", "250ms"), ("1m", "60s")] {
            let args = parse(text).unwrap();
            assert!(
                args.contains(&format!("interval: {parsed},")),
                "{text}: {args}"
            );
        }
        assert!(parse("fast").unwrap_err().contains("fast"));
    }
}
