//! Flags shared by `collect`, `bench` and `demo`, and their validation.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_load::Shape;
use neurogc_units::parse_duration;

use crate::app::{find_python, find_workload, App};

/// A flags struct as its `clap` attributes' defaults make it, with the required flags `argv`
/// gives: how the demo builds the collect and bench it runs, then sets their fields by name.
pub fn flags_with_defaults<T: clap::Args + clap::FromArgMatches>(argv: &[&str]) -> Result<T> {
    let command = T::augment_args(clap::Command::new("neurogc").no_binary_name(true));
    let matches = command.try_get_matches_from(argv)?;
    Ok(T::from_arg_matches(&matches)?)
}

/// Which service to start.
#[derive(clap::Args, Debug, Clone)]
pub struct AppArgs {
    /// Your own service instead of a bundled workload: a shell command with `{port}` where its
    /// port goes, e.g. "uvicorn myapp:app --port {port}". The agent is injected as by `neurogc run`.
    #[arg(long, value_name = "COMMAND", conflicts_with_all = ["workload", "set", "heap_objects"])]
    pub cmd: Option<String>,
    /// The bundled workload to run (`python -m neurogc.workloads list`): seed (the seed's demo
    /// endpoints, the default), large-heap, growing-cache, bursty, churn, cycle-leak, orm. Its
    /// own task file is the default load.
    #[arg(long, visible_alias = "scenario", value_name = "NAME")]
    pub workload: Option<String>,
    /// A size of the workload, KEY=VALUE (its create_app option; repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// large-heap: long-lived tracked objects (as --set heap_objects=N).
    #[arg(long, value_name = "N")]
    pub heap_objects: Option<u64>,
    /// Python with `neurogc` installed, for the demo app [default: the project's .venv].
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Path polled until the service answers [default: /health for the demo, / for --cmd].
    #[arg(long, value_name = "PATH")]
    pub health: Option<String>,
    /// Give up if the service does not answer within this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub startup_timeout: Duration,
    /// Agent sample interval: 1s, 500ms, 0.25 (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
}

impl AppArgs {
    pub fn app(&self) -> Result<App> {
        let interval = self.interval.as_secs_f64();
        if !(0.01..=60.0).contains(&interval) {
            bail!("--interval {interval} s must be between 10ms and 60s");
        }
        let app = match &self.cmd {
            Some(cmd) => App::Cmd {
                template: cmd.clone(),
            },
            None => {
                let python = find_python(self.python.as_deref());
                let name = self.workload.as_deref().unwrap_or("seed");
                let workload = find_workload(&python, name).context("--workload")?;
                let mut options = self.set.clone();
                if let Some(n) = self.heap_objects {
                    options.push(format!("heap_objects={n}"));
                }
                App::Workload {
                    python,
                    workload,
                    options,
                }
            }
        };
        app.check()?;
        Ok(app)
    }

    pub fn health_path(&self) -> String {
        match (&self.health, &self.cmd) {
            (Some(h), _) => h.clone(),
            (None, Some(_)) => "/".into(),
            (None, None) => "/health".into(),
        }
    }
}

/// Where the run directory goes.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Parent of the run directory (runs/<timestamp>-<name>/).
    #[arg(long, value_name = "DIR", default_value = "runs")]
    pub runs_dir: PathBuf,
    /// The run's name [default: the command's].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// The live dashboard.
#[derive(clap::Args, Debug, Clone)]
pub struct DashboardOpts {
    /// Start a dashboard for this run (if none is running on --dashboard-port) and stream to it.
    #[arg(long)]
    pub dashboard: bool,
    /// The dashboard's port on 127.0.0.1: a dashboard already running there gets the samples.
    #[arg(long, value_name = "PORT", default_value_t = 8003)]
    pub dashboard_port: u16,
    /// Stream to no dashboard, even if one is running.
    #[arg(long, conflicts_with = "dashboard")]
    pub no_dashboard: bool,
}

impl DashboardOpts {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.dashboard_port))
    }
}

/// The load: closed loop (Locust) or open loop (wrk2).
#[derive(clap::Args, Debug, Clone)]
pub struct LoadOpts {
    /// Closed loop: users (Locust's -u).
    #[arg(short = 'u', long, value_name = "N", conflicts_with = "rate")]
    pub users: Option<u64>,
    /// Closed loop: users started per second (Locust's -r).
    #[arg(short = 'r', long, value_name = "R")]
    pub spawn_rate: Option<f64>,
    /// Closed loop: think time between a user's requests, uniform in [MIN, MAX]: 0.1,0.5 or
    /// 100ms,500ms (bare numbers are seconds).
    #[arg(long, value_name = "MIN,MAX")]
    pub wait: Option<String>,
    /// Open loop: requests per second, or `auto` (bench only): find the highest rate the
    /// slowest policy sustains with flat latency, then run at --rate-fraction of it.
    #[arg(long, value_name = "RPS|auto")]
    pub rate: Option<String>,
    /// Task file (TOML, see docs/load.md) [default: the workload's own; with --cmd, GET /].
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// Load `GET PATH` instead of a task file (repeat for several, equal weights), e.g.
    /// --path /items --path /health: the endpoints of a --cmd service [default there: GET /].
    #[arg(long = "path", value_name = "PATH", conflicts_with = "tasks")]
    pub paths: Vec<String>,
    /// A trial with more than this share of its requests failed (an HTTP status of 400 or more,
    /// or no response: refused, reset, timed out) fails the run: 5%, 0.05.
    #[arg(long, value_name = "SHARE", default_value = "5%", value_parser = parse_share)]
    pub max_error_rate: f64,
    /// Per-request timeout.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Seed for task picks and waits (the same for every trial, so policies see the same load).
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
}

