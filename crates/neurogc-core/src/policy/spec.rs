//! Policy spec strings: `name[:positional,...][,key=value,...]`, validated up front so a typo is a
//! clear error at start-up, never a silent fallback to some default.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use neurogc_units::{parse_duration, parse_size};

use super::young::{YoungThreshold, MAX_THRESHOLD};
use super::{
    BurstWindows, DefaultPolicy, FreezePolicy, GcOffPolicy, GuardConfig, MemoryGuard,
    MiddleCollections, PauseDrift, PeriodicPolicy, Policy, Scheduler, SchedulerConfig, TailCadence,
    ThresholdPolicy,
};

/// The policies this build knows: the one list that error messages, the command line's help
/// and the Python package's docstring show. Every DURATION is `neurogc_units::parse_duration`'s
/// (`30`, `1m30s`, `500ms`: a bare number is seconds), as on the command line.
pub const KNOWN_POLICIES: &str = "default, threshold:T0[,T1[,T2]], \
     periodic:DURATION[,rss=SIZE][,young=COUNT][,check=DURATION], freeze[:WARMUP], \
     neurogc-seed:MODEL_DIR[,threshold=T], \
     neurogc[:MODEL_DIR][,warmup=DURATION][,freeze=on|off][,quiet=P][,slack=DURATION][,max_wait=DURATION][,idle_wait=DURATION][,growth=F][,pause=DURATION][,cpu=F][,cadence=2a|cpu][,middle=auto|held][,bursts=any|gaps][,drift=follow|off][,rss=SIZE][,young=auto|off|N], \
     explore[:MEAN] (the default plus collections at random moments, for collect runs), \
     gc-off (a bound for bounded runs, no guard); \
     periodic, neurogc and neurogc-seed also take stagger=on (a service's workers take turns at \
     full collections); a DURATION is 30 (seconds), 1m30s, 500ms";

/// Default warm-up before `freeze` collects and freezes.
pub const DEFAULT_FREEZE_WARMUP: Duration = Duration::from_secs(5);

/// A parsed, validated policy spec.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    Default,
    Threshold(Vec<u64>),
    Periodic {
        every: Duration,
        guard: GuardConfig,
        /// `stagger=on`: its full collections take the service's lock ([`super::stagger`]).
        stagger: bool,
    },
    Freeze {
        warmup: Duration,
    },
    /// The learned scheduler: owns the old generation (see [`super::scheduler`]), with a model
    /// trained on the service (`neurogc train --model scheduler`) or without.
    Neurogc {
        config: SchedulerConfig,
        model: Option<PathBuf>,
    },
    /// CPython as is, plus collections at random moments (a mean gap apart), to learn from.
    Explore {
        mean: Duration,
    },
    /// Automatic collection off and nothing else: the lower bound of GC cost, for bounded runs
    /// only (no memory guard: memory grows with the garbage). Not a policy for production.
    GcOff,
    /// The seed's NeuroGC: a model's output each interval, a full collection above the threshold.
    NeurogcSeed {
        dir: PathBuf,
        threshold: Option<f32>,
        stagger: bool,
    },
}

/// A spec that does not parse, with the offending text and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub spec: String,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid policy spec {:?}: {}", self.spec, self.message)
    }
}

impl std::error::Error for SpecError {}

impl PolicySpec {
    /// Whether the policy turns automatic collection off (and so carries the memory guard).
    pub fn disables_automatic_gc(&self) -> bool {
        matches!(self, PolicySpec::Periodic { .. })
    }

    /// `stagger=on`: the policy's full collections take a lock the service's processes share,
    /// so at most one of them is in one at a time ([`super::stagger`]).
    pub fn stagger(&self) -> bool {
        match self {
            PolicySpec::Periodic { stagger, .. } | PolicySpec::NeurogcSeed { stagger, .. } => {
                *stagger
            }
            PolicySpec::Neurogc { config, .. } => config.stagger,
            _ => false,
        }
    }

