//! Command-line flags in Locust's vocabulary, and their validation into a [`Config`].
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use neurogc_units::parse_duration;

use crate::client::Target;
use crate::schedule::{Arrivals, Turns, Wait};
use crate::tasks::TaskSet;

/// `neurogc load`: closed loop (`--users`) or open loop (`--rate`) against one or more hosts.
///
/// Other crates that run the load generator as a process build one of these and pass
/// [`LoadArgs::to_args`], so the flag grammar has one home: this struct.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct LoadArgs {
    /// Target base URL, http://HOST[:PORT][/PREFIX]. Repeat to load several targets with the same
    /// schedule at the same time; each gets its own statistics.
    #[arg(long = "host", value_name = "URL", required = true)]
    pub hosts: Vec<String>,

    /// Closed loop: number of concurrent users per host (Locust's -u).
    #[arg(short = 'u', long, value_name = "N", conflicts_with = "rate")]
    pub users: Option<u64>,

    /// Closed loop: users started per second (Locust's -r).
    #[arg(short = 'r', long, value_name = "R", conflicts_with = "rate")]
    pub spawn_rate: Option<f64>,

    /// Stop after this long: 30s, 1m, 1m30s, 1h (a bare number is seconds). Default: until Ctrl-C.
    #[arg(short = 't', long, value_name = "DURATION", value_parser = parse_duration)]
    pub run_time: Option<Duration>,

    /// Closed loop: wait between a user's tasks, uniform in [MIN, MAX], two durations (default
    /// 0.1,0.5: seconds; or 100ms,500ms).
    #[arg(long, value_name = "MIN,MAX", conflicts_with_all = ["wait_min", "wait_max", "rate"])]
    pub wait: Option<String>,

    /// Closed loop: lower bound of the wait (`0.1`, `100ms`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "rate")]
    pub wait_min: Option<Duration>,

    /// Closed loop: upper bound of the wait (`0.5`, `500ms`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "rate")]
    pub wait_max: Option<Duration>,

    /// TOML task file (see docs/load.md). Default: the seed's locustfile tasks.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,

    /// Open loop: requests per second sent to every host, latency measured from the intended send time.
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,

    /// Open loop: spacing of intended send times.
    #[arg(long, value_enum, value_name = "KIND", requires = "rate")]
    pub arrivals: Option<Arrivals>,

    /// Open loop: most requests in flight per host; arrivals beyond it are dropped and counted.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "rate")]
    pub max_in_flight: usize,

    /// Open loop, several hosts: send each slice of this length to one host in turn (host 1, host
    /// 2, …, host 1, …) instead of to all at once, so that hosts sharing a core take turns and
    /// see the same machine. Every host then gets 1/N of the run's time and its statistics say so.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "rate")]
    pub alternate: Option<Duration>,

    /// With --alternate: the process group of each host, in --host order. Each group is stopped
    /// (SIGSTOP) between its turns and continued (SIGCONT) for them, so a server sees no idle
    /// time its traffic would not give it (a timer cannot fire into a free idle turn). All are
    /// continued when the run ends.
    #[arg(
        long,
        value_name = "PGID,...",
        value_delimiter = ',',
        requires = "alternate"
    )]
    pub stop_idle: Vec<i32>,

    /// Open loop: send at --rate throughout, ignoring the task file's `[bursts]` (a capacity probe
    /// measures what the service sustains, not what the bursts offer).
    #[arg(long, requires = "rate")]
    pub steady: bool,

    /// Open loop: a request dispatched later than this after its intended time counts as a late start.
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = parse_duration)]
    pub late_threshold: Duration,

    /// Per-request timeout (connect + send + full response), e.g. 30s or 500ms.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Print a live table every second (per host and task), then the summary.
    #[arg(long)]
    pub headless: bool,

    /// Write per-second statistics as JSON lines plus a final summary object ("-" for stdout).
    #[arg(long, value_name = "FILE")]
    pub json_out: Option<PathBuf>,

    /// Save the latency histograms as HdrHistogram interval logs, one file per host.
    #[arg(long, value_name = "DIR")]
    pub hdr_out: Option<PathBuf>,

    /// Log every request (when it was due, when it ended, its status) as CSV, one file per host
    /// (`<host>.requests.csv`): what the trace simulator replays.
    #[arg(long, value_name = "DIR")]
    pub requests_out: Option<PathBuf>,

    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Seed for task picks, waits and Poisson arrivals (default: from the clock).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// How load is offered, as recorded in a run (`run.json`'s `load`) and given to