/// A share: `5%` or `0.05`, from 0 to 1.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{text:?} is not a share from 0 to 1 (e.g. 5%, 0.05)"
        )),
    }
}

/// The load as asked: a shape, or "find the rate first".
pub enum LoadPlan {
    Fixed(Shape),
    AutoRate,
}

impl LoadOpts {
    /// The `--path`s as a task file's text (`GET PATH`, equal weights); an error names a path
    /// that does not start with `/`.
    pub fn paths_as_tasks(paths: &[String]) -> Result<String> {
        let mut toml = String::new();
        for p in paths {
            if !p.starts_with('/') || p.chars().any(char::is_whitespace) {
                bail!("--path {p:?}: expected a URL path starting with / (e.g. /items?page=2)");
            }
            // A JSON string is a TOML basic string.
            toml.push_str(&format!(
                "[[task]]\npath = {}\n\n",
                serde_json::to_string(p)?
            ));
        }
        Ok(toml)
    }

    /// `default_closed` applies when neither --users nor --rate is given.
    pub fn plan(&self, default_closed: Option<(u64, f64)>) -> Result<LoadPlan> {
        if let Some(rate) = &self.rate {
            if self.wait.is_some() || self.spawn_rate.is_some() {
                bail!("--wait and --spawn-rate are closed-loop flags; --rate is open loop");
            }
            if rate == "auto" {
                return Ok(LoadPlan::AutoRate);
            }
            let r: f64 = rate
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && *r > 0.0)
                .with_context(|| {
                    format!("--rate {rate:?}: expected requests per second or auto")
                })?;
            return Ok(LoadPlan::Fixed(Shape::Open { rate: r }));
        }
        let (default_users, default_spawn) = match default_closed {
            Some(d) => d,
            None if self.users.is_none() => return Ok(LoadPlan::AutoRate),
            None => (1, 1.0),
        };
        let users = self.users.unwrap_or(default_users);
        let spawn_rate = self.spawn_rate.unwrap_or(default_spawn);
        if users == 0 || !(spawn_rate.is_finite() && spawn_rate > 0.0) {
            bail!("--users must be at least 1 and --spawn-rate above 0");
        }
        let (wait_min_s, wait_max_s) = match &self.wait {
            None => (0.1, 0.5),
            Some(w) => {
                let (lo, hi) = neurogc_units::parse_duration_range(w)
                    .map_err(|e| anyhow::anyhow!("--wait {e}"))?;
                (lo.as_secs_f64(), hi.as_secs_f64())
            }
        };
        Ok(LoadPlan::Fixed(Shape::Closed {
            users,
            spawn_rate,
            wait_min_s,
            wait_max_s,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_a_task_file_the_load_generator_reads() {
        let paths = ["/".to_string(), "/items?page=2&q=\"x\"".to_string()];
        let text = LoadOpts::paths_as_tasks(&paths).unwrap();
        let set = neurogc_load::tasks::TaskSet::from_toml(&text).unwrap();
        let got: Vec<(&str, &str, u32)> = set
            .tasks()
            .iter()
            .map(|t| (t.method.as_str(), t.path.as_str(), t.weight))
            .collect();
        assert_eq!(got, [("GET", "/", 1), ("GET", "/items?page=2&q=\"x\"", 1)]);
        for bad in ["items", "", "/a b", "http://x/"] {
            let e = LoadOpts::paths_as_tasks(&[bad.to_string()]).unwrap_err();
            assert!(e.to_string().contains("--path"), "{bad}: {e}");
        }
    }

    #[test]
    fn waits_are_durations() {
        let wait = |w: &str| {
            let l: crate::CollectArgs = flags_with_defaults(&["--wait", w]).unwrap();
            match l.load.plan(Some((1, 1.0))) {
                Ok(LoadPlan::Fixed(Shape::Closed {
                    wait_min_s,
                    wait_max_s,
                    ..
                })) => Ok((wait_min_s, wait_max_s)),
                Ok(_) => unreachable!(),
                Err(e) => Err(e.to_string()),
            }
        };
        assert_eq!(wait("0.1,0.5"), Ok((0.1, 0.5)));
        assert_eq!(wait("100ms, 1s"), Ok((0.1, 1.0)));
        for bad in ["0.5,0.1", "1s,-1", "soon,1", "1"] {
            assert!(wait(bad).unwrap_err().contains("--wait"), "{bad}");
        }
    }

    #[test]
    fn shares_take_percent_or_fraction() {
        assert_eq!(parse_share("5%"), Ok(0.05));
        assert_eq!(parse_share(" 0.05 "), Ok(0.05));
        assert_eq!(parse_share("100 %"), Ok(1.0));
        assert_eq!(parse_share("0"), Ok(0.0));
        for bad in ["-1%", "101%", "2", "lots", "nan"] {
            assert!(parse_share(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn intervals_are_durations() {
        let c: crate::CollectArgs = flags_with_defaults(&["--interval", "250ms"]).unwrap();
        assert_eq!(c.app.interval, Duration::from_millis(250));
        let c: crate::CollectArgs = flags_with_defaults(&[]).unwrap();
        assert_eq!(c.app.interval, Duration::from_secs(1));
        assert_eq!(c.load.max_error_rate, 0.05);
        let c: crate::CollectArgs =
            flags_with_defaults(&["--interval", "5ms", "--cmd", "x {port}"]).unwrap();
        assert!(c.app.app().unwrap_err().to_string().contains("--interval"));
    }
}