    /// The RSS budget the spec names (`rss=SIZE`), in bytes; `None` when it names none (the
    /// guard then derives one from the RSS at start) or the policy has no guard.
    pub fn rss_budget(&self) -> Option<u64> {
        match self {
            PolicySpec::Periodic { guard, .. } => guard.rss_budget,
            PolicySpec::Neurogc { config, .. } => config.rss_budget,
            _ => None,
        }
    }

    /// What runs instead when [`PolicySpec::build`] fails (a model that cannot be loaded), and
    /// its text: the scheduler without its model but with the options of `text` (online
    /// estimates only), else CPython's default.
    pub fn fallback(&self, text: &str) -> (PolicySpec, String) {
        match self {
            PolicySpec::Neurogc { config, .. } => (
                PolicySpec::Neurogc {
                    config: *config,
                    model: None,
                },
                match text.trim().split_once(',') {
                    Some((_, options)) => format!("neurogc,{options}"),
                    None => "neurogc".into(),
                },
            ),
            _ => (PolicySpec::Default, "default".into()),
        }
    }

    /// The model directory the spec names, if any.
    pub fn model_dir(&self) -> Option<&std::path::Path> {
        match self {
            PolicySpec::NeurogcSeed { dir, .. } => Some(dir),
            PolicySpec::Neurogc { model, .. } => model.as_deref(),
            _ => None,
        }
    }

    /// Builds the policy; `spec` is the text it came from, kept for the samples. Fails only when
    /// a model cannot be loaded; the message names the file and the problem.
    pub fn build(&self, spec: &str) -> Result<Box<dyn Policy>, String> {
        let spec = spec.trim().to_string();
        Ok(match self {
            PolicySpec::Default => Box::new(DefaultPolicy::new(spec)),
            PolicySpec::Threshold(values) => Box::new(ThresholdPolicy::new(spec, values.clone())),
            PolicySpec::Periodic { every, guard, .. } => Box::new(MemoryGuard::new(
                Box::new(PeriodicPolicy::new(spec, *every)),
                *guard,
            )),
            PolicySpec::Freeze { warmup } => Box::new(FreezePolicy::new(spec, *warmup)),
            PolicySpec::GcOff => Box::new(GcOffPolicy::new(spec)),
            PolicySpec::Neurogc { config, model } => {
                let scheduler = Scheduler::new(spec, *config);
                match model {
                    Some(dir) => Box::new(scheduler.with_model(
                        neurogc_model::SchedulerModel::load(dir).map_err(|e| e.to_string())?,
                    )),
                    None => Box::new(scheduler),
                }
            }
            PolicySpec::Explore { mean } => Box::new(super::ExplorePolicy::new(
                spec,
                *mean,
                u64::from(std::process::id())
                    ^ std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64),
            )),
            PolicySpec::NeurogcSeed { dir, threshold, .. } => {
                Box::new(super::SeedPolicy::load(spec, dir, *threshold)?)
            }
        })
    }
}

