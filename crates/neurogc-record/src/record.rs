//! The types of `run.json`, `trial.json` and `rate-search.json`.

use neurogc_load::{Shape, Summary};
use neurogc_model::ModelMeta;
use serde::{Deserialize, Serialize};

/// The version of this format `run.json` carries; readers say so when it differs.
pub const SCHEMA: u32 = 2;

/// Which command made the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Collect,
    Bench,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Collect => "collect",
            RunKind::Bench => "bench",
        }
    }
}

/// How a run ended (or that it has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// Where a trial is, or how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrialStatus {
    #[serde(rename = "starting")]
    Starting,
    #[serde(rename = "warming up")]
    WarmingUp,
    #[serde(rename = "measuring")]
    Measuring,
    #[serde(rename = "complete")]
    Complete,
    #[serde(rename = "interrupted")]
    Interrupted,
    #[serde(rename = "failed")]
    Failed,
}

impl TrialStatus {
    /// Still going: starting, warming up or measuring.
    pub fn in_progress(self) -> bool {
        matches!(
            self,
            TrialStatus::Starting | TrialStatus::WarmingUp | TrialStatus::Measuring
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Starting => "starting",
            TrialStatus::WarmingUp => "warming up",
            TrialStatus::Measuring => "measuring",
            TrialStatus::Complete => "complete",
            TrialStatus::Interrupted => "interrupted",
            TrialStatus::Failed => "failed",
        }
    }
}

/// How the trials of a bench share the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Each trial alone on the machine, server and load generator on different cores.
    Sequential,
    /// All policies' servers at once under one load generator (the seed's method).
    SideBySide,
    /// All policies' servers up at once, pinned to the same CPU, the load switched between them
    /// every --slice: each sees the same machine minutes, so its drift cancels out.
    Alternating,
    /// As alternating, but each server is warmed up alone and stopped (SIGSTOP) outside its
    /// turns: it sees no idle time its traffic would not give it, so a policy that collects on a
    /// timer or when idle gains nothing from the method. The suite's protocol.
    Turns,
}

impl Mode {
    /// The servers take turns under one load (`alternating`, `turns`).
    pub fn takes_turns(self) -> bool {
        matches!(self, Mode::Alternating | Mode::Turns)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::SideBySide => "side-by-side",
            Mode::Alternating => "alternating",
            Mode::Turns => "turns",
        }
    }
}

/// The enums print as they are written in the files.
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(RunKind, RunStatus, TrialStatus, Mode);

/// The service under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum AppInfo {
    /// A bundled workload (`neurogc.workloads`; `seed` is the seed's demo app).
    Workload {
        workload: String,
        /// Its `--set KEY=VALUE` options.
        #[serde(default)]
        options: Vec<String>,
        /// How it is started (`{port}` where the port goes).
        command: String,
    },
    /// The bundled demo app, as runs before the workloads recorded it.
    Demo {
        scenario: String,
        heap_objects: Option<u64>,
        command: String,
    },
    /// The user's own command (`--cmd`).
    Cmd { command: String },
}

impl AppInfo {
    pub fn command(&self) -> &str {
        match self {
            AppInfo::Workload { command, .. }
            | AppInfo::Demo { command, .. }
            | AppInfo::Cmd { command } => command,
        }
    }
}

/// Where the open-loop rate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateSource {
    /// Given on the command line (or the closed loop's users).
    Fixed,
    /// Found by `--rate auto` (see `rate-search.json`).
    Auto,
}

/// What `--rate auto` found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoRate {
    pub sustainable_rps: f64,
    pub fraction: f64,
    /// The policy whose server sustained the least.
    pub limited_by: String,
}

/// The load every trial of the run got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    #[serde(flatten)]
    pub shape: Shape,
    pub rate_source: RateSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoRate>,
    /// Servers took turns under the load in slices this long (`--mode alternating`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate_s: Option<f64>,
}

/// One policy of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyEntry {
    /// Unique within the run; names its trials and its rows in reports.
    pub label: String,
    /// The spec as the server got it (model directories absolute).
    pub spec: String,
    /// The model of a model-driven policy (its `model.json`).
    #[serde(default)]
    pub model: Option<ModelMeta>,
}

/// A trial's place in the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRef {
    /// Relative to the run directory: `trials/NN-<label>-rR`.
    pub dir: String,
    pub label: String,
    pub repetition: u32,
}

impl TrialRef {
    /// `trials/NN-label-rR` → `NN-label-rR`.
    pub fn name(&self) -> &str {
        self.dir.rsplit('/').next().unwrap_or(&self.dir)
    }
}

/// The CPUs the server and the load generator were pinned to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pinning {
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
}