/// [`LoadArgs::set_shape`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Shape {
    /// Locust's closed loop.
    Closed {
        users: u64,
        spawn_rate: f64,
        wait_min_s: f64,
        wait_max_s: f64,
    },
    /// wrk2's open loop at a constant rate per host.
    Open { rate: f64 },
}

/// Parses `neurogc load`'s flags (for [`LoadArgs::for_hosts`] and the round-trip test).
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
struct Flags {
    #[command(flatten)]
    args: LoadArgs,
}

impl LoadArgs {
    /// The flags' defaults, loading `hosts`.
    pub fn for_hosts(hosts: &[String]) -> LoadArgs {
        use clap::Parser;
        let mut args = Flags::parse_from(["--host", "http://127.0.0.1"]).args;
        args.hosts = hosts.to_vec();
        args
    }

    /// Closed or open loop as `shape` says.
    pub fn set_shape(&mut self, shape: &Shape) {
        match *shape {
            Shape::Closed {
                users,
                spawn_rate,
                wait_min_s,
                wait_max_s,
            } => {
                self.users = Some(users);
                self.spawn_rate = Some(spawn_rate);
                self.wait_min = Some(Duration::from_secs_f64(wait_min_s));
                self.wait_max = Some(Duration::from_secs_f64(wait_max_s));
                self.rate = None;
            }
            Shape::Open { rate } => {
                self.rate = Some(rate);
                (self.users, self.spawn_rate) = (None, None);
                (self.wait, self.wait_min, self.wait_max) = (None, None, None);
            }
        }
    }

    /// The command-line flags that parse back into `self` (`neurogc load <flags>`).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut out: Vec<std::ffi::OsString> = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            out.push(name.into());
            if let Some(v) = value {
                out.push(v.into());
            }
        };
        let ms = |d: Duration| format!("{}ms", d.as_secs_f64() * 1e3);
        for h in &self.hosts {
            flag("--host", Some(h.clone()));
        }
        if let Some(u) = self.users {
            flag("--users", Some(u.to_string()));
        }
        if let Some(r) = self.spawn_rate {
            flag("--spawn-rate", Some(r.to_string()));
        }
        if let Some(d) = self.run_time {
            flag("--run-time", Some(ms(d)));
        }
        if let Some(w) = &self.wait {
            flag("--wait", Some(w.clone()));
        }
        if let Some(w) = self.wait_min {
            flag("--wait-min", Some(ms(w)));
        }
        if let Some(w) = self.wait_max {
            flag("--wait-max", Some(ms(w)));
        }
        if let Some(r) = self.rate {
            flag("--rate", Some(r.to_string()));
            if let Some(a) = self.arrivals {
                let name = clap::ValueEnum::to_possible_value(&a).map(|v| v.get_name().to_string());
                flag("--arrivals", name);
            }
            flag("--max-in-flight", Some(self.max_in_flight.to_string()));
            if let Some(d) = self.alternate {
                flag("--alternate", Some(ms(d)));
            }
            if !self.stop_idle.is_empty() {
                let groups: Vec<String> = self.stop_idle.iter().map(i32::to_string).collect();
                flag("--stop-idle", Some(groups.join(",")));
            }
            if self.steady {
                flag("--steady", None);
            }
        }
        flag("--late-threshold", Some(ms(self.late_threshold)));
        flag("--timeout", Some(ms(self.timeout)));
        if self.headless {
            flag("--headless", None);
        }
        if self.quiet {
            flag("--quiet", None);
        }
        if let Some(s) = self.seed {
            flag("--seed", Some(s.to_string()));
        }
        let mut paths: Vec<std::ffi::OsString> = Vec::new();
        for (name, path) in [
            ("--tasks", &self.tasks),
            ("--json-out", &self.json_out),
            ("--hdr-out", &self.hdr_out),
            ("--requests-out", &self.requests_out),
        ] {
            if let Some(p) = path {
                paths.push(name.into());
                paths.push(p.clone().into_os_string());
            }
        }
        out.extend(paths);
        out
    }
}

