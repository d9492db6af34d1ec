//! What a suite runs: the flags, their defaults (full and `--quick`), and the policy list.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_core::policy::PolicySpec;
use neurogc_units::parse_duration;

/// The fixed recipes users apply today, the bound, the seed's model, the scheduler and
/// `default` a second time (an A/A pair): the default policies.
pub const DEFAULT_POLICIES: &[&str] = &[
    "default",
    // Frozen 3 s after start: within every server's warm-up (start-up and warm-up together last
    // more than 3 s, --quick's too).
    "freeze:3",
    "threshold:50000,20,20",
    "threshold:50000,500,1000",
    "periodic:1",
    "periodic:5",
    "periodic:10",
    "gc-off",
    SEED_PER_WORKLOAD,
    "neurogc",
    SCHEDULER_OWN,
    SCHEDULER_LOO,
    DEFAULT_AGAIN,
];

/// `default` a second time: an A/A pair on every workload, in the same rounds, so each
/// workload's scoreboard says how far one policy's p99 moves between two servers there (the
/// servers' order is shuffled per workload). Listed last, so that `default` stays the first of
/// its spec, the one the scores are against.
pub const DEFAULT_AGAIN: &str = "default-aa=default";

/// `--quick`'s: the recipes that win somewhere, the bound and the scheduler. Left out: the seed's
/// model (its collect run and training take a quarter of a quick workload's time, and on every
/// workload it has been within noise of `default` or worse) and `periodic` (the worst recipe on
/// every workload of every full run; the full suite runs three periods).
pub const QUICK_POLICIES: &[&str] = &[
    "default",
    "freeze:3",
    "threshold:50000,20,20",
    "threshold:50000,500,1000",
    "gc-off",
    "neurogc",
];

/// `neurogc-seed` without a model: a model trained on each workload's own explore run.
pub const SEED_PER_WORKLOAD: &str = "neurogc-seed";
/// `neurogc` with a model trained on the workload's own explore run.
pub const SCHEDULER_OWN: &str = "neurogc-own";
/// `neurogc` with a model trained on the other workloads' explore runs only (leave one out).
pub const SCHEDULER_LOO: &str = "neurogc-loo";
/// The policies the suite fills in per workload with a model it trains.
pub const PER_WORKLOAD: [&str; 3] = [SEED_PER_WORKLOAD, SCHEDULER_OWN, SCHEDULER_LOO];

/// `neurogc suite`.
#[derive(clap::Args, Debug, Clone)]
pub struct SuiteArgs {
    /// The same workloads, fewer policies (no periodic, no seed model), rounds and probes, one
    /// capacity search (the default policy's): about 10 minutes.
    #[arg(long)]
    pub quick: bool,
    /// Workloads to run, comma-separated [default: all bundled ones, `python -m neurogc.workloads list`].
    #[arg(long, value_name = "W,...", value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Policies, comma-separated (commas inside a spec stay with it: `default,threshold:50000,20,20`).
    /// `neurogc-seed` alone trains the seed's LSTM on each workload's own explore run,
    /// `neurogc-own` the scheduler's model on it, `neurogc-loo` the scheduler's model on the
    /// other workloads' explore runs. [default: default, freeze:3, threshold:50000,20,20,
    /// threshold:50000,500,1000, periodic:1, periodic:5, periodic:10, gc-off (the bound),
    /// neurogc-seed, neurogc, neurogc-own, neurogc-loo, default-aa=default (default again: an
    /// A/A pair); --quick: without the periodic ones, the trained models and the A/A pair]
    #[arg(long, value_name = "P,...")]
    pub policies: Option<String>,
    /// Rounds per workload: each policy gets one turn per round [default: 5, --quick 2].
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// The length of a turn [default: 6s, --quick 2.5s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub turn: Option<Duration>,
    /// Each server's warm-up, alone, before the rounds [default: 6s, --quick 5s: the scheduler
    /// freezes 3 s after its start, after up to 2 s waiting for a quiet moment].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Every policy runs at this share of the capacity found (the lower of gc-off's and default's;
    /// --quick: default's).
    #[arg(long, value_name = "F", default_value_t = 0.6)]
    pub fraction: f64,
    /// A fixed rate (requests per second) for every workload instead of a share of its
    /// capacity: skips the capacity search (quick checks; the scoreboard says so).
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,
    /// Parent of the suite's directory (runs/<timestamp>-suite/).
    #[arg(long, value_name = "DIR", default_value = "runs")]
    pub runs_dir: PathBuf,
    /// The suite's name.
    #[arg(long, value_name = "NAME", default_value = "suite")]
    pub name: String,
    /// Runs nothing: scores the suite run in DIR again (its README.md, scoreboard.json, heat
    /// map), with this build's report.
    #[arg(long, value_name = "DIR")]
    pub rescore: Option<PathBuf>,
    /// Python with `neurogc` installed [default: the project's .venv].
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
}

