//! A run in progress: its directory, the app, the dashboard, and how trials are run. One trial is
//! one server lifetime; trials started together share one load generator (side by side).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_dashboard::Background;

use neurogc_load::Shape;
use neurogc_record::{
    files, AutoRate, LoadInfo, Mode, Pinning, RateSource, RunDir, RunInfo, RunKind, RunStatus,
    Trial, TrialStatus,
};
use neurogc_rng::Rng;
use neurogc_units::unix_now;

use crate::app::{free_port, log_tail, App, Launch, Server};
use crate::args::{AppArgs, DashboardOpts, LoadOpts, OutputArgs};
use crate::loader::{self, LoadRun, LoadSettings};
use crate::policies::Policy;
use crate::proc;
use crate::progress::{Eta, Progress};
use crate::stream::{self, Streamer};
use crate::system;

/// The live dashboard this run streams to, if any.
#[derive(Default)]
pub struct Dashboard {
    background: Option<Background>,
    addr: Option<SocketAddr>,
    streamer: Option<Streamer>,
}

impl Dashboard {
    /// `--dashboard` starts one unless one is already running on the port; without it, a running
    /// one is used if there is one; `--no-dashboard` streams nowhere.
    pub fn connect(opts: &DashboardOpts) -> Result<Dashboard> {
        if opts.no_dashboard {
            return Ok(Dashboard::default());
        }
        let addr = opts.addr();
        if stream::dashboard_at(addr) {
            eprintln!("neurogc: streaming samples to the dashboard at http://{addr}");
            return Ok(Dashboard {
                addr: Some(addr),
                ..Dashboard::default()
            });
        }
        if !opts.dashboard {
            return Ok(Dashboard::default());
        }
        let background = Background::start(neurogc_dashboard::server::Config {
            port: opts.dashboard_port,
            ..Default::default()
        })
        .map_err(|e| anyhow::anyhow!("--dashboard: cannot start the dashboard: {e:#}"))?;
        let addr = background.addr();
        eprintln!("neurogc: live dashboard at http://{addr}");
        Ok(Dashboard {
            background: Some(background),
            addr: Some(addr),
            streamer: None,
        })
    }

    pub fn url(&self) -> Option<String> {
        self.addr.map(|a| format!("http://{a}"))
    }

    /// Streams the samples appended to `samples` as the server `server`.
    pub fn watch(&mut self, server: &str, samples: &Path) {
        if let Some(addr) = self.addr {
            self.streamer
                .get_or_insert_with(|| Streamer::start(addr))
                .add(server, samples);
        }
    }

    /// Sends what is left; a dashboard this run started keeps serving until dropped.
    pub fn flush(&mut self) {
        if let Some(s) = self.streamer.take() {
            s.finish();
        }
    }

    pub fn started_here(&self) -> bool {
        self.background.is_some()
    }
}

/// How every server of the run is started and loaded.
pub struct Session {
    pub run: RunDir,
    pub app: App,
    pub health: String,
    pub startup_timeout: Duration,
    pub interval_s: f64,
    /// What every load generator run shares (tasks, timeout, seed, turns).
    pub load: LoadSettings,
    /// CPUs for the server(s) and for the load generator when trials run one at a time or take
    /// turns; empty when unpinned.
    pub placement: Placement,
    /// `--mode turns`: servers warmed up alone and stopped outside their turns.
    pub stop_idle: bool,
    pub dashboard: Dashboard,
    /// The whole run's time left, shown on the progress line (the command plans it).
    pub eta: Eta,
    /// A trial with more failed requests than this share fails the run (`--max-error-rate`).
    pub max_error_rate: f64,
    /// What the load requests, for a failure's message (`GET /, the default for --cmd`).
    pub requests: String,
}

/// Which CPUs the servers and the load generator run on (empty: anywhere).
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pub server: Vec<usize>,
    pub load: Vec<usize>,
}

/// What a run is, for [`Session::open`].
pub struct RunSpec<'a> {
    pub kind: RunKind,
    pub app: &'a AppArgs,
    pub load: &'a LoadOpts,
    pub output: &'a OutputArgs,
    pub pin: bool,
    pub mode: Mode,
    /// Servers run together take turns under the load, slices this long (`--mode alternating`
    /// and `turns`).
    pub alternate: Option<Duration>,
    /// Servers run together start and take turns in an order shuffled from this seed.
    pub shuffle: Option<u64>,
    /// A throwaway server is started and warmed up before the scored ones (`--primer`).
    pub primer: bool,
    pub repeat: u32,
    pub warmup: Duration,
    pub duration: Duration,
    pub policies: &'a [Policy],
}

