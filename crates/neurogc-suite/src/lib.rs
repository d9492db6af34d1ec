//! `neurogc suite`: every bundled workload × GC policy, measured on the same machine minutes,
//! and the scoreboard that says, per workload, which fixed policy is best and how far every
//! policy is from it and from the GC-off bound.
//!
//! When the policies include a model trained per workload (`neurogc-seed`, `neurogc-own`,
//! `neurogc-loo`), every workload first gets an explore run: its capacity found on a GC-off
//! and a default server from throughput and queueing (`--rate auto`), then its service under
//! `explore` (CPython's collector plus collections at random moments) at the suite's share of
//! that capacity, every request and collection recorded. Then per workload: its models trained
//! (the seed's LSTM and the scheduler's on its own explore run, the scheduler's on the other
//! workloads' only) and one bench run in `--mode turns` at that same rate (once a probe has
//! checked that the capacity still holds; else it is searched again): every policy's
//! server started and warmed up alone, then rounds in which each policy holds the load for one
//! turn while the others are stopped (so no policy gets idle time its traffic would not give
//! it). Without such policies the bench searches the capacity itself.
//! Rounds pair the policies: the scoreboard compares them round by round. Layout:
//! [`plan`] flags and defaults · this module the driver · the scoreboard itself is in
//! `neurogc-report` (`scoreboard`).

pub mod plan;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use neurogc_bench::app::{find_python, workloads, Workload};
use neurogc_bench::args::flags_with_defaults;
use neurogc_bench::session::{primes, Dashboard, Outcome};
use neurogc_bench::{bench, proc, BenchArgs};
use neurogc_record::{
    files, write_json_atomic, Mode, RateSearch, RunRecord, RunStatus, SuiteInfo, SuiteWorkload,
};
use neurogc_report::scoreboard::{self, WorkloadRun};
use neurogc_report::{aggregate, floors, Design, RunData};

pub use plan::{Plan, SuiteArgs};

/// What a finished (or interrupted) suite wrote.
pub struct SuiteDone {
    pub dir: PathBuf,
    pub readme: PathBuf,
    pub outcome: Outcome,
    /// The workloads that failed (suite.json says why), by name.
    pub failed: Vec<String>,
}

impl SuiteDone {
    /// What a failed workload makes of the suite, for stderr: the scoreboard holds what did
    /// finish, and a script must not take it as whole. `None` when none failed or the suite was
    /// interrupted (that says it already).
    pub fn failure(&self) -> Option<String> {
        (!self.failed.is_empty() && self.outcome != Outcome::Interrupted).then(|| {
            format!(
                "neurogc suite: {} of the workloads failed: {} (their errors in {})",
                self.failed.len(),
                self.failed.join(", "),
                self.dir.join("suite.json").display()
            )
        })
    }

    /// The command's exit status: 130 interrupted, 1 when a workload failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.failure().is_some() {
            1
        } else {
            neurogc_bench::exit_code(self.outcome)
        }
    }
}

/// The bundled workloads to run, in the suite's order; an unknown name is an error naming the
/// known ones.
fn select(all: Vec<Workload>, names: &[String]) -> Result<Vec<Workload>> {
    if names.is_empty() {
        return Ok(all);
    }
    let known: Vec<String> = all.iter().map(|w| w.name.clone()).collect();
    names
        .iter()
        .map(|n| {
            all.iter().find(|w| &w.name == n).cloned().ok_or_else(|| {
                anyhow::anyhow!(
                    "--workloads: unknown workload {n:?}; known: {}",
                    known.join(", ")
                )
            })
        })
        .collect()
}