/// The machine a run ran on: a result means little without it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    #[serde(default)]
    pub cpu_model: Option<String>,
    #[serde(default)]
    pub cores: Option<u64>,
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    #[serde(default)]
    pub os: Option<String>,
    #[serde(default)]
    pub kernel: Option<String>,
    /// `sys.version` of the interpreter the servers ran on, if known.
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub neurogc_version: Option<String>,
}

/// `run.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub schema: u32,
    pub kind: RunKind,
    pub name: String,
    /// The command line that made the run.
    pub command: Vec<String>,
    /// Unix seconds.
    pub created: f64,
    pub finished: Option<f64>,
    pub status: RunStatus,
    pub error: Option<String>,
    pub app: AppInfo,
    pub mode: Mode,
    pub repeat: u32,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub interval_s: f64,
    /// Unknown until the rate is settled (`--rate auto` runs its search first).
    pub load: Option<LoadInfo>,
    pub policies: Vec<PolicyEntry>,
    pub pinning: Option<Pinning>,
    pub system: SystemInfo,
    pub trials: Vec<TrialRef>,
    /// The process writing the run (records before it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<Writer>,
    /// Servers run together started and took their turns in an order shuffled from this seed
    /// (`--shuffle`); none: as listed, rotated by one each repetition. Each trial's `started`
    /// says the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle: Option<u64>,
    /// A throwaway server under `default` started and warmed up before the scored ones, held
    /// stopped until they were done (`--primer`): the first start was none of theirs. Its files
    /// are in `primer-rN/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primer: bool,
}

impl RunInfo {
    /// A run starting now: status `running`, one repetition of nothing yet, no load recorded,
    /// this build's version; the caller fills in the rest.
    pub fn new(kind: RunKind, name: &str, app: AppInfo, policies: Vec<PolicyEntry>) -> RunInfo {
        RunInfo {
            schema: SCHEMA,
            kind,
            name: name.to_string(),
            command: Vec::new(),
            created: neurogc_units::unix_now(),
            finished: None,
            status: RunStatus::Running,
            error: None,
            app,
            mode: Mode::Sequential,
            repeat: 1,
            warmup_s: 0.0,
            duration_s: 0.0,
            interval_s: 1.0,
            load: None,
            policies,
            pinning: None,
            system: SystemInfo {
                neurogc_version: Some(env!("CARGO_PKG_VERSION").to_string()),
                ..SystemInfo::default()
            },
            trials: Vec::new(),
            writer: Some(Writer::current()),
            shuffle: None,
            primer: false,
        }
    }

    /// The baseline: the first policy.
    pub fn baseline(&self) -> &PolicyEntry {
        &self.policies[0]
    }

    /// An A/A run: at least two policies, all with the same spec.
    pub fn is_aa(&self) -> bool {
        let p = &self.policies;
        p.len() >= 2 && p.iter().all(|x| x.spec == p[0].spec)
    }
}

/// The process that writes a run, so that a reader can tell a run still going from one whose
/// process was killed (`kill -9`, a crash, a reboot) before it could record how it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writer {
    pub pid: u32,
    /// The machine's name: elsewhere the pid means nothing.
    #[serde(default)]
    pub host: Option<String>,
    /// The kernel's boot id: after a reboot the process is gone, whatever now has its pid.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// When it started, in clock ticks after boot: a later process that got the pid differs.
    #[serde(default)]
    pub start_ticks: Option<u64>,
}

/// Whether a run's writer still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
    /// Another machine's run, or no `/proc` to look in.
    Unknown,
}

impl Writer {
    /// This process.
    pub fn current() -> Writer {
        Writer::of(std::process::id())
    }

    /// Process `pid` of this machine, as `/proc` describes it now.
    pub fn of(pid: u32) -> Writer {
        let (host, boot_id) = machine();
        Writer {
            pid,
            host,
            boot_id,
            start_ticks: proc_stat(pid).map(|(_, ticks)| ticks),
        }
    }

    /// Looks the process up on this machine (Linux's `/proc`).
    pub fn liveness(&self) -> Liveness {
        let (host, boot_id) = machine();
        if self.host != host || self.boot_id.is_none() || boot_id.is_none() {
            return Liveness::Unknown;
        }
        if self.boot_id != boot_id {
            return Liveness::Gone;
        }
        match proc_stat(self.pid) {
            // A zombie has died; only its parent has not collected it yet.
            Some((state, ticks))
                if !matches!(state, 'Z' | 'X') && Some(ticks) == self.start_ticks =>
            {
                Liveness::Alive
            }
            _ => Liveness::Gone,
        }
    }
}