/// How load is offered, validated.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Locust semantics: each user sends, waits for the answer, waits `wait`, repeats.
    Closed {
        users: u64,
        spawn_rate: f64,
        wait: Wait,
    },
    /// wrk2 semantics: requests leave on a schedule whatever the server does.
    Open {
        rate: f64,
        arrivals: Arrivals,
        max_in_flight: usize,
        late_threshold: Duration,
        /// Slice length when hosts take turns (`--alternate`).
        alternate: Option<Duration>,
        /// Process groups stopped between their turns (`--stop-idle`), one per host.
        stop_idle: Vec<i32>,
    },
}

/// A validated run description.
#[derive(Debug, Clone)]
pub struct Config {
    pub targets: Vec<Target>,
    pub tasks: TaskSet,
    pub mode: Mode,
    pub run_time: Option<Duration>,
    pub timeout: Duration,
    pub headless: bool,
    pub quiet: bool,
    pub json_out: Option<PathBuf>,
    pub hdr_out: Option<PathBuf>,
    pub requests_out: Option<PathBuf>,
    pub seed: u64,
}

/// Histograms track up to one hour, so durations beyond it are refused.
const MAX_DURATION: Duration = Duration::from_secs(3600);

impl Config {
    /// Hosts taking turns, when `--alternate` asked for it.
    pub fn turns(&self) -> Option<Turns> {
        match self.mode {
            Mode::Open {
                alternate: Some(slice),
                ..
            } => Some(Turns {
                slice,
                hosts: self.targets.len(),
            }),
            _ => None,
        }
    }