/// Seconds a workload is expected to take, for the ETA (start-up ~2 s per server).
fn estimate_s(plan: &Plan, policies: usize) -> f64 {
    let n = policies as f64;
    let capacity = if plan.rate.is_some() {
        0.0
    } else {
        plan.rate_policies.len() as f64
            * ((5 + plan.rate_refine) as f64 * plan.probe.as_secs_f64()
                + plan.probe_warmup.as_secs_f64()
                + 6.0)
    };
    let trained = plan::PER_WORKLOAD.iter().filter(|t| plan.has(t)).count() as f64;
    let seed = if plan.trains_models() {
        // The explore run, the models, and the bench's check of the explore run's capacity
        // (a server, its warm-up and one probe).
        let recheck = if plan.rate.is_some() {
            0.0
        } else {
            2.0 + plan.probe_warmup.as_secs_f64() + plan.probe.as_secs_f64()
        };
        plan.collect.as_secs_f64() + plan.warmup.as_secs_f64() + 4.0 + trained * TRAIN_S + recheck
    } else {
        0.0
    };
    capacity
        + seed
        // A primer (`--primer`) starts and warms up before the policies' servers.
        + (n + f64::from(u8::from(primes(true, Mode::Turns, policies))))
            * (2.0 + plan.warmup.as_secs_f64())
        + plan.rounds as f64 * n * plan.turn.as_secs_f64()
}