impl FromStr for PolicySpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let err = |message: String| SpecError {
            spec: text.to_string(),
            message,
        };
        let trimmed = text.trim();
        // The name ends at the first ':' (positional values follow) or ',' (options only).
        let (name, rest) = match trimmed.find([':', ',']) {
            Some(i) => (trimmed[..i].trim(), Some(&trimmed[i + 1..])),
            None => (trimmed, None),
        };
        let mut positional = Vec::new();
        let mut options = Vec::new();
        if let Some(rest) = rest {
            for part in rest.split(',').map(str::trim) {
                if part.is_empty() {
                    return Err(err("empty value between commas".into()));
                }
                match part.split_once('=') {
                    Some((k, v)) => options.push((k.trim(), v.trim())),
                    None if options.is_empty() => positional.push(part),
                    None => {
                        return Err(err(format!(
                            "positional value {part:?} after key=value options"
                        )))
                    }
                }
            }
        }
        // `stagger=on|off`, for the policies that run full collections themselves.
        let mut stagger = false;
        let mut kept = Vec::with_capacity(options.len());
        for (k, v) in options {
            if k == "stagger" {
                stagger = parse_on_off(k, v).map_err(&err)?;
            } else {
                kept.push((k, v));
            }
        }
        let options = kept;
        if stagger && !matches!(name, "periodic" | "neurogc" | "neurogc-seed") {
            return Err(err(format!(
                "stagger=on needs a policy that runs the full collections itself (periodic, \
                 neurogc, neurogc-seed); under {name:?} CPython runs them"
            )));
        }
        let no_options = |options: &[(&str, &str)]| match options.first() {
            Some((k, _)) => Err(err(format!("policy {name:?} takes no option {k:?}"))),
            None => Ok(()),
        };
        match name {
            "default" => {
                if !positional.is_empty() {
                    return Err(err("default takes no arguments".into()));
                }
                no_options(&options)?;
                Ok(PolicySpec::Default)
            }
            "threshold" => {
                no_options(&options)?;
                if positional.is_empty() || positional.len() > 3 {
                    return Err(err(format!(
                        "threshold takes 1 to 3 integers (T0[,T1[,T2]]), got {}",
                        positional.len()
                    )));
                }
                let values = positional
                    .iter()
                    .map(|p| parse_gc_int(p).map_err(&err))
                    .collect::<Result<Vec<_>, _>>()?;
                if values[0] == 0 {
                    return Err(err(
                        "threshold T0 = 0 turns automatic GC off without a memory guard; use periodic:SECS instead"
                            .into(),
                    ));
                }
                if let Some(big) = values.iter().find(|&&v| v > MAX_GC_THRESHOLD) {
                    return Err(err(format!(
                        "threshold {big} is above {MAX_GC_THRESHOLD}: collection is as good as off, without a memory guard; use periodic:SECS (guarded) or neurogc instead"
                    )));
                }
                Ok(PolicySpec::Threshold(values))
            }
            "periodic" => {
                let [secs] = positional[..] else {
                    return Err(err(
                        "periodic takes one interval, e.g. periodic:30 or periodic:1m30s".into(),
                    ));
                };
                let every = parse_duration(secs).map_err(&err)?;
                if every < MIN_PERIOD {
                    return Err(err(format!(
                        "periodic interval {every:?} is below {MIN_PERIOD:?}: full collections that often would take the service's time"
                    )));
                }
                let guard = parse_guard(&options).map_err(&err)?;
                Ok(PolicySpec::Periodic {
                    every,
                    guard,
                    stagger,
                })
            }
            "freeze" => {
                no_options(&options)?;
                let warmup = match positional[..] {
                    [] => DEFAULT_FREEZE_WARMUP,
                    [w] => parse_duration(w).map_err(&err)?,
                    _ => {
                        return Err(err(
                            "freeze takes at most one warm-up, e.g. freeze:5s".into()
                        ))
                    }
                };
                Ok(PolicySpec::Freeze { warmup })
            }
            "neurogc" => {
                let model = match positional[..] {
                    [] => None,
                    [dir] => Some(PathBuf::from(dir)),
                    _ => {
                        return Err(err(
                            "neurogc takes at most one model directory, then options: \
                             neurogc:MODEL_DIR,warmup=10s"
                                .into(),
                        ))
                    }
                };
                parse_scheduler(&options)
                    .map(|cfg| PolicySpec::Neurogc {
                        config: SchedulerConfig { stagger, ..cfg },
                        model,
                    })
                    .map_err(&err)
            }
            "explore" => {
                no_options(&options)?;
                let mean = match positional[..] {
                    [] => super::explore::DEFAULT_EXPLORE_MEAN,
                    [m] => parse_duration(m).map_err(&err)?,
                    _ => {
                        return Err(err(
                            "explore takes at most one mean gap, e.g. explore:2s".into()
                        ))
                    }
                };
                if mean < super::explore::MIN_GAP {
                    return Err(err(format!(
                        "explore's mean gap {mean:?} is below {:?}",
                        super::explore::MIN_GAP
                    )));
                }
                Ok(PolicySpec::Explore { mean })
            }
            "gc-off" => {
                if !positional.is_empty() {
                    return Err(err("gc-off takes no arguments".into()));
                }
                no_options(&options)?;
                Ok(PolicySpec::GcOff)
            }
            "neurogc-seed" => {
                let [dir] = positional[..] else {
                    return Err(err(
                        "neurogc-seed takes one model directory, e.g. neurogc-seed:models/lstm"
                            .into(),
                    ));
                };
                let mut threshold = None;
                for (key, value) in &options {
                    match *key {
                        "threshold" => {
                            let t: f32 = value
                                .parse()
                                .map_err(|_| err(format!("threshold={value:?} is not a number")))?;
                            if !t.is_finite() {
                                return Err(err("threshold must be finite".into()));
                            }
                            threshold = Some(t);
                        }
                        other => {
                            return Err(err(format!(
                                "unknown option {other:?}; neurogc-seed takes threshold=T"
                            )))
                        }
                    }
                }
                Ok(PolicySpec::NeurogcSeed {
                    dir: PathBuf::from(dir),
                    threshold,
                    stagger,
                })
            }
            "" => Err(err(format!("empty policy name; known: {KNOWN_POLICIES}"))),
            other => Err(err(format!(
                "unknown policy {other:?}; known: {KNOWN_POLICIES}"
            ))),
        }
    }
}