    pub fn from_args(a: LoadArgs) -> Result<Config> {
        let targets = a
            .hosts
            .iter()
            .map(|h| Target::parse(h))
            .collect::<Result<Vec<_>>>()?;
        let mut tasks = match &a.tasks {
            Some(path) => TaskSet::from_file(path)?,
            None => TaskSet::seed(),
        };
        if a.steady {
            tasks = tasks.without_bursts();
        }
        if a.timeout.is_zero() || a.timeout > MAX_DURATION {
            bail!("--timeout {:?} must be above 0 and at most 1h", a.timeout);
        }
        if a.run_time.is_some_and(|d| d.is_zero()) {
            bail!("--run-time must be above 0");
        }
        let mode = match a.rate {
            Some(rate) => {
                if !(rate.is_finite() && rate > 0.0 && rate <= 10_000_000.0) {
                    bail!("--rate {rate} must be a number of requests per second above 0");
                }
                if a.max_in_flight == 0 {
                    bail!("--max-in-flight must be at least 1");
                }
                if let Some(slice) = a.alternate {
                    if targets.len() < 2 {
                        bail!("--alternate takes turns between hosts: give two --host or more");
                    }
                    if slice < Duration::from_millis(100) || slice > MAX_DURATION {
                        bail!("--alternate {slice:?} must be between 100ms and 1h");
                    }
                }
                if !a.stop_idle.is_empty() {
                    if a.stop_idle.len() != targets.len() {
                        bail!(
                            "--stop-idle has {} process groups for {} hosts: give one per --host, in order",
                            a.stop_idle.len(),
                            targets.len()
                        );
                    }
                    if let Some(bad) = a.stop_idle.iter().find(|&&g| g <= 1) {
                        bail!("--stop-idle {bad} is not a process group id (must be above 1)");
                    }
                }
                Mode::Open {
                    rate,
                    arrivals: a.arrivals.unwrap_or(Arrivals::Uniform),
                    max_in_flight: a.max_in_flight,
                    late_threshold: a.late_threshold,
                    alternate: a.alternate,
                    stop_idle: a.stop_idle.clone(),
                }
            }
            None => {
                let users = a.users.unwrap_or(1);
                if users == 0 || users > 1_000_000 {
                    bail!("--users {users} must be between 1 and 1000000");
                }
                let spawn_rate = a.spawn_rate.unwrap_or(1.0);
                if !(spawn_rate.is_finite() && spawn_rate > 0.0) {
                    bail!("--spawn-rate {spawn_rate} must be a number of users per second above 0");
                }
                let wait = match &a.wait {
                    Some(s) => parse_wait(s).with_context(|| format!("--wait {s:?}"))?,
                    None => {
                        let secs =
                            |d: Option<Duration>, default| d.map_or(default, |d| d.as_secs_f64());
                        Wait::new(secs(a.wait_min, 0.1), secs(a.wait_max, 0.5))
                            .context("--wait-min/--wait-max")?
                    }
                };
                Mode::Closed {
                    users,
                    spawn_rate,
                    wait,
                }
            }
        };
        let seed = a
            .seed
            .unwrap_or_else(|| (neurogc_units::unix_now() * 1e9) as u64);
        Ok(Config {
            targets,
            tasks,
            mode,
            run_time: a.run_time,
            timeout: a.timeout,
            headless: a.headless,
            quiet: a.quiet,
            json_out: a.json_out,
            hdr_out: a.hdr_out,
            requests_out: a.requests_out,
            seed,
        })
    }
}