/// Runs the suite. Ctrl-C stops it and keeps (and scores) what finished.
pub fn run(args: &SuiteArgs) -> Result<SuiteDone> {
    let python = find_python(args.python.as_deref());
    if let Some(dir) = &args.rescore {
        let path = dir.join(neurogc_record::files::SUITE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "--rescore {}: cannot read {}",
                dir.display(),
                path.display()
            )
        })?;
        let info: SuiteInfo = serde_json::from_str(&text)
            .with_context(|| format!("--rescore: {} is malformed", path.display()))?;
        let readme = write_scoreboard(dir, &info, &workloads(&python)?)?;
        let outcome = match info.status {
            RunStatus::Interrupted => Outcome::Interrupted,
            _ => Outcome::Complete,
        };
        // Rescoring is done once the scoreboard is written, whatever failed when it ran.
        return Ok(SuiteDone {
            dir: dir.clone(),
            readme,
            outcome,
            failed: Vec::new(),
        });
    }
    let plan = Plan::from_args(args)?;
    let chosen = select(workloads(&python)?, &args.workloads)?;
    proc::install_interrupt_handler();
    std::fs::create_dir_all(&args.runs_dir)
        .with_context(|| format!("cannot create {}", args.runs_dir.display()))?;
    let created = neurogc_units::unix_now();
    let dir = unique_dir(
        &args.runs_dir,
        &format!(
            "{}-{}",
            neurogc_units::utc_stamp(created),
            neurogc_units::slug(&args.name)
        ),
    )?;
    let mut info = SuiteInfo {
        schema: neurogc_record::SCHEMA,
        name: args.name.clone(),
        command: std::env::args().collect(),
        created,
        finished: None,
        status: RunStatus::Running,
        error: None,
        quick: args.quick,
        rounds: plan.rounds,
        turn_s: plan.turn.as_secs_f64(),
        warmup_s: plan.warmup.as_secs_f64(),
        fraction: plan.fraction,
        rate_policies: plan.rate_policies.clone(),
        rate: plan.rate,
        policies: plan.policies.clone(),
        workloads: Vec::new(),
        system: neurogc_bench::system::read(Some(&python)),
    };
    let save = |info: &SuiteInfo| write_json_atomic(&dir.join(files::SUITE), info);
    save(&info)?;
    eprintln!("neurogc suite: {}", dir.display());
    let per_workload = estimate_s(&plan, plan.policies.len());
    let started = Instant::now();
    let mut outcome = Outcome::Complete;
    info.workloads = chosen
        .iter()
        .map(|w| SuiteWorkload {
            name: w.name.clone(),
            run: None,
            collect: None,
            status: RunStatus::Running,
            error: None,
        })
        .collect();
    save(&info)?;
    // The ETA learns from the workloads done so far.
    let eta = |i: usize, phase_done: f64| {
        let done = started.elapsed().as_secs_f64();
        let per = if i == 0 {
            per_workload
        } else {
            (done - phase_done) / i as f64
        };
        (done, per)
    };
    let mut explored: Vec<Option<Explored>> = chosen.iter().map(|_| None).collect();
    if plan.trains_models() {
        for (i, w) in chosen.iter().enumerate() {
            eprintln!(
                "== suite explore [{}/{}] {} · capacity, then {} under explore · elapsed {}",
                i + 1,
                chosen.len(),
                w.name,
                neurogc_report::format::seconds(plan.collect.as_secs_f64()),
                minutes(started.elapsed().as_secs_f64()),
            );
            let after = Duration::from_secs_f64(per_workload * (chosen.len() - i) as f64);
            let entry = &mut info.workloads[i];
            match explore(&dir, &python, w, &plan, after) {
                Ok(x) => {
                    entry.collect = Some(relative(&dir, &x.run_dir));
                    explored[i] = Some(x);
                }
                Err(e) => {
                    eprintln!("neurogc suite: {}: {e:#}", w.name);
                    entry.status = failed_or_interrupted();
                    entry.error = Some(format!("explore run: {e:#}"));
                }
            }
            save(&info)?;
            if proc::interrupted() {
                outcome = Outcome::Interrupted;
                break;
            }
        }
    }
    let benches_from = started.elapsed().as_secs_f64();
    for (i, w) in chosen.iter().enumerate() {
        if outcome == Outcome::Interrupted {
            break;
        }
        if info.workloads[i].status != RunStatus::Running {
            continue;
        }
        let (done, per) = eta(i, benches_from);
        eprintln!(
            "== suite [{}/{}] {} · {} policies · elapsed {} · ETA {}",
            i + 1,
            chosen.len(),
            w.name,
            plan.policies.len(),
            minutes(done),
            minutes(per * (chosen.len() - i) as f64)
        );
        // The workloads after this one, for the whole suite's ETA on every progress line.
        let after = Duration::from_secs_f64(per * (chosen.len() - i - 1) as f64);
        let others: Vec<&Path> = explored
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, x)| x.as_ref().map(|x| x.run_dir.as_path()))
            .collect();
        let mut entry = info.workloads[i].clone();
        let result = run_workload(
            &dir,
            &python,
            w,
            &plan,
            after,
            explored[i].as_ref(),
            &others,
            &mut entry,
        );
        match result {
            Ok(o) => {
                entry.status = match o {
                    Outcome::Complete => RunStatus::Complete,
                    Outcome::Interrupted => RunStatus::Interrupted,
                };
                outcome = o;
            }
            Err(e) => {
                eprintln!("neurogc suite: {}: {e:#}", w.name);
                entry.status = failed_or_interrupted();
                entry.error = Some(format!("{e:#}"));
            }
        }
        info.workloads[i] = entry;
        save(&info)?;
        if proc::interrupted() {
            outcome = Outcome::Interrupted;
            break;
        }
    }
    // Workloads never reached stay out of the record.
    info.workloads
        .retain(|w| !(w.status == RunStatus::Running && w.run.is_none() && w.collect.is_none()));
    info.finished = Some(neurogc_units::unix_now());
    info.status = match outcome {
        Outcome::Complete
            if info
                .workloads
                .iter()
                .all(|w| w.status == RunStatus::Complete) =>
        {
            RunStatus::Complete
        }
        Outcome::Complete => RunStatus::Failed,
        Outcome::Interrupted => RunStatus::Interrupted,
    };
    save(&info)?;
    let readme = write_scoreboard(&dir, &info, &chosen)?;
    eprintln!(
        "neurogc suite: done in {}; scoreboard {}",
        minutes(started.elapsed().as_secs_f64()),
        readme.display()
    );
    let failed = info
        .workloads
        .iter()
        .filter(|w| w.status == RunStatus::Failed)
        .map(|w| w.name.clone())
        .collect();
    Ok(SuiteDone {
        dir,
        readme,
        outcome,
        failed,
    })
}

fn minutes(s: f64) -> String {
    format!(
        "{}m{:02}s",
        (s / 60.0).floor(),
        (s % 60.0).round() as u32 % 60
    )
}

fn unique_dir(parent: &Path, base: &str) -> Result<PathBuf> {
    let mut path = parent.join(base);
    let mut n = 2;
    while path.exists() {
        path = parent.join(format!("{base}-{n}"));
        n += 1;
    }
    std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(path)
}