fn parse_on_off(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("{key}={value:?} must be on or off")),
    }
}

fn parse_guard(options: &[(&str, &str)]) -> Result<GuardConfig, String> {
    let mut guard = GuardConfig::default();
    for (key, value) in options {
        match *key {
            "rss" => guard.rss_budget = Some(parse_size(value)?),
            "young" => {
                guard.young_budget = value
                    .parse()
                    .map_err(|_| format!("young={value:?} is not a whole number of objects"))?;
                if guard.young_budget == 0 {
                    return Err("young budget must be positive".into());
                }
            }
            "check" => {
                guard.check_every = parse_duration(value)?;
                if guard.check_every < Duration::from_millis(1) {
                    return Err("check interval must be at least 1ms".into());
                }
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; the memory guard takes rss=SIZE, young=COUNT, check=DURATION"
                ))
            }
        }
    }
    Ok(guard)
}

/// The largest threshold a `threshold` spec takes: beyond it collection is as good as off.
pub const MAX_GC_THRESHOLD: u64 = 1_000_000;
/// The shortest period a `periodic` spec takes.
pub const MIN_PERIOD: Duration = Duration::from_millis(10);

fn parse_scheduler(options: &[(&str, &str)]) -> Result<SchedulerConfig, String> {
    let mut c = SchedulerConfig::default();
    let fraction = |key: &str, value: &str| -> Result<f64, String> {
        match value.parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
            _ => Err(format!("{key}={value:?} must be a number from 0 to 1")),
        }
    };
    for (key, value) in options {
        match *key {
            "warmup" => c.warmup = parse_duration(value)?,
            "freeze" => {
                c.freeze = match *value {
                    "on" | "true" | "1" => true,
                    "off" | "false" | "0" => false,
                    _ => return Err(format!("freeze={value:?} must be on or off")),
                }
            }
            "quiet" => c.quiet = fraction(key, value)?,
            "max_wait" => c.max_wait = parse_duration(value)?,
            "idle_wait" => c.idle_wait = parse_duration(value)?,
            "slack" => c.slack = parse_duration(value)?,
            "growth" => c.growth = fraction(key, value)?,
            "pause" => {
                c.pause = parse_duration(value)?;
                if c.pause.is_zero() {
                    return Err("pause must be above 0 (e.g. pause=5ms)".into());
                }
            }
            "cpu" => {
                c.cpu = fraction(key, value)?;
                if c.cpu == 0.0 {
                    return Err("cpu must be above 0 (e.g. cpu=0.05)".into());
                }
            }
            "cadence" => {
                c.tail_cadence = match *value {
                    "2a" => TailCadence::TwiceLive,
                    "cpu" => TailCadence::Budget,
                    _ => return Err(format!("cadence={value:?} must be 2a or cpu")),
                }
            }
            "bursts" => {
                c.burst_windows = match *value {
                    "any" => BurstWindows::Any,
                    "gaps" => BurstWindows::IdleGaps,
                    _ => return Err(format!("bursts={value:?} must be any or gaps")),
                };
            }
            "drift" => {
                c.drift = match *value {
                    "follow" => PauseDrift::Follow,
                    "off" => PauseDrift::Off,
                    _ => return Err(format!("drift={value:?} must be follow or off")),
                }
            }
            "middle" => {
                c.middle = match *value {
                    "auto" => MiddleCollections::Automatic,
                    "held" => MiddleCollections::Held,
                    _ => return Err(format!("middle={value:?} must be auto or held")),
                }
            }
            "rss" => c.rss_budget = Some(parse_size(value)?),
            "young" => {
                c.young = match *value {
                    "auto" => YoungThreshold::Auto,
                    "off" => YoungThreshold::Off,
                    n => match n.parse::<u64>() {
                        Ok(n) if (1..=MAX_THRESHOLD).contains(&n) => YoungThreshold::Fixed(n),
                        _ => {
                            return Err(format!(
                                "young={value:?} must be auto, off or a threshold0 from 1 to {MAX_THRESHOLD}"
                            ))
                        }
                    },
                }
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; neurogc takes warmup, freeze, quiet, slack, max_wait, idle_wait, growth, pause, cpu, cadence, middle, bursts, drift, rss, young"
                ))
            }
        }
    }
    Ok(c)
}

