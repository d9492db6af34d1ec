//! A run in progress: its directory, the app, the dashboard, and how trials are run. One trial is
//! one server lifetime; trials started together share one load generator (side by side).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_dashboard::Background;

use crate::app::{free_port, log_tail, App, Launch, Server};
use crate::args::{AppArgs, DashboardOpts, LoadOpts, OutputArgs};
use crate::loader::{self, LoadRun, Shape};
use crate::policies::Policy;
use crate::proc;
use crate::progress::Progress;
use crate::rundir::{unix_now, Pinning, RunDir, RunInfo, Trial, TrialInfo};
use crate::stream::{self, Streamer};
use crate::system::SystemInfo;

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
    pub tasks: Option<PathBuf>,
    pub request_timeout: Duration,
    pub seed: u64,
    /// CPUs for the server(s) and for the load generator when trials run one at a time or take turns.
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
    /// Servers run together take turns under the load in slices of this length, on the
    /// server CPU (`--mode alternating`); without it they are loaded at once, unpinned.
    pub alternate: Option<Duration>,
    pub dashboard: Dashboard,
}

/// What a run is, for [`Session::open`].
pub struct RunSpec<'a> {
    pub kind: &'a str,
    pub default_name: &'a str,
    pub app: &'a AppArgs,
    pub load: &'a LoadOpts,
    pub output: &'a OutputArgs,
    pub pin: bool,
    pub mode: &'a str,
    /// Servers run together take turns under the load, slices this long (`--mode alternating`).
    pub alternate: Option<Duration>,
    pub repeat: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub policies: &'a [Policy],
}

/// What became of a group of trials run together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Interrupted,
}

