//! `neurogc sweep -- python train.py [args]`: which GC configuration is best for this training
//! script, measured.
//!
//! The script runs once per configuration (a step policy of `neurogc.training`) per round,
//! rounds one after the other with the order rotated each round; every run writes its own step
//! record (`steps.csv`, through the step hook the script calls, the Lightning/Hugging Face
//! callbacks, or `--step-function`, which the bootstrap wraps with no change to the script).
//! The report compares the configurations' step times, GC share, collections and peak RSS with
//! intervals and significance, and names the best.
//!
//! [`configs`] the configuration list · [`execute`] running the script and `sweep.json` ·
//! [`analysis`] per-run metrics, comparisons, the recommendation · [`report`] Markdown, chart
//! and terminal summary. `--aa` runs the baseline twice each round, the second copy under
//! another name ([`configs::aa_name`]): how far two identical configurations land apart on
//! this machine, the noise the other differences are read against. What it is not: a reader
//! of other step files than the hook's (`neurogc_record::steps`).
//!
//! ```text
//! <out>/
//!   sweep.json                 what ran (execute::SweepRecord)
//!   README.md, step-time.png   the report
//!   summary.json               the medians, the recommendation and learned against every
//!                              other configuration round by round (report::Summary)
//!   runs/NN-<config>-rR/       one process: steps.csv, steps.json, output.log
//! ```

pub mod analysis;
pub mod configs;
pub mod execute;
pub mod report;

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use neurogc_stats::BootstrapConfig;

use analysis::{fmt_bytes, fmt_ms, Analysis, ConfigStats, RunMetrics};
use execute::{RunEntry, RunSpec, SweepRecord};

/// `neurogc sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The configurations, step policy specs separated by commas; a KEY=VALUE item belongs to
    /// the spec before it (`default,every:100,every:1000,gen=2` is three) [default:
    /// default,disable,every:50,gen=1,every:100,gen=2,freeze:10,learned].
    #[arg(long, value_name = "SPEC,...")]
    pub configs: Option<String>,
    /// Runs of each configuration (rounds); each round runs every configuration once.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeats: u32,
    /// The output directory, new or empty [default: runs/sweep-<UTC time>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// For a script that does not call neurogc.training: every call of this function is one
    /// step (`train:train_step` for a function of train.py, `mypkg.loop:Trainer.step`).
    #[arg(long, value_name = "MODULE:QUALNAME")]
    pub step_function: Option<String>,
    /// Leave the first N steps of each run out of the statistics (warm-up).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_steps: usize,
    /// A configuration can be recommended when its peak RSS is at most this many times the
    /// baseline's (default's).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.10)]
    pub rss_bound: f64,
    /// Also run the baseline (default when swept, else the first configuration) a second time
    /// each round, as `<baseline> (A/A)`: the two differ only by the machine's noise, which the
    /// report gives beside the other comparisons. The copy is never recommended.
    #[arg(long)]
    pub aa: bool,
    /// The training command, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// What to do when a script records no steps.
fn hint(step_function: Option<&str>) -> String {
    match step_function {
        Some(f) => format!(
            "--step-function {f} was given: was that function called, and does its module \
             define it at module level (see the run's output.log)?"
        ),
        None => "The sweep reads the step hook's record: call it in the script (`with \
                 neurogc.training() as gc_steps:` … `gc_steps.step()` once per step), use \
                 neurogc.training.LightningCallback or TransformersCallback, or name the step \
                 function with --step-function MODULE:QUALNAME (each call one step, no change \
                 to the script)."
            .into(),
    }
}