/// A GC threshold: a non-negative C int.
fn parse_gc_int(text: &str) -> Result<u64, String> {
    let v: u64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a non-negative integer"))?;
    if v > i32::MAX as u64 {
        return Err(format!("{v} is larger than CPython accepts ({})", i32::MAX));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<PolicySpec, String> {
        s.parse::<PolicySpec>().map_err(|e| e.to_string())
    }

    #[test]
    fn valid_specs() {
        assert_eq!(parse("default").unwrap(), PolicySpec::Default);
        assert_eq!(
            parse(" threshold:5000,20,20 ").unwrap(),
            PolicySpec::Threshold(vec![5000, 20, 20])
        );
        assert_eq!(
            parse("threshold:2000").unwrap(),
            PolicySpec::Threshold(vec![2000])
        );
        assert_eq!(
            parse("freeze").unwrap(),
            PolicySpec::Freeze {
                warmup: DEFAULT_FREEZE_WARMUP
            }
        );
        assert_eq!(
            parse("freeze:500ms").unwrap(),
            PolicySpec::Freeze {
                warmup: Duration::from_millis(500)
            }
        );
        let PolicySpec::Periodic { every, guard, .. } =
            parse("periodic:30,rss=512M,young=5000,check=0.1").unwrap()
        else {
            panic!()
        };
        assert_eq!(every, Duration::from_secs(30));
        assert_eq!(guard.rss_budget, Some(512 << 20));
        assert_eq!(guard.young_budget, 5000);
        assert_eq!(guard.check_every, Duration::from_millis(100));
        assert!(parse("periodic:1").unwrap().disables_automatic_gc());
        assert_eq!(
            parse("periodic:30,rss=512M").unwrap().rss_budget(),
            Some(512 << 20)
        );
        assert_eq!(parse("neurogc,rss=1G").unwrap().rss_budget(), Some(1 << 30));
        for none in ["periodic:30", "neurogc", "default", "gc-off"] {
            assert_eq!(parse(none).unwrap().rss_budget(), None, "{none}");
        }
        assert_eq!(parse("gc-off").unwrap(), PolicySpec::GcOff);
        assert_eq!(
            parse("neurogc").unwrap(),
            PolicySpec::Neurogc {
                config: SchedulerConfig::default(),
                model: None
            }
        );
        assert_eq!(
            parse("neurogc:models/svc,warmup=10s").unwrap(),
            PolicySpec::Neurogc {
                config: SchedulerConfig {
                    warmup: Duration::from_secs(10),
                    ..SchedulerConfig::default()
                },
                model: Some("models/svc".into())
            }
        );
        assert!(parse("neurogc:a,b")
            .unwrap_err()
            .to_string()
            .contains("at most one model"));
        // Without its model, the scheduler keeps the options it was given.
        let (fallback, text) = parse("neurogc:m,warmup=10s")
            .unwrap()
            .fallback("neurogc:m,warmup=10s");
        assert_eq!(text, "neurogc,warmup=10s");
        assert_eq!(parse(&text).unwrap(), fallback);
        assert_eq!(
            parse("neurogc-seed:m")
                .unwrap()
                .fallback("neurogc-seed:m")
                .1,
            "default"
        );
        assert_eq!(
            parse("explore").unwrap(),
            PolicySpec::Explore {
                mean: Duration::from_secs(2)
            }
        );
        assert_eq!(
            parse("explore:500ms").unwrap(),
            PolicySpec::Explore {
                mean: Duration::from_millis(500)
            }
        );
        assert!(parse("explore:10ms").is_err() && parse("explore,rss=1G").is_err());
        let PolicySpec::Neurogc { config: c, .. } = parse(
            "neurogc,warmup=10s,freeze=off,quiet=0.8,slack=5ms,max_wait=500ms,idle_wait=0,growth=0.2,cpu=0.1,cadence=cpu,middle=held,bursts=gaps,drift=off,rss=1G,young=off",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            (c.warmup, c.freeze, c.quiet),
            (Duration::from_secs(10), false, 0.8)
        );
        assert_eq!((c.max_wait, c.growth), (Duration::from_millis(500), 0.2));
        assert_eq!(c.idle_wait, Duration::ZERO);
        assert_eq!(c.slack, Duration::from_millis(5));
        assert_eq!((c.cpu, c.rss_budget), (0.1, Some(1 << 30)));
        assert_eq!(c.young, YoungThreshold::Off);
        assert_eq!(c.tail_cadence, TailCadence::Budget);
        assert_eq!(c.middle, MiddleCollections::Held);
        assert_eq!(c.burst_windows, BurstWindows::IdleGaps);
        assert_eq!(c.drift, PauseDrift::Off);
        let PolicySpec::Neurogc { config: c, .. } = parse("neurogc,young=50000").unwrap() else {
            panic!()
        };
        assert_eq!(c.young, YoungThreshold::Fixed(50_000));
        for bad in [
            "neurogc,young=0",
            "neurogc,young=lots",
            "neurogc,cpu=0",
            "neurogc,quiet=2",
            "neurogc,freeze=maybe",
            "neurogc,cadence=often",
            "neurogc,middle=never",
            "neurogc,bursts=some",
            "neurogc,speed=1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("gc-off:1").is_err() && parse("gc-off,rss=1G").is_err());
        assert_eq!(
            parse("neurogc-seed:models/lstm,threshold=0.55").unwrap(),
            PolicySpec::NeurogcSeed {
                dir: PathBuf::from("models/lstm"),
                threshold: Some(0.55),
                stagger: false,
            }
        );
        assert_eq!(
            parse("neurogc-seed:m").unwrap(),
            PolicySpec::NeurogcSeed {
                dir: PathBuf::from("m"),
                threshold: None,
                stagger: false,
            }
        );
    }

    #[test]
    fn stagger_is_for_the_policies_that_run_full_collections() {
        for on in [
            "periodic:30,stagger=on",
            "periodic:30,rss=1G,stagger=1",
            "neurogc,stagger=on,warmup=5s",
            "neurogc-seed:m,stagger=true",
        ] {
            assert!(parse(on).unwrap().stagger(), "{on}");
        }
        for off in [
            "periodic:30",
            "periodic:30,stagger=off",
            "neurogc",
            "default",
        ] {
            assert!(!parse(off).unwrap().stagger(), "{off}");
        }
        for refused in [
            "default,stagger=on",
            "threshold:900,stagger=on",
            "freeze,stagger=on",
        ] {
            let e = parse(refused).unwrap_err().to_string();
            assert!(e.contains("stagger=on needs a policy that runs"), "{e}");
        }
        assert!(parse("periodic:30,stagger=maybe").is_err());
        // Off on any policy is no change.
        assert_eq!(parse("default,stagger=off").unwrap(), PolicySpec::Default);
    }

    /// Every duration in a spec is the command line's (`neurogc_units::parse_duration`): units,
    /// compound forms and bare seconds alike.
    #[test]
    fn spec_durations_are_the_command_lines() {
        let d = |s: &str| parse_duration(s).unwrap();
        for text in ["1m30s", "90", "90s", "1m 30s", "1.5m", "90000ms"] {
            let PolicySpec::Periodic { every, guard, .. } =
                parse(&format!("periodic:{text},check={text}")).unwrap()
            else {
                panic!("{text}")
            };
            assert_eq!((every, guard.check_every), (d(text), d(text)), "{text}");
            assert_eq!(every, Duration::from_secs(90), "{text}");
            assert_eq!(
                parse(&format!("freeze:{text}")).unwrap(),
                PolicySpec::Freeze { warmup: d(text) }
            );
            let PolicySpec::Neurogc { config: c, .. } = parse(&format!(
                "neurogc,warmup={text},max_wait={text},pause={text}"
            ))
            .unwrap() else {
                panic!("{text}")
            };
            assert_eq!((c.warmup, c.max_wait, c.pause), (d(text), d(text), d(text)));
        }
        assert_eq!(
            parse("neurogc,pause=5ms").unwrap(),
            parse("neurogc,pause=0.005").unwrap()
        );
        for bad in [
            "periodic:1m30",
            "freeze:5x",
            "neurogc,warmup=soon",
            "periodic:1,check=-1",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        assert!(KNOWN_POLICIES.contains("periodic:DURATION") && !KNOWN_POLICIES.contains("SECS"));
    }

    #[test]
    fn bad_specs_name_the_problem() {
        let cases = [
            ("", "empty policy name"),
            ("sometimes", "unknown policy \"sometimes\""),
            ("threshold", "1 to 3 integers"),
            ("threshold:1,2,3,4", "1 to 3 integers"),
            ("threshold:abc", "\"abc\" is not a non-negative integer"),
            ("threshold:-5", "not a non-negative integer"),
            ("threshold:0", "use periodic"),
            ("threshold:99999999999", "larger than CPython accepts"),
            ("periodic", "one interval"),
            ("periodic:0", "is below 10ms"),
            ("periodic:0.00001", "is below 10ms"),
            ("threshold:2147483647", "as good as off"),
            ("threshold:50000,500,1000000000", "is above 1000000"),
            ("periodic:soon", "not a duration"),
            ("periodic:10,rss=lots", "not a size"),
            ("periodic:10,budget=1", "unknown option \"budget\""),
            ("periodic:10,young=0", "young budget must be positive"),
            ("freeze:1,2", "at most one"),
            ("default:3", "no arguments"),
            ("threshold:700,,10", "empty value"),
            ("freeze,rss=1G", "policy \"freeze\" takes no option \"rss\""),
            ("neurogc-seed", "one model directory"),
            (
                "neurogc-seed:m,threshold=high",
                "threshold=\"high\" is not a number",
            ),
            ("neurogc-seed:m,window=3", "unknown option \"window\""),
        ];
        for (spec, expected) in cases {
            let e = parse(spec).expect_err(spec);
            assert!(e.contains(expected), "{spec:?}: {e}");
            assert!(
                e.contains(&format!("{spec:?}")),
                "error names the spec: {e}"
            );
        }
    }
}