/// The path of `p` relative to the suite's directory, for suite.json.
fn relative(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

fn failed_or_interrupted() -> RunStatus {
    if proc::interrupted() {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    }
}

/// A workload's explore run: where it is, the capacity it found, its samples.
struct Explored {
    run_dir: PathBuf,
    /// The capacity it found (none with a fixed `--rate`).
    rate: Option<RateSearch>,
    samples: PathBuf,
}

/// The workload's capacity (as its bench would search it), then its service under `explore`
/// at the suite's share of it, for `plan.collect`: the data every model of it is trained on.
fn explore(
    dir: &Path,
    python: &Path,
    w: &Workload,
    plan: &Plan,
    after: Duration,
) -> Result<Explored> {
    let mut b = workload_args(dir, python, w, plan)?;
    b.then = after;
    b.policies = vec!["explore".into()];
    b.output.name = Some(format!("{}-explore", w.name));
    b.mode = Some(Mode::Sequential);
    b.duration = plan.collect;
    // Samples twice a second, as the seed's collect runs took them.
    b.app.interval = Duration::from_millis(500);
    let done = bench::execute(&b, std::env::args().collect(), Dashboard::default())?;
    if done.outcome == Outcome::Interrupted {
        bail!("interrupted while exploring");
    }
    let record = RunRecord::open(&done.run_dir)?;
    let rate = record.rate_search.clone();
    if plan.rate.is_none() && rate.is_none() {
        bail!("the explore run recorded no capacity (rate-search.json)");
    }
    let samples = record
        .trials
        .first()
        .context("the explore run has no trial")?
        .file(files::SAMPLES);
    Ok(Explored {
        run_dir: done.run_dir,
        rate,
        samples,
    })
}

/// One workload: its models trained, then the turns bench (at the explore run's rate, checked
/// again first).
#[allow(clippy::too_many_arguments)]
fn run_workload(
    dir: &Path,
    python: &Path,
    w: &Workload,
    plan: &Plan,
    after: Duration,
    explored: Option<&Explored>,
    others: &[&Path],
    entry: &mut SuiteWorkload,
) -> Result<Outcome> {
    let mut b = bench_args(dir, python, w, plan)?;
    b.then = after;
    b.known_rate = explored.and_then(|x| x.rate.clone());
    let mut policies: Vec<String> = Vec::new();
    for p in &plan.policies {
        let Some(token) = plan::PER_WORKLOAD.iter().find(|t| *t == p) else {
            // The bench labels a spec by its text, or takes `LABEL=SPEC` as given.
            policies.push(p.clone());
            continue;
        };
        let x = explored.context("no explore run to train its models on")?;
        let model = match *token {
            plan::SEED_PER_WORKLOAD => train_seed_model(&x.samples, &x.run_dir, plan)?,
            plan::SCHEDULER_OWN => {
                train_scheduler_model(&[&x.run_dir], &x.run_dir.join("scheduler-own"))?
            }
            _ => train_scheduler_model(others, &x.run_dir.join("scheduler-loo"))?,
        };
        let spec = if *token == plan::SEED_PER_WORKLOAD {
            format!("neurogc-seed:{}", model.display())
        } else {
            format!("neurogc:{}", model.display())
        };
        policies.push(format!("{token}={spec}"));
        if proc::interrupted() {
            return Ok(Outcome::Interrupted);
        }
    }
    b.policies = policies;
    let done = bench::execute(&b, std::env::args().collect(), Dashboard::default())?;
    entry.run = Some(relative(dir, &done.run_dir));
    if let Err(e) = neurogc_report::write_report(&done.run_dir) {
        eprintln!("neurogc suite: {}: no report: {e:#}", w.name);
    }
    Ok(done.outcome)
}

/// Seconds a model takes to train, for the ETA.
const TRAIN_S: f64 = 15.0;

/// The workload's turns bench, its policies still to be filled in.
fn bench_args(dir: &Path, python: &Path, w: &Workload, plan: &Plan) -> Result<BenchArgs> {
    let mut b = workload_args(dir, python, w, plan)?;
    b.policies = plan.policies.clone();
    b.mode = Some(Mode::Turns);
    // Each workload its own order of servers, the same from run to run: in one fixed order the
    // server started first, `default`, collected its whole heap 1.05-1.8× slower than its copy
    // started last (`default-aa`), on every workload of the suite at cde2bac.
    b.shuffle = Some(order_seed(&w.name));
    // Shuffled, the first place still cost whoever took it (`neurogc-loo` on seed, 2.90× the
    // same policy started later, at 67b1e03): a throwaway server takes the first start. (It
    // did not take bursty's cost from its first server at 6136cdc: docs/suite.md.)
    b.primer = true;
    b.slice = Some(plan.turn);
    b.duration = plan.turn * plan.rounds;
    Ok(b)
}

/// What every run of a workload shares, its explore run and its turns bench: the workload,
/// its warm-up, the rate search, where the run goes. Each adds its own design (a design's
/// flags, such as the turns' order of servers, are errors in another).
fn workload_args(dir: &Path, python: &Path, w: &Workload, plan: &Plan) -> Result<BenchArgs> {
    let mut b: BenchArgs = flags_with_defaults(&["--policy", "default"])?;
    b.app.workload = Some(w.name.clone());
    b.app.python = Some(python.to_path_buf());
    b.output.runs_dir = dir.to_path_buf();
    b.output.name = Some(w.name.clone());
    b.repeat = 1;
    b.warmup = plan.warmup;
    b.load.rate = Some(plan.rate.map_or("auto".into(), |r| r.to_string()));
    b.rate_fraction = plan.fraction;
    b.rate_start = plan.rate_start;
    b.rate_policies = plan.rate_policies.clone();
    b.probe_time = plan.probe;
    b.rate_refine = plan.rate_refine;
    b.rate_warmup = Some(plan.probe_warmup);
    b.no_report = true;
    b.dashboard.no_dashboard = true;
    Ok(b)
}

/// The seed of a workload's order of servers: its name's FNV-1a hash.
fn order_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The seed's LSTM on the explore run's samples; returns the model directory.
fn train_seed_model(samples: &Path, run_dir: &Path, plan: &Plan) -> Result<PathBuf> {
    let model = run_dir.join("model");
    let mut t = neurogc_train::TrainArgs::new(vec![samples.to_path_buf()], model.clone());
    t.epochs = Some(plan.epochs);
    t.quiet = true;
    neurogc_train::train_model(&t).context("training the seed's model")?;
    Ok(model)
}

/// The scheduler's model on `runs`; returns the model directory.
fn train_scheduler_model(runs: &[&Path], out: &Path) -> Result<PathBuf> {
    if runs.is_empty() {
        bail!("no explore run to train the scheduler's model on");
    }
    let mut t = neurogc_train::TrainArgs::new(
        runs.iter().map(|p| p.to_path_buf()).collect(),
        out.to_path_buf(),
    );
    t.model = neurogc_train::Kind::Scheduler;
    t.quiet = true;
    let report = neurogc_train::train_scheduler(&t).context("training the scheduler's model")?;
    let m = &report.meta.quiet.metrics;
    eprintln!(
        "neurogc suite: scheduler model {}: held-out Brier {:.4} (survival estimate {:.4})",
        out.display(),
        m.val_brier.unwrap_or(f64::NAN),
        m.val_brier_survival.unwrap_or(f64::NAN)
    );
    Ok(out.to_path_buf())
}

/// Scores every workload that has a run and writes README.md, scoreboard.json and the heat map.
fn write_scoreboard(dir: &Path, info: &SuiteInfo, chosen: &[Workload]) -> Result<PathBuf> {
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    for entry in &info.workloads {
        let Some(rel) = &entry.run else {
            notes.push(format!(
                "- {}: no run ({}{})",
                entry.name,
                entry.status,
                entry
                    .error
                    .as_deref()
                    .map(|e| format!(": {}", e.lines().next().unwrap_or("")))
                    .unwrap_or_default()
            ));
            continue;
        };
        let run = match RunData::load(&dir.join(rel)) {
            Ok(r) => r,
            Err(e) => {
                notes.push(format!("- {}: its run cannot be read: {e:#}", entry.name));
                continue;
            }
        };
        let mut warnings = Vec::new();
        let floors = floors(None, Some(&Design::of(&run.info)), &mut warnings)?;
        let analysis = aggregate::analyse(&run, floors);
        let w = chosen.iter().find(|w| w.name == entry.name);
        runs.push(WorkloadRun {
            name: entry.name.clone(),
            story: w.map(|w| w.story.clone()).unwrap_or_default(),
            expects: w.map(|w| w.expects.clone()).unwrap_or_default(),
            run,
            analysis,
        });
    }
    let board = scoreboard::score(&runs);
    let heatmap = dir.join("heatmap.png");
    let heat = match scoreboard::heatmap(&board, &heatmap) {
        Ok(()) => Some("heatmap.png"),
        Err(e) => {
            notes.push(format!("- the heat map was not drawn: {e:#}"));
            None
        }
    };
    let mut header = String::new();
    let load = match info.rate {
        Some(r) => format!("every policy at a fixed {r} req/s (no capacity search)"),
        None => format!(
            "every policy at {} of the capacity found ({})",
            neurogc_report::format::pct_abs(info.fraction),
            match info.rate_policies.as_slice() {
                [one] => format!("{one}'s"),
                all => format!("the lowest of {}", all.join("'s, ") + "'s"),
            }
        ),
    };
    header.push_str(&format!(
        "Status **{}** · started {} · {} rounds of {} turns per policy, each server warmed up \
         alone for {} · {load}{}.\n\n",
        info.status,
        neurogc_units::utc_text(info.created),
        info.rounds,
        neurogc_report::format::seconds(info.turn_s),
        neurogc_report::format::seconds(info.warmup_s),
        if info.quick { " · `--quick`" } else { "" }
    ));
    header.push_str(&format!(
        "Command: `{}`  \nMachine: {} × {}, {}; Python {}; neurogc {}.\n\n",
        info.command.join(" "),
        info.system.cores.map_or("?".into(), |c| c.to_string()),
        info.system.cpu_model.as_deref().unwrap_or("?"),
        info.system.os.as_deref().unwrap_or("?"),
        info.system
            .python
            .as_deref()
            .and_then(|p| p.split_whitespace().next())
            .unwrap_or("?"),
        info.system.neurogc_version.as_deref().unwrap_or("?"),
    ));
    if !notes.is_empty() {
        header.push_str("Not scored:\n\n");
        for n in &notes {
            header.push_str(n);
            header.push('\n');
        }
        header.push('\n');
    }
    let md = scoreboard::markdown(&board, &header, heat);
    let readme = dir.join("README.md");
    std::fs::write(&readme, md).with_context(|| format!("cannot write {}", readme.display()))?;
    scoreboard::write_json(&board, &dir.join("scoreboard.json"))?;
    Ok(readme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_workload_fails_the_command_and_is_named() {
        let done = |outcome, failed: &[&str]| SuiteDone {
            dir: PathBuf::from("runs/x-suite"),
            readme: PathBuf::from("runs/x-suite/README.md"),
            outcome,
            failed: failed.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(done(Outcome::Complete, &[]).exit_code(), 0);
        assert_eq!(done(Outcome::Complete, &[]).failure(), None);
        let failed = done(Outcome::Complete, &["seed", "orm"]);
        assert_eq!(failed.exit_code(), 1);
        assert_eq!(
            failed.failure().as_deref(),
            Some(
                "neurogc suite: 2 of the workloads failed: seed, orm (their errors in \
                 runs/x-suite/suite.json)"
            )
        );
        // Interrupted says so itself, whatever failed before.
        assert_eq!(done(Outcome::Interrupted, &["seed"]).exit_code(), 130);
        assert_eq!(done(Outcome::Interrupted, &[]).exit_code(), 130);
    }
}