fn check_args(args: &SweepArgs) -> Result<()> {
    if args.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    if !(args.rss_bound.is_finite() && args.rss_bound >= 1.0) {
        bail!(
            "--rss-bound must be a factor of at least 1 (1.10: 10 % over the baseline), got {}",
            args.rss_bound
        );
    }
    if let Some(f) = &args.step_function {
        let (module, qualname) = f.split_once(':').unwrap_or(("", ""));
        if module.is_empty() || qualname.is_empty() {
            bail!(
                "--step-function {f:?} is not MODULE:QUALNAME (e.g. train:train_step, \
                 mypkg.loop:Trainer.step)"
            );
        }
    }
    Ok(())
}

/// `neurogc sweep`: runs the sweep, writes the report, prints the summary.
pub fn run(args: &SweepArgs) -> Result<i32> {
    check_args(args)?;
    let list = args.configs.as_deref().unwrap_or(configs::DEFAULT_CONFIGS);
    let specs = configs::split(list)?;
    let python = configs::checking_python(&args.command[0]);
    let mut swept: Vec<Swept> = configs::validate(python, &specs)?
        .into_iter()
        .map(|name| Swept {
            policy: name.clone(),
            name,
        })
        .collect();
    let aa = args.aa.then(|| {
        let base = &swept[configs::baseline(&swept.iter().map(|c| &c.name).collect::<Vec<_>>())];
        Swept {
            name: configs::aa_name(&base.name),
            policy: base.policy.clone(),
        }
    });
    let aa_name = aa.as_ref().map(|c| c.name.clone());
    swept.extend(aa);
    let names: Vec<String> = swept.iter().map(|c| c.name.clone()).collect();
    let now = neurogc_units::unix_now();
    let out = execute::output_dir(args.out.as_deref(), now)?;
    let cmd = execute::shown(&args.command);
    let mut record = SweepRecord {
        schema: execute::SCHEMA,
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        configs: names.clone(),
        aa: aa_name,
        repeats: args.repeats,
        skip_steps: args.skip_steps,
        step_function: args.step_function.clone(),
        rss_bound: args.rss_bound,
        started: now,
        finished: None,
        status: "running".into(),
        error: None,
        runs: Vec::new(),
    };
    execute::write_record(&out, &record)?;
    eprintln!(
        "sweep: {} × {} of `{cmd}` into {}",
        plural(names.len(), "configuration"),
        plural(args.repeats as usize, "run"),
        out.display()
    );
    match sweep(args, &swept, &out, &cmd, &mut record) {
        Ok(per_config) => {
            record.status = "complete".into();
            record.finished = Some(neurogc_units::unix_now());
            execute::write_record(&out, &record)?;
            report(&record, per_config, &out, args)?;
            Ok(0)
        }
        Err(e) => {
            record.status = "failed".into();
            record.error = Some(format!("{e:#}"));
            record.finished = Some(neurogc_units::unix_now());
            let _ = execute::write_record(&out, &record);
            Err(e)
        }
    }
}

/// A configuration as swept: its name (in the report, the record and its runs' folders) and the
/// step policy its runs are given (the same but for `--aa`'s copy of the baseline).
struct Swept {
    name: String,
    policy: String,
}

/// Per configuration (in the swept order): its runs' metrics in round order, and every row's
/// action (for the idle notes).
type PerConfig = Vec<(Vec<RunMetrics>, Vec<String>)>;