struct Running {
    trial: Trial,
    info: TrialInfo,
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
        let (server_cpus, load_cpus) = if pin {
            (vec![cpus[0]], vec![cpus[1]])
        } else {
            (Vec::new(), Vec::new())
        };
        let python = match &app {
            App::Demo { python, .. } => Some(python.as_path()),
            App::Cmd { .. } => None,
        };
        let info = RunInfo {
            schema: 1,
            kind: spec.kind.into(),
            name: spec
                .output
                .name
                .clone()
                .unwrap_or_else(|| spec.default_name.into()),
            command,
            created: unix_now(),
            finished: None,
            status: "running".into(),
            error: None,
            app: app.describe(),
            mode: spec.mode.into(),
            repeat: spec.repeat,
            warmup_s: spec.warmup.as_secs_f64(),
            duration_s: spec.duration.as_secs_f64(),
            interval_s: spec.app.interval,
            load: serde_json::Value::Null,
            policies: spec.policies.iter().map(Policy::entry).collect(),
            pinning: pin.then(|| Pinning {
                server_cpus: server_cpus.clone(),
                load_cpus: load_cpus.clone(),
            }),
            system: SystemInfo::read(python),
            trials: Vec::new(),
        };
        let run = RunDir::create(&spec.output.runs_dir, info)?;
        eprintln!(
            "neurogc {}: run directory {}",
            spec.kind,
            run.path.display()
        );
        Ok(Session {
            run,
            app,
            health: spec.app.health_path(),
            startup_timeout: spec.app.startup_timeout,
            interval_s: spec.app.interval,
            tasks: spec.load.tasks.clone(),
            request_timeout: spec.load.timeout,
            seed: spec.load.seed,
            server_cpus,
            load_cpus,
            alternate: spec.alternate,
            dashboard,
        })
    }

    /// Records the load in run.json, with the slice length when servers take turns.
    pub fn set_load(&mut self, mut load: serde_json::Value) -> Result<()> {
        if let Some(slice) = self.alternate {
            load["alternate_s"] = slice.as_secs_f64().into();
        }
        self.run.info.load = load;
        self.run.save()
    }

    /// Ends the run: run.json says how, and the dashboard gets the last samples.
    pub fn finish(&mut self, outcome: &Result<Outcome>) -> Result<()> {
        self.dashboard.flush();
        match outcome {
            Ok(Outcome::Complete) => self.run.finish("complete", None),
            Ok(Outcome::Interrupted) => self.run.finish("interrupted", None),
            Err(e) if proc::interrupted() => self.run.finish("interrupted", Some(format!("{e:#}"))),
            Err(e) => self.run.finish("failed", Some(format!("{e:#}"))),
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
                samples: &dir.join("samples.csv"),
                gc_events: &dir.join("gc-events.csv"),
                log: &dir.join("server.log"),
                cpus,
            },
            &self.health,
            self.startup_timeout,
        )
    }

    /// Runs the load generator against `hosts` and waits for it, showing progress.
    #[allow(clippy::too_many_arguments)]
    pub fn drive(
        &self,
        hosts: &[String],
        shape: &Shape,
        duration: Duration,
        json_out: &Path,
        hdr_out: Option<&Path>,
        log: &Path,
        cpus: &[usize],
        progress: Option<String>,
    ) -> Result<()> {
        let group = loader::spawn(&LoadRun {
            hosts,
            shape,
            duration,
            tasks: self.tasks.as_deref(),
            timeout: self.request_timeout,
            json_out,
            hdr_out,
            log,
            cpus,
            seed: self.seed,
            alternate: self.alternate,
        })?;
        let mut progress = progress.map(|p| Progress::new(p, duration.as_secs_f64(), json_out));
        let result = loader::wait(group, log, || {
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
    /// Taking turns ([`Session::alternate`]), each server gets `warmup` and `duration` of load,
    /// so the trial lasts N times as long; the first to be loaded rotates with the repetition.
    pub fn run_together(
        &mut self,
        policies: &[&Policy],
        repetition: usize,
        shape: &Shape,
        warmup: Duration,
        duration: Duration,
        progress: &str,
    ) -> Result<Outcome> {
        let alone = policies.len() == 1;
        let (server_cpus, load_cpus) = if alone || self.alternate.is_some() {
            (self.server_cpus.clone(), self.load_cpus.clone())
        } else {
            (Vec::new(), Vec::new())
        };
        let mut running = Vec::new();
        for p in policies {
            let trial = self.run.add_trial(&p.label, repetition)?;
            let info = TrialInfo {
                label: p.label.clone(),
                spec: p.spec.clone(),
                repetition,
                order: trial.order,
                port: 0,
                pid: None,
                started: None,
                ready: None,
                measure_start: None,
                measure_end: None,
                status: "starting".into(),
                error: None,
                load_summary: None,
            };
            trial.save(&info)?;
            running.push(Running {
                trial,
                info,
                server: None,
            });
        }
        let result = self.measure(
            policies,
            repetition,
            &mut running,
            shape,
            warmup,
            duration,
            progress,
            &server_cpus,
            &load_cpus,
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
                    Outcome::Complete => "complete",
                    Outcome::Interrupted => "interrupted",
                };
                for r in &mut running {
                    if r.info.status == "measuring"
                        || r.info.status == "warming up"
                        || r.info.status == "starting"
                    {
                        r.info.status = status.into();
                    }
                }
            }
            Err(e) => {
                for r in &mut running {
                    if r.info.status != "failed" {
                        r.info.status = "failed".into();
                        r.info.error.get_or_insert_with(|| format!("{e:#}"));
                    }
                }
            }
        }
        self.collect_outputs(&mut running, repetition);
        for r in &running {
            r.trial.save(&r.info)?;
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn measure(
        &mut self,
        policies: &[&Policy],
        repetition: usize,
        running: &mut [Running],
        shape: &Shape,
        warmup: Duration,
        duration: Duration,
        progress: &str,
        server_cpus: &[usize],
        load_cpus: &[usize],
    ) -> Result<Outcome> {
        for (p, r) in policies.iter().zip(running.iter_mut()) {
            let server = self
                .start_server(p, &r.trial.dir, server_cpus)
                .inspect_err(|e| {
                    r.info.status = "failed".into();
                    r.info.error = Some(format!("{e:#}"));
                })?;
            r.info.port = server.port;
            r.info.pid = Some(server.group.pid());
            r.info.started = Some(server.started);
            r.info.ready = Some(server.ready);
            r.info.status = "warming up".into();
            r.trial.save(&r.info)?;
            self.dashboard.watch(&p.label, &r.trial.samples());
            r.server = Some(server);
        }
        let mut hosts: Vec<String> = running
            .iter()
            .filter_map(|r| r.server.as_ref().map(Server::url))
            .collect();
        let turns = match self.alternate {
            Some(_) if hosts.len() > 1 => {
                let n = hosts.len();
                hosts.rotate_left((repetition - 1) % n);
                n as u32
            }
            _ => 1,
        };
        let (warmup, duration) = (warmup * turns, duration * turns);
        let first = running[0].trial.dir.clone();
        if !warmup.is_zero() {
            let out = first.join(".warmup.jsonl");
            self.drive(
                &hosts,
                shape,
                warmup,
                &out,
                None,
                &first.join("warmup.log"),
                load_cpus,
                None,
            )?;
            let _ = std::fs::remove_file(out);
            if proc::interrupted() {
                return Ok(Outcome::Interrupted);
            }
            self.check_alive(running)?;
        }
        let start = unix_now();
        for r in running.iter_mut() {
            r.info.measure_start = Some(start);
            r.info.status = "measuring".into();
            r.trial.save(&r.info)?;
        }
        let (json_out, hdr_out) = self.load_outputs(running);
        self.drive(
            &hosts,
            shape,
            duration,
            &json_out,
            Some(&hdr_out),
            &first.join("load.log"),
            load_cpus,
            Some(progress.to_string()),
        )?;
        let end = unix_now();
        for r in running.iter_mut() {
            r.info.measure_end = Some(end);
        }
        self.check_alive(running)?;
        Ok(if proc::interrupted() {
            Outcome::Interrupted
        } else {
            Outcome::Complete
        })
    }

    /// Where the load generator writes: the trial's own files when alone, shared ones to split.
    fn load_outputs(&self, running: &[Running]) -> (PathBuf, PathBuf) {
        if running.len() == 1 {
            let t = &running[0].trial;
            (t.load_jsonl(), t.dir.join(".hdr"))
        } else {
            let t = &running[0].trial;
            (t.dir.join(".load-all.jsonl"), t.dir.join(".hdr"))
        }
    }

    fn check_alive(&self, running: &mut [Running]) -> Result<()> {
        for r in running.iter_mut() {
            if let Some(server) = r.server.as_mut() {
                if let Some(status) = server.group.try_wait() {
                    let log = r.trial.server_log();
                    let msg = format!(
                        "the {} server exited ({status}) during the trial; its log {}:\n{}",
                        r.info.label,
                        log.display(),
                        log_tail(&log, 15)
                    );
                    r.info.status = "failed".into();
                    r.info.error = Some(msg.clone());
                    bail!(msg);
                }
            }
        }
        Ok(())
    }

    /// Puts each server's load rows and histogram log in its trial folder and records the
    /// summaries. Best effort: a trial that never got load has nothing to move.
    fn collect_outputs(&self, running: &mut [Running], _repetition: usize) {
        let (json_out, hdr_dir) = self.load_outputs(running);
        let hosts: Vec<(String, PathBuf, PathBuf)> = running
            .iter()
            .map(|r| {
                (
                    format!("http://127.0.0.1:{}", r.info.port),
                    r.trial.load_jsonl(),
                    r.trial.hlog(),
                )
            })
            .collect();
        let moved = if running.len() == 1 {
            loader::move_hlog(&hdr_dir, &hosts[0].0, &hosts[0].2)
        } else if json_out.exists() {
            let r = loader::split_by_host(&json_out, &hdr_dir, &hosts);
            let _ = std::fs::remove_file(&json_out);
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
                r.info.load_summary = out.summary;
            }
        }
    }
}