fn parse_wait(s: &str) -> Result<Wait> {
    let (lo, hi) = neurogc_units::parse_duration_range(s).map_err(anyhow::Error::msg)?;
    Wait::new(lo.as_secs_f64(), hi.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadArgs,
    }

    fn config(argv: &[&str]) -> Result<Config> {
        let cli = Cli::try_parse_from(std::iter::once("load").chain(argv.iter().copied()))?;
        Config::from_args(cli.args)
    }

    #[test]
    fn to_args_parses_back_into_the_same_flags() {
        let hosts = [
            "http://127.0.0.1:1".to_string(),
            "http://127.0.0.1:2".to_string(),
        ];
        let mut open = LoadArgs::for_hosts(&hosts);
        open.set_shape(&Shape::Open { rate: 37.5 });
        open.alternate = Some(Duration::from_millis(2500));
        open.stop_idle = vec![4242, 4343];
        open.arrivals = Some(Arrivals::Poisson);
        open.steady = true;
        open.run_time = Some(Duration::from_millis(12_345));
        open.timeout = Duration::from_secs(3);
        open.seed = Some(42);
        open.quiet = true;
        open.tasks = Some("tasks dir/t.toml".into());
        open.json_out = Some("out.jsonl".into());
        open.hdr_out = Some("hdr".into());
        open.requests_out = Some("requests".into());
        let mut closed = LoadArgs::for_hosts(&hosts[..1]);
        closed.set_shape(&Shape::Closed {
            users: 20,
            spawn_rate: 2.5,
            wait_min_s: 0.1,
            wait_max_s: 0.5,
        });
        closed.headless = true;
        for args in [open, closed] {
            let mut back = Flags::try_parse_from(args.to_args()).unwrap().args;
            assert_eq!(back, args);
            back.tasks = None; // the file does not exist; everything else validates
            Config::from_args(back).unwrap();
        }
    }

    fn error(argv: &[&str]) -> String {
        format!("{:#}", config(argv).unwrap_err())
    }

    #[test]
    fn closed_loop_defaults_follow_locust_and_the_seed() {
        let c = config(&[
            "--host",
            "http://127.0.0.1:8001",
            "-u",
            "100",
            "-r",
            "10",
            "-t",
            "1m",
        ])
        .unwrap();
        assert_eq!(
            c.mode,
            Mode::Closed {
                users: 100,
                spawn_rate: 10.0,
                wait: Wait::new(0.1, 0.5).unwrap()
            }
        );
        assert_eq!(c.run_time, Some(Duration::from_secs(60)));
        assert_eq!(c.tasks.len(), 5);
        let c = config(&["--host", "http://127.0.0.1:1", "--wait", "0,0"]).unwrap();
        assert!(
            matches!(c.mode, Mode::Closed { wait, .. } if wait == Wait::new(0.0, 0.0).unwrap())
        );
        // The one duration grammar: `--wait 100ms,1s` and `--wait-min 50ms --wait-max 0.2`.
        let waits = |argv: &[&str]| match config(argv).unwrap().mode {
            Mode::Closed { wait, .. } => (wait.min_s(), wait.max_s()),
            other => panic!("{other:?}"),
        };
        let h = ["--host", "http://127.0.0.1:1"];
        assert_eq!(waits(&[h[0], h[1], "--wait", "100ms,1s"]), (0.1, 1.0));
        let split = [h[0], h[1], "--wait-min", "50ms", "--wait-max", "0.2"];
        assert_eq!(waits(&split), (0.05, 0.2));
        // and what bench hands to the binary parses back to the same bounds
        let mut a = LoadArgs::for_hosts(&[h[1].to_string()]);
        a.set_shape(&Shape::Closed {
            users: 3,
            spawn_rate: 1.0,
            wait_min_s: 0.05,
            wait_max_s: 0.25,
        });
        let argv: Vec<String> = a
            .to_args()
            .iter()
            .map(|s| s.to_string_lossy().into())
            .collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        assert_eq!(waits(&argv), (0.05, 0.25));
    }

    #[test]
    fn open_loop_and_several_hosts() {
        let c = config(&[
            "--host",
            "http://127.0.0.1:8001",
            "--host",
            "http://localhost:8002/api",
            "--rate",
            "50",
            "--arrivals",
            "poisson",
        ])
        .unwrap();
        assert_eq!(c.targets.len(), 2);
        assert!(
            matches!(c.mode, Mode::Open { rate, arrivals: Arrivals::Poisson, .. } if rate == 50.0)
        );
    }

    #[test]
    fn bad_input_is_named() {
        let h = "--host";
        let u = "http://127.0.0.1:1";
        assert!(error(&[h, u, "--arrivals", "bursty", "--rate", "5"]).contains("bursty"));
        assert!(error(&[h, u, "--rate", "5", "--alternate", "1s"]).contains("two --host"));
        assert!(error(&[h, u, h, u, "--rate", "5", "--alternate", "1ms"]).contains("100ms"));
        assert!(error(&[h, u, "--rate", "0"]).contains("--rate 0"));
        assert!(error(&[h, u, "--rate", "5", "-u", "3"]).contains("--users"));
        assert!(error(&[h, u, "-u", "0"]).contains("--users 0"));
        assert!(error(&[h, u, "-r", "0"]).contains("--spawn-rate"));
        assert!(error(&[h, u, "--wait", "0.5,0.1"]).contains("--wait"));
        assert!(error(&[h, u, "--wait", "x,1"]).contains("\"x\" is not a duration"));
        assert!(error(&[h, u, "--run-time", "5y"]).contains("unknown unit"));
        assert!(error(&[h, "https://127.0.0.1"]).contains("https"));
        assert!(error(&[h, "http://"]).contains("http://"));
        assert!(error(&[h, u, "--tasks", "/nope.toml"]).contains("/nope.toml"));
        assert!(error(&["-u", "3"]).contains("--host"));
    }
}