/// The load, warm-up and measured time of a group of trials run together.
#[derive(Clone, Copy, Debug)]
pub struct TrialPlan<'a> {
    pub shape: &'a Shape,
    pub warmup: Duration,
    pub duration: Duration,
}

/// What became of a group of trials run together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Interrupted,
}

struct Running {
    trial: Trial,
    server: Option<Server>,
}

impl Session {
    /// Checks the app, creates the run directory (run.json with the machine's description) and
    /// installs the Ctrl-C handler. The load is filled in by the caller once it is known.
    pub fn open(spec: &RunSpec<'_>, command: Vec<String>, dashboard: Dashboard) -> Result<Session> {
        let app = spec.app.app()?;
        proc::install_interrupt_handler();
        let cpus = proc::allowed_cpus();
        let pin = spec.pin && cpus.len() >= 2;
        let placement = if pin {
            Placement {
                server: vec![cpus[0]],
                load: vec![cpus[1]],
            }
        } else {
            Placement::default()
        };
        let python = match &app {
            App::Workload { python, .. } => Some(python.as_path()),
            App::Cmd { .. } => None,
        };
        let name = spec.output.name.as_deref().unwrap_or(spec.kind.as_str());
        let policies = spec.policies.iter().map(Policy::entry).collect();
        let info = RunInfo {
            command,
            mode: spec.mode,
            repeat: spec.repeat,
            warmup_s: spec.warmup.as_secs_f64(),
            duration_s: spec.duration.as_secs_f64(),
            interval_s: spec.app.interval.as_secs_f64(),
            pinning: pin.then(|| Pinning {
                server_cpus: placement.server.clone(),
                load_cpus: placement.load.clone(),
            }),
            system: system::read(python),
            shuffle: spec.shuffle,
            primer: primes(spec.primer, spec.mode, spec.policies.len()),
            ..RunInfo::new(spec.kind, name, app.describe(), policies)
        };
        // What the load requests: --tasks, else the --path list, else a bundled workload's own
        // task file; a --cmd service without either gets GET / and is told so.
        let paths = match (&spec.load.tasks, &app) {
            (None, App::Cmd { .. }) if spec.load.paths.is_empty() => vec!["/".to_string()],
            _ => spec.load.paths.clone(),
        };
        let path_tasks = (!paths.is_empty())
            .then(|| LoadOpts::paths_as_tasks(&paths))
            .transpose()?;
        let run = RunDir::create(&spec.output.runs_dir, info)?;
        eprintln!(
            "neurogc {}: run directory {}",
            spec.kind.as_str(),
            run.path.display()
        );
        let (tasks, requests) = match (&spec.load.tasks, path_tasks) {
            (Some(file), _) => (
                Some(file.clone()),
                format!("the tasks of {}", file.display()),
            ),
            (None, Some(text)) => {
                let file = run.path.join("tasks.toml");
                std::fs::write(&file, text)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
                let list = paths
                    .iter()
                    .map(|p| format!("GET {p}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if spec.load.paths.is_empty() {
                    eprintln!(
                        "neurogc {}: loading GET / only: --cmd without --path or --tasks (name your \
                         service's endpoints with --path /x, repeatable, or a --tasks file)",
                        spec.kind.as_str()
                    );
                    (Some(file), format!("{list} (the default for --cmd)"))
                } else {
                    eprintln!("neurogc {}: loading {list}", spec.kind.as_str());
                    (Some(file), list)
                }
            }
            (None, None) => match app.tasks() {
                Some(file) => (
                    Some(file.to_path_buf()),
                    format!("the workload's tasks ({})", file.display()),
                ),
                None => (None, "the seed's endpoints".into()),
            },
        };
        Ok(Session {
            run,
            app,
            health: spec.app.health_path(),
            startup_timeout: spec.app.startup_timeout,
            interval_s: spec.app.interval.as_secs_f64(),
            load: LoadSettings {
                tasks,
                timeout: spec.load.timeout,
                seed: spec.load.seed,
                cpus: placement.load.clone(),
                alternate: spec.alternate,
            },
            placement,
            stop_idle: spec.mode == Mode::Turns,
            dashboard,
            eta: Eta::default(),
            max_error_rate: spec.load.max_error_rate,
            requests,
        })
    }

    /// Records the load in run.json, with the slice length when servers take turns.
    pub fn set_load(
        &mut self,
        shape: Shape,
        rate_source: RateSource,
        auto: Option<AutoRate>,
    ) -> Result<()> {
        self.run.info.load = Some(LoadInfo {
            shape,
            rate_source,
            auto,
            alternate_s: self.load.alternate.map(|s| s.as_secs_f64()),
        });
        self.run.save()
    }

    /// Ends the run: run.json says how, and the dashboard gets the last samples.
    pub fn finish(&mut self, outcome: &Result<Outcome>) -> Result<()> {
        self.dashboard.flush();
        match outcome {
            Ok(Outcome::Complete) => self.run.finish(RunStatus::Complete, None),
            Ok(Outcome::Interrupted) => self.run.finish(RunStatus::Interrupted, None),
            Err(e) if proc::interrupted() => self
                .run
                .finish(RunStatus::Interrupted, Some(format!("{e:#}"))),
            Err(e) => self.run.finish(RunStatus::Failed, Some(format!("{e:#}"))),
        }
    }

    /// Starts `policy` on a free port with its files in `dir`; the caller stops it.
    pub fn start_server(&self, policy: &Policy, dir: &Path, cpus: &[usize]) -> Result<Server> {
        let port = free_port()?;
        self.app.start(
            &Launch {
                policy: &policy.spec,
                port,
                interval_s: self.interval_s,
                samples: &dir.join(files::SAMPLES),
                gc_events: &dir.join(files::GC_EVENTS),
                log: &dir.join(files::SERVER_LOG),
                cpus,
            },
            &self.health,
            self.startup_timeout,
        )
    }

    /// Runs the load generator (pinned to `load_cpus`) and waits for it, showing progress.
    pub fn drive(
        &self,
        run: &LoadRun<'_>,
        load_cpus: &[usize],
        progress: Option<&str>,
    ) -> Result<()> {
        let settings = LoadSettings {
            cpus: load_cpus.to_vec(),
            ..self.load.clone()
        };
        let group = loader::spawn(run, &settings)?;
        let mut progress = progress.map(|p| {
            Progress::new(
                p.to_string(),
                run.duration.as_secs_f64(),
                run.json_out,
                self.eta,
            )
        });
        let result = loader::wait(group, &run.log(), || {
            if let Some(p) = progress.as_mut() {
                p.tick()
            }
        });
        if let Some(p) = progress.as_mut() {
            p.done();
        }
        result
    }

    /// Runs `policies` (repetition `repetition`) at the same time under one load generator:
    /// start, warm up, measure, stop. One policy = a sequential trial, pinned if the session pins.
    /// Taking turns (`--mode alternating`), each server gets `warmup` and `duration` of load,
    /// so the trial lasts N times as long; the first to be loaded rotates with the repetition.
    pub fn run_together(
        &mut self,
        policies: &[&Policy],
        repetition: u32,
        plan: &TrialPlan<'_>,
        progress: &str,
    ) -> Result<Outcome> {
        let alone = policies.len() == 1;
        let placement = if alone || self.load.alternate.is_some() {
            self.placement.clone()
        } else {
            Placement::default()
        };
        let mut running = Vec::new();
        for p in policies {
            let trial = self.run.add_trial(&p.label, &p.spec, repetition)?;
            running.push(Running {
                trial,
                server: None,
            });
        }
        let result = self.measure(
            policies,
            repetition,
            &mut running,
            plan,
            progress,
            &placement,
        );
        // Whatever happened, every server is stopped (gracefully: the agent writes its last
        // rows) and every trial.json says how it ended.
        for r in &mut running {
            if let Some(mut server) = r.server.take() {
                server.group.stop(Duration::from_secs(10));
            }
        }
        match &result {
            Ok(outcome) => {
                let status = match outcome {
                    Outcome::Complete => TrialStatus::Complete,
                    Outcome::Interrupted => TrialStatus::Interrupted,
                };
                for r in &mut running {
                    if r.trial.info.status.in_progress() {
                        r.trial.info.status = status;
                    }
                }
            }
            Err(e) => {
                for r in &mut running {
                    if r.trial.info.status != TrialStatus::Failed {
                        r.trial.info.status = TrialStatus::Failed;
                        r.trial.info.error.get_or_insert_with(|| format!("{e:#}"));
                    }
                }
            }
        }
        self.collect_outputs(&mut running);
        // A measurement whose requests mostly failed measured the failures, not the service.
        let result = match result {
            Ok(Outcome::Complete) => self.check_errors(&mut running).map(|()| Outcome::Complete),
            other => other,
        };
        for r in &running {
            r.trial.save()?;
        }
        result
    }

    /// An error (recorded in the trial) if a trial had no request answered or more than
    /// `--max-error-rate` of them failed.
    fn check_errors(&self, running: &mut [Running]) -> Result<()> {
        let mut errors = Vec::new();
        for r in running.iter_mut() {
            let info = &mut r.trial.info;
            let Some(summary) = &info.load_summary else {
                continue;
            };
            let by_kind = summary
                .hosts
                .first()
                .and_then(|h| summary.total(h))
                .map(|t| t.failures_by_kind.clone())
                .unwrap_or_default();
            if let Some(why) = error_rate_problem(
                summary.requests,
                summary.failures,
                &by_kind,
                self.max_error_rate,
            ) {
                let msg = format!(
                    "the {} server: {why}; the load requested {}",
                    info.label, self.requests
                );
                info.status = TrialStatus::Failed;
                info.error = Some(msg.clone());
                errors.push(msg);
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        bail!(
            "{}{}",
            errors.join("; "),
            if matches!(self.app, App::Cmd { .. }) {
                " (name your service's endpoints with --path or --tasks)"
            } else {
                ""
            }
        )
    }

    fn measure(
        &mut self,
        policies: &[&Policy],
        repetition: u32,
        running: &mut [Running],
        plan: &TrialPlan<'_>,
        progress: &str,
        placement: &Placement,
    ) -> Result<Outcome> {
        // Taking turns with idle servers stopped: each server is started and warmed up alone,
        // then stopped until its first turn, so every warm-up sees its own traffic only.
        let warm_alone = self.stop_idle && policies.len() > 1;
        let order = server_order(policies.len(), repetition, self.run.info.shuffle);
        // Dropped (stopped) when this returns, however it returns.
        let _primer = if warm_alone && self.run.info.primer {
            let Some(server) = self.start_primer(repetition, plan, placement)? else {
                return Ok(Outcome::Interrupted);
            };
            Some(server)
        } else {
            None
        };
        for &i in &order {
            let (p, r) = (policies[i], &mut running[i]);
            self.start_trial_server(p, r, placement)?;
            if warm_alone {
                let url = r.server.as_ref().map(Server::url).expect("just started");
                let out = r.trial.dir.join("warmup.jsonl");
                self.warm_up(&[url], plan, plan.warmup, &out, placement)?;
                if proc::interrupted() {
                    return Ok(Outcome::Interrupted);
                }
                check_alive(std::slice::from_mut(r))?;
                r.server
                    .as_ref()
                    .expect("checked")
                    .group
                    .signal(libc::SIGSTOP);
            }
        }
        let servers: Vec<&Server> = order
            .iter()
            .filter_map(|&i| running[i].server.as_ref())
            .collect();
        let hosts: Vec<String> = servers.iter().map(|s| s.url()).collect();
        let groups: Vec<i32> = servers.iter().map(|s| s.group.pid() as i32).collect();
        let turns = match self.load.alternate {
            Some(_) if hosts.len() > 1 => hosts.len() as u32,
            _ => 1,
        };
        let (warmup, duration) = (plan.warmup * turns, plan.duration * turns);
        if !warm_alone && !warmup.is_zero() {
            let out = running[0].trial.dir.join("warmup.jsonl");
            self.warm_up(&hosts, plan, warmup, &out, placement)?;
            if proc::interrupted() {
                return Ok(Outcome::Interrupted);
            }
            check_alive(running)?;
        }
        let start = unix_now();
        for r in running.iter_mut() {
            r.trial.info.measure_start = Some(start);
            r.trial.info.status = TrialStatus::Measuring;
            r.trial.save()?;
        }
        let (json_out, hdr_out) = Self::load_outputs(running);
        let stop_idle = if self.stop_idle { &groups[..] } else { &[] };
        self.drive(
            &LoadRun {
                hosts: &hosts,
                shape: plan.shape,
                duration,
                json_out: &json_out,
                host_files: Some(&hdr_out),
                stop_idle,
                steady: false,
            },
            &placement.load,
            Some(progress),
        )?;
        let end = unix_now();
        for r in running.iter_mut() {
            r.trial.info.measure_end = Some(end);
        }
        check_alive(running)?;
        Ok(if proc::interrupted() {
            Outcome::Interrupted
        } else {
            Outcome::Complete
        })
    }

    /// `--primer`: a server under `default`, started and warmed up alone before the scored ones,
    /// then stopped (SIGSTOP) and held until they are done, its files in `primer-rN/`. `None`:
    /// interrupted during its warm-up.
    fn start_primer(
        &self,
        repetition: u32,
        plan: &TrialPlan<'_>,
        placement: &Placement,
    ) -> Result<Option<Server>> {
        let dir = self.run.path.join(format!("primer-r{repetition}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        let policy = Policy {
            label: "primer".into(),
            spec: "default".into(),
            model: None,
        };
        let mut server = self
            .start_server(&policy, &dir, &placement.server)
            .map_err(|e| e.context("the primer server (--primer)"))?;
        let out = dir.join("warmup.jsonl");
        self.warm_up(&[server.url()], plan, plan.warmup, &out, placement)
            .map_err(|e| e.context("the primer server's warm-up (--primer)"))?;
        if proc::interrupted() {
            return Ok(None);
        }
        if let Some(status) = server.group.try_wait() {
            bail!(
                "the primer server (--primer) exited ({status}) during its warm-up; its log {}:\n{}",
                dir.join(files::SERVER_LOG).display(),
                log_tail(&dir.join(files::SERVER_LOG), 15)
            );
        }
        server.group.signal(libc::SIGSTOP);
        let log = dir.join("warmup.log");
        if std::fs::metadata(&log).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(log);
        }
        Ok(Some(server))
    }

    /// Starts the server of `r`'s trial and records it (a failure is recorded too).
    fn start_trial_server(
        &mut self,
        p: &Policy,
        r: &mut Running,
        placement: &Placement,
    ) -> Result<()> {
        let info = &mut r.trial.info;
        let server = self
            .start_server(p, &r.trial.dir, &placement.server)
            .inspect_err(|e| {
                info.status = TrialStatus::Failed;
                info.error = Some(format!("{e:#}"));
            })?;
        info.port = server.port;
        info.pid = Some(server.group.pid());
        info.started = Some(server.started);
        info.ready = Some(server.ready);
        info.status = TrialStatus::WarmingUp;
        r.trial.save()?;
        self.dashboard.watch(&p.label, &r.trial.samples());
        r.server = Some(server);
        Ok(())
    }

    /// Load that is not measured (its rows are dropped), to bring servers to their steady state.
    fn warm_up(
        &self,
        hosts: &[String],
        plan: &TrialPlan<'_>,
        duration: Duration,
        out: &Path,
        placement: &Placement,
    ) -> Result<()> {
        if duration.is_zero() {
            return Ok(());
        }
        let run = LoadRun {
            hosts,
            shape: plan.shape,
            duration,
            json_out: out,
            host_files: None,
            stop_idle: &[],
            steady: false,
        };
        let result = self.drive(&run, &placement.load, None);
        let _ = std::fs::remove_file(out);
        result
    }

    /// Where the load generator writes: the trial's own files when alone, shared ones to split.
    fn load_outputs(running: &[Running]) -> (PathBuf, PathBuf) {
        let t = &running[0].trial;
        if running.len() == 1 {
            (t.load_jsonl(), t.dir.join(".hdr"))
        } else {
            (t.dir.join(".load-all.jsonl"), t.dir.join(".hdr"))
        }
    }

    /// Puts each server's load rows and histogram log in its trial folder and records the
    /// summaries. Best effort: a trial that never got load has nothing to move.
    fn collect_outputs(&self, running: &mut [Running]) {
        let (json_out, hdr_dir) = Self::load_outputs(running);
        let hosts: Vec<loader::HostOutputs> = running
            .iter()
            .map(|r| loader::HostOutputs {
                host: format!("http://127.0.0.1:{}", r.trial.info.port),
                jsonl: r.trial.load_jsonl(),
                hlog: r.trial.hlog(),
                requests: r.trial.requests_csv(),
            })
            .collect();
        let moved = if running.len() == 1 {
            loader::move_host_files(&hdr_dir, &hosts[0])
        } else if json_out.exists() {
            let r = loader::split_by_host(&json_out, &hdr_dir, &hosts);
            let _ = std::fs::remove_file(&json_out);
            let _ = std::fs::remove_file(json_out.with_extension("log"));
            r
        } else {
            Ok(())
        };
        if let Err(e) = moved {
            eprintln!("neurogc: {e:#}");
        }
        let _ = std::fs::remove_dir_all(&hdr_dir);
        // The load generator's logs only matter when it had something to say.
        for r in running.iter() {
            for log in ["load.log", "warmup.log"] {
                let path = r.trial.dir.join(log);
                if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        for r in running.iter_mut() {
            if let Ok(out) = loader::read_output(&r.trial.load_jsonl()) {
                r.trial.info.load_summary = out.summary;
            }
        }
    }
}

/// Why a measurement of `requests` requests, `failures` of them failed (`by_kind`: `http_404`,
/// `connect`, … counts), does not count: none answered, or more than `max` failed.
pub fn error_rate_problem(
    requests: u64,
    failures: u64,
    by_kind: &std::collections::BTreeMap<String, u64>,
    max: f64,
) -> Option<String> {
    if requests == 0 {
        return Some("no request was answered during the measurement".into());
    }
    let share = failures as f64 / requests as f64;
    if share <= max {
        return None;
    }
    let mut kinds: Vec<(&String, &u64)> = by_kind.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} × {n}")).collect();
    Some(format!(
        "{failures} of {requests} requests failed ({:.1} %, above --max-error-rate {:.1} %){}",
        share * 100.0,
        max * 100.0,
        if kinds.is_empty() {
            String::new()
        } else {
            format!(": {}", kinds.join(", "))
        }
    ))
}

/// An error (recorded in the trial) if a server exited during the trial.
fn check_alive(running: &mut [Running]) -> Result<()> {
    for r in running.iter_mut() {
        if let Some(server) = r.server.as_mut() {
            if let Some(status) = server.group.try_wait() {
                let log = r.trial.server_log();
                let msg = format!(
                    "the {} server exited ({status}) during the trial; its log {}:\n{}",
                    r.trial.info.label,
                    log.display(),
                    log_tail(&log, 15)
                );
                r.trial.info.status = TrialStatus::Failed;
                r.trial.info.error = Some(msg.clone());
                bail!(msg);
            }
        }
    }
    Ok(())
}

/// Whether `--primer` starts a throwaway server before the scored ones: where more than one
/// server takes turns with the idle ones stopped (`--mode turns`), each warmed up alone.
pub fn primes(primer: bool, mode: Mode, servers: usize) -> bool {
    primer && mode == Mode::Turns && servers > 1
}

/// The order in which `n` servers run together start and take their turns in repetition
/// `repetition` (from 1): as listed, rotated by one each repetition, or shuffled from a seed.
fn server_order(n: usize, repetition: u32, shuffle: Option<u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    match shuffle {
        Some(seed) => Rng::derive(seed, u64::from(repetition)).shuffle(&mut order),
        None if n > 0 => order.rotate_left((repetition as usize).saturating_sub(1) % n),
        None => {}
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_start_as_listed_rotated_or_shuffled_from_a_seed() {
        assert_eq!(server_order(4, 1, None), [0, 1, 2, 3]);
        assert_eq!(server_order(4, 2, None), [1, 2, 3, 0]);
        let first = server_order(13, 1, Some(7));
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..13).collect::<Vec<_>>(), "a permutation");
        assert_ne!(first, sorted, "shuffled");
        assert_eq!(
            server_order(13, 1, Some(7)),
            first,
            "the same seed, the same order"
        );
        assert_ne!(
            server_order(13, 1, Some(8)),
            first,
            "another seed, another order"
        );
        assert_ne!(
            server_order(13, 2, Some(7)),
            first,
            "each repetition its own"
        );
        assert!(server_order(0, 1, None).is_empty());
    }

    #[test]
    fn mostly_failed_measurements_do_not_count() {
        let kinds = |k: &[(&str, u64)]| k.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        // The run: 80 of 80 requests 404.
        let why = error_rate_problem(80, 80, &kinds(&[("http_404", 80)]), 0.05).unwrap();
        assert_eq!(
            why,
            "80 of 80 requests failed (100.0 %, above --max-error-rate 5.0 %): http_404 × 80"
        );
        let why = error_rate_problem(100, 6, &kinds(&[("connect", 1), ("http_500", 5)]), 0.05);
        assert!(why.unwrap().ends_with(": http_500 × 5, connect × 1"));
        assert_eq!(
            error_rate_problem(100, 5, &kinds(&[("timeout", 5)]), 0.05),
            None
        );
        assert_eq!(error_rate_problem(100, 0, &kinds(&[]), 0.0), None);
        assert!(error_rate_problem(0, 0, &kinds(&[]), 0.05)
            .unwrap()
            .contains("no request"));
    }
}