/// This machine's host name and boot id.
fn machine() -> (Option<String>, Option<String>) {
    let read = |path: &str| {
        let text = std::fs::read_to_string(path).ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id"),
    )
}

/// `/proc/PID/stat`'s state and start time (fields 3 and 22).
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after its last `)`.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.nth(18)?.parse().ok()?))
}

/// `trial.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialInfo {
    pub label: String,
    pub spec: String,
    pub repetition: u32,
    /// 1-based position among the run's trials.
    pub order: u32,
    /// 0 until the server is up.
    pub port: u16,
    pub pid: Option<u32>,
    /// Unix seconds: server started, answering, measured window.
    pub started: Option<f64>,
    pub ready: Option<f64>,
    pub measure_start: Option<f64>,
    pub measure_end: Option<f64>,
    pub status: TrialStatus,
    pub error: Option<String>,
    /// The load generator's summary of this trial's host.
    pub load_summary: Option<Summary>,
}

impl TrialInfo {
    /// A trial about to start.
    pub fn starting(label: &str, spec: &str, repetition: u32, order: u32) -> TrialInfo {
        TrialInfo {
            label: label.to_string(),
            spec: spec.to_string(),
            repetition,
            order,
            port: 0,
            pid: None,
            started: None,
            ready: None,
            measure_start: None,
            measure_end: None,
            status: TrialStatus::Starting,
            error: None,
            load_summary: None,
        }
    }
}

/// One probe of `--rate auto`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub rate: f64,
    pub achieved: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub failures: u64,
    pub dropped: u64,
    /// Requests in flight at the end of each whole second of sending: a queue that grew to the
    /// end (overload) or peaked and drained (a pause's).
    #[serde(default)]
    pub in_flight: Vec<u64>,
    pub sustained: bool,
    pub verdict: String,
}

/// One policy's probes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicySearch {
    pub label: String,
    pub probes: Vec<Probe>,
    pub sustainable_rps: f64,
}

/// `rate-search.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateSearch {
    pub start_rps: f64,
    pub probe_s: f64,
    pub fraction: f64,
    pub policies: Vec<PolicySearch>,
    pub sustainable_rps: f64,
    pub limited_by: String,
    pub rate: f64,
    /// A capacity found earlier, checked again before this run's load (`neurogc suite`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck: Option<RateRecheck>,
}

/// The check, just before a bench, of a capacity found minutes earlier (`neurogc suite`'s
/// explore run): the machine's speed drifts, and a capacity found on a fast minute overloads
/// every policy on a slow one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateRecheck {
    /// The capacity found earlier.
    pub earlier_rps: f64,
    /// The policy probed at it: the one that limited it.
    pub label: String,
    /// Its probes at that capacity (a second when the first's queue rose only late).
    pub probes: Vec<Probe>,
}

impl RateRecheck {
    /// Whether the earlier capacity was sustained again (else it was searched anew).
    pub fn held(&self) -> bool {
        self.probes.last().is_some_and(|p| p.sustained)
    }
}

/// `suite.json`: a `neurogc suite` run, one bench run directory per workload beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuiteInfo {
    pub schema: u32,
    pub name: String,
    pub command: Vec<String>,
    pub created: f64,
    pub finished: Option<f64>,
    pub status: RunStatus,
    pub error: Option<String>,
    /// `--quick`: the same workloads, fewer policies, rounds and probes.
    pub quick: bool,
    /// Rounds per workload: each policy gets one turn per round.
    pub rounds: u32,
    pub turn_s: f64,
    pub warmup_s: f64,
    /// Every policy runs at this share of the lowest capacity found under `rate_policies`.
    pub fraction: f64,
    /// The policies whose capacity was searched (records before it: gc-off's and default's).
    #[serde(default = "SuiteInfo::full_rate_policies")]
    pub rate_policies: Vec<String>,
    /// `--rate`: a fixed rate for every workload instead (no capacity search).
    #[serde(default)]
    pub rate: Option<f64>,
    /// The policies as given (`neurogc-seed` alone: a model trained per workload).
    pub policies: Vec<String>,
    pub workloads: Vec<SuiteWorkload>,
    pub system: SystemInfo,
}

impl SuiteInfo {
    fn full_rate_policies() -> Vec<String> {
        vec!["gc-off".into(), "default".into()]
    }
}

/// One workload of a suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuiteWorkload {
    pub name: String,
    /// Its bench run directory, relative to the suite's.
    pub run: Option<String>,
    /// The run its models were trained on (`neurogc-seed`'s, the scheduler's), relative to
    /// the suite's: a collect run, or the explore run that also found its capacity.
    pub collect: Option<String>,
    pub status: RunStatus,
    pub error: Option<String>,
}