/// The settings a suite runs with, defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub rounds: u32,
    pub turn: Duration,
    pub warmup: Duration,
    pub probe: Duration,
    /// The load before a probed server's first probe.
    pub probe_warmup: Duration,
    /// The policies whose capacity is searched (the rate is a share of the lowest).
    pub rate_policies: Vec<String>,
    /// The first rate probed.
    pub rate_start: f64,
    /// Bisection steps of the capacity search (`bench --rate-refine`).
    pub rate_refine: u32,
    pub collect: Duration,
    pub epochs: usize,
    pub fraction: f64,
    /// A fixed rate instead of a share of each workload's capacity.
    pub rate: Option<f64>,
    pub policies: Vec<String>,
}

impl Plan {
    pub fn from_args(a: &SuiteArgs) -> Result<Plan> {
        let quick = a.quick;
        let pick = |x: Option<Duration>, full: f64, q: f64| {
            x.unwrap_or(Duration::from_secs_f64(if quick { q } else { full }))
        };
        let plan = Plan {
            rounds: a.repeat.unwrap_or(if quick { 2 } else { 5 }),
            turn: pick(a.turn, 6.0, 2.5),
            warmup: pick(a.warmup, 6.0, 5.0),
            probe: Duration::from_secs_f64(if quick { 1.0 } else { 3.0 }),
            // Quick: past the imports only (a probe judges the median, which a first full
            // collection hardly moves).
            probe_warmup: match a.warmup {
                Some(w) => w,
                None if quick => Duration::from_secs(1),
                None => Duration::from_secs(6),
            },
            // Quick: the default policy's capacity alone (the lower of the two on three of the
            // seven workloads, within 20 % of gc-off's on the rest), from a rate closer to it.
            rate_policies: if quick {
                vec!["default".into()]
            } else {
                vec!["gc-off".into(), "default".into()]
            },
            rate_start: if quick { 40.0 } else { 10.0 },
            // Quick: a capacity within 19 % instead of 9 % saves a probe and its drain.
            rate_refine: if quick { 2 } else { 3 },
            collect: Duration::from_secs(if quick { 8 } else { 20 }),
            epochs: if quick { 10 } else { 30 },
            fraction: a.fraction,
            rate: a.rate,
            policies: match &a.policies {
                Some(text) => split_policies(text)?,
                None => if quick {
                    QUICK_POLICIES
                } else {
                    DEFAULT_POLICIES
                }
                .iter()
                .map(|s| s.to_string())
                .collect(),
            },
        };
        let mut plan = plan;
        // A model trained on the other workloads needs another workload: with one, the
        // defaults leave it out and a list that names it is refused, before anything runs.
        if a.workloads.len() == 1 && plan.has(SCHEDULER_LOO) {
            if a.policies.is_some() {
                bail!(
                    "--policies {SCHEDULER_LOO}: a model trained on the other workloads needs at \
                     least two workloads (--workloads {})",
                    a.workloads[0]
                );
            }
            plan.policies.retain(|p| p != SCHEDULER_LOO);
        }
        if !(1..=100).contains(&plan.rounds) {
            bail!("--repeat {} must be between 1 and 100 rounds", plan.rounds);
        }
        if plan.turn < Duration::from_secs(1) {
            bail!("--turn {:?} must be at least 1s", plan.turn);
        }
        if !(plan.fraction > 0.0 && plan.fraction <= 1.0) {
            bail!("--fraction {} must be in (0, 1]", plan.fraction);
        }
        if plan.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            bail!("--rate must be a number of requests per second above 0");
        }
        Ok(plan)
    }

    /// Whether a model is trained per workload (on an explore run before the benches).
    pub fn trains_models(&self) -> bool {
        self.policies
            .iter()
            .any(|p| PER_WORKLOAD.contains(&p.as_str()))
    }

    pub fn has(&self, token: &str) -> bool {
        self.policies.iter().any(|p| p == token)
    }
}