fn sweep(
    args: &SweepArgs,
    swept: &[Swept],
    out: &std::path::Path,
    cmd: &str,
    record: &mut SweepRecord,
) -> Result<PerConfig> {
    let mut per: PerConfig = vec![(Vec::new(), Vec::new()); swept.len()];
    let total = swept.len() * args.repeats as usize;
    let hint = hint(args.step_function.as_deref());
    for round in 1..=args.repeats {
        for i in execute::order(swept.len(), round) {
            let index = record.runs.len() + 1;
            let Swept {
                name: config,
                policy,
            } = &swept[i];
            let rel = format!("runs/{index:02}-{}-r{round}", neurogc_units::slug(config));
            let dir = out.join(&rel);
            eprint!(
                "[{index:>2}/{total}] round {round}/{}  {config:<20} ",
                args.repeats
            );
            let done = execute::run_once(&RunSpec {
                command: &args.command,
                policy,
                dir: &dir,
                step_function: args.step_function.as_deref(),
            })?;
            let what = format!("`{cmd}` under {config} (run {index}, round {round})");
            let log = format!("{}/{}", dir.display(), execute::OUTPUT_LOG);
            let mut entry = RunEntry {
                index,
                config: config.clone(),
                round,
                dir: rel.clone(),
                exit_code: done.exit_code,
                signal: done.signal,
                wall_s: done.wall_s,
                peak_rss_bytes: done.peak_rss_bytes,
                steps: 0,
            };
            if done.exit_code != Some(0) {
                eprintln!("failed");
                record.runs.push(entry);
                let how = match (done.exit_code, done.signal) {
                    (Some(c), _) => format!("exited with {c}"),
                    (None, Some(s)) => format!("was killed by signal {s}"),
                    _ => "ended abnormally".into(),
                };
                bail!(
                    "{what} {how}; its output is {log}:\n{}",
                    execute::tail(&dir.join(execute::OUTPUT_LOG), 15)
                );
            }
            let shown_dir = format!("{}/{rel}", out.display());
            let steps =
                execute::read_record(&dir, &shown_dir, policy, &what, &hint).inspect_err(|_| {
                    eprintln!("no steps");
                });
            let steps = match steps {
                Ok(s) => s,
                Err(e) => {
                    record.runs.push(entry);
                    return Err(e);
                }
            };
            for w in &steps.warnings {
                eprintln!("warning: {w}");
            }
            entry.steps = steps.rows.len();
            let metrics = RunMetrics::from_rows(&steps.rows, args.skip_steps, done.peak_rss_bytes)
                .with_context(|| format!("{what}: {rel}/steps.csv"))?;
            eprintln!(
                "{:>6.1} s  {:>4} steps  mean {:>9}  p99 {:>9}  peak RSS {}",
                done.wall_s,
                steps.rows.len(),
                fmt_ms(metrics.mean_ms),
                fmt_ms(metrics.p99_ms),
                metrics.peak_rss.map_or("n/a".into(), fmt_bytes)
            );
            per[i].0.push(metrics);
            per[i].1.extend(steps.rows.into_iter().map(|r| r.action));
            record.runs.push(entry);
            execute::write_record(out, record)?;
        }
    }
    Ok(per)
}

fn report(
    record: &SweepRecord,
    per: PerConfig,
    out: &std::path::Path,
    args: &SweepArgs,
) -> Result<()> {
    let cfg = BootstrapConfig::default();
    let mut actions = Vec::new();
    let mut stats = Vec::new();
    for (name, (runs, acts)) in record.configs.iter().zip(per) {
        stats.push(ConfigStats::new(name, runs, &cfg)?);
        actions.push(acts);
    }
    let aa = record
        .aa
        .as_ref()
        .and_then(|n| record.configs.iter().position(|c| c == n));
    let a = Analysis::new(stats, aa, args.rss_bound, &cfg)?;
    let skipped = report::chart(&a, out);
    let notes = report::idle_notes(&a, &actions);
    let md = report::markdown(record, &a, skipped.as_deref(), &notes);
    let readme = out.join(report::README);
    std::fs::write(&readme, md).with_context(|| format!("cannot write {}", readme.display()))?;
    let summary = out.join(report::SUMMARY_JSON);
    let json = serde_json::to_string_pretty(&report::summary(&a))?;
    std::fs::write(&summary, json + "\n")
        .with_context(|| format!("cannot write {}", summary.display()))?;
    println!();
    for l in report::summary_lines(&a) {
        println!("{l}");
    }
    for n in &notes {
        println!("note: {n}");
    }
    if let Some(why) = &skipped {
        eprintln!("{why}");
    }
    println!("\nreport:   {}", readme.display());
    Ok(())
}