/// Splits `default,threshold:50000,20,20,periodic:5` into policies: a comma starts a new
/// policy only where a known policy name (or `LABEL=`) follows. Each policy is checked;
/// an unknown one is an error naming it and the known ones.
pub fn split_policies(text: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for part in text.split(',').map(str::trim) {
        // A number (`20`) or an option (`rss=512M`) continues the policy before it; anything
        // else (`freeze`, `LABEL=SPEC`, a typo) starts one.
        let option = part.split_once('=').is_some_and(|(k, v)| {
            policy_name(v).is_none() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        });
        let starts_policy = !(option || part.starts_with(|c: char| c.is_ascii_digit()));
        match out.last_mut() {
            Some(prev) if !starts_policy => {
                prev.push(',');
                prev.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    if out.is_empty() || out.iter().any(String::is_empty) {
        bail!("--policies {text:?}: empty policy");
    }
    for p in &out {
        if PER_WORKLOAD.contains(&p.as_str()) {
            continue;
        }
        // `LABEL=SPEC`, as the bench reads it: a label has no ':' or ','.
        let spec = match p.split_once('=') {
            Some((l, s)) if !l.contains([':', ',']) => s,
            _ => p.as_str(),
        };
        let parsed = spec
            .parse::<PolicySpec>()
            .map_err(|e| anyhow::anyhow!("--policies: {e}"))?;
        // A model that cannot be loaded is an error now, not after the other workloads ran.
        if parsed.model_dir().is_some() {
            parsed
                .build(spec)
                .map_err(|e| anyhow::anyhow!("--policies {p:?}: {e}"))?;
        }
    }
    Ok(out)
}

/// The policy name `part` starts with, if it is one this build knows.
fn policy_name(part: &str) -> Option<&str> {
    let name = part.split(':').next()?;
    const NAMES: &[&str] = &[
        "default",
        "threshold",
        "periodic",
        "freeze",
        "gc-off",
        "neurogc-seed",
        "neurogc",
        "neurogc-own",
        "neurogc-loo",
        "explore",
    ];
    NAMES.contains(&name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_inside_specs_stay_with_them() {
        assert_eq!(
            split_policies("default, threshold:50000,20,20,periodic:5,gc-off").unwrap(),
            ["default", "threshold:50000,20,20", "periodic:5", "gc-off"]
        );
        assert_eq!(
            split_policies("periodic:10,rss=512M,freeze").unwrap(),
            ["periodic:10,rss=512M", "freeze"]
        );
        assert_eq!(split_policies("neurogc-seed").unwrap(), ["neurogc-seed"]);
    }

    #[test]
    fn a_model_that_cannot_be_loaded_is_an_error_before_anything_runs() {
        let e = split_policies("default,neurogc:/nonexistent/model")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/model") && e.contains("not found"),
            "{e}"
        );
    }

    #[test]
    fn unknown_policies_are_clear_errors() {
        let e = split_policies("default,sometimes").unwrap_err().to_string();
        assert!(e.contains("\"sometimes\"") && e.contains("known:"), "{e}");
        let e = split_policies("threshold:abc").unwrap_err().to_string();
        assert!(e.contains("threshold:abc"), "{e}");
    }

    #[test]
    fn quick_is_shorter() {
        let args = |quick| SuiteArgs {
            quick,
            workloads: vec![],
            policies: None,
            repeat: None,
            turn: None,
            warmup: None,
            fraction: 0.6,
            rate: None,
            runs_dir: "runs".into(),
            name: "suite".into(),
            rescore: None,
            python: None,
        };
        let full = Plan::from_args(&args(false)).unwrap();
        let quick = Plan::from_args(&args(true)).unwrap();
        assert!(quick.rounds < full.rounds && quick.turn < full.turn);
        assert!(quick.probe < full.probe && quick.rate_policies.len() < full.rate_policies.len());
        // Every quick policy is on the full scoreboard.
        assert!(quick.policies.iter().all(|p| full.policies.contains(p)));
        assert!(full.trains_models() && !quick.trains_models());
        assert!(full.has(SCHEDULER_OWN) && full.has(SCHEDULER_LOO));
        // One workload: the defaults leave the leave-one-out model out; naming it is an error.
        let one = SuiteArgs {
            workloads: vec!["large-heap".into()],
            ..args(false)
        };
        assert!(!Plan::from_args(&one).unwrap().has(SCHEDULER_LOO));
        let named = SuiteArgs {
            policies: Some("default,neurogc-loo".into()),
            ..one
        };
        let e = Plan::from_args(&named).unwrap_err().to_string();
        assert!(e.contains("at least two workloads"), "{e}");
        assert!(full.policies.contains(&"neurogc".to_string()));
    }
}
