//! `neurogc`: the scheduler that owns the old generation.
//!
//! CPython's young collections stay automatic; automatic full collections are held back
//! (`threshold2` set out of reach), and the scheduler runs them itself, at moments it chooses:
//!
//! - **freeze** the warm heap once warm-up is over, so later full collections do not scan it;
//! - **collect** the old generation (what a frozen heap leaves of it: what was promoted since) on
//!   a cadence learned from outcomes, so each pause stays out of the p99 or small (`pause=`, 1 ms): the
//!   pause of a collection of the unfrozen part grows with the time since the last one, and
//!   the scheduler measures how fast; sooner when a quiet window makes it free; and whenever the
//!   memory grown since the last full collection passes a share of the live heap;
//! - **re-freeze** (unfreeze, collect, freeze) when the frozen part has gone stale: RSS keeps
//!   growing past what it was at the freeze while the unfrozen part is collected on time, which
//!   is garbage only an unfrozen collection can free. A re-freeze that gives little back makes
//!   the next one wait for twice the growth (learned from outcome); one that frees much of the
//!   frozen heap found a heap that turns over: it stays unfrozen, and CPython's own rule for
//!   full collections is given back (memory growth no longer collects; the guard still does);
//! - **choose the moment**: a pause is paid by the requests in flight and those arriving during
//!   it, so the scheduler waits for nothing in flight and a high chance that the predicted pause
//!   passes without an arrival ([`crate::traffic`]); a need that finds no quiet window within
//!   `max_wait` is served anyway, at a moment with nothing in flight where one comes within
//!   `idle_wait`.
//!
//! Nothing is decided during the warm-up (the service builds its heap: growth then is not
//! garbage); at its end the live heap is the baseline and the budget is set from it. Where a
//! middleware counts the requests, the warm-up is serving time, from the first request: a
//! start-up that outlasts it is not frozen half-built.
//!
//! Pause costs are learned from its own collections (timed around each call, kept per kind:
//! full, full after a freeze, re-freeze). A memory guard sits under every decision: RSS above
//! the budget is collected at once (the unfrozen part, then at the next turn the whole heap,
//! unfreezing, if that left RSS above it), and a budget live memory exceeds is reported, never
//! raised; while memory stays above it after a collection of the whole heap, the guard collects
//! at most once a second (and not more than 5 % of the time), so it never starves the service.
//! On a collector it cannot control safely (3.14.0–3.14.4's incremental one, free-threaded
//! builds) it observes only, and says so.

use std::time::Duration;

use neurogc_model::scheduler::quiet_inputs;
use neurogc_model::SchedulerModel;

use super::line::Line;
use super::young::{Window, YoungThreshold, YoungTuner};
use super::{Action, Collector, GcControl, GcError, Intent, Observation, Policy, Trigger};
use crate::traffic::Bursts;

/// `threshold2` out of reach: CPython never starts a full collection by itself.
pub const HELD_BACK: u64 = i32::MAX as u64;

/// The scheduler's settings (`neurogc,key=value,...`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// Warm-up before the heap is frozen: counted from the first request where a middleware
    /// counts them, else from the agent's start.
    pub warmup: Duration,
    /// Freeze the warm heap (and re-freeze when stale).
    pub freeze: bool,
    /// The smallest chance of a quiet window worth waiting for.
    pub quiet: f64,
    /// How long a need may wait for a quiet window.
    pub max_wait: Duration,
    /// How long a need that goes without a quiet window (it waited `max_wait`, waiting stopped
    /// paying, or memory cannot wait) still waits for nothing in flight (`idle_wait=`, 0: not
    /// at all). A request in flight waits the whole pause; one arriving during it waits only
    /// what is left of it.
    pub idle_wait: Duration,
    /// Growth of memory since the last full collection, as a share of the live heap then, that
    /// makes one needed.
    pub growth: f64,
    /// ... and at least this many bytes.
    pub min_growth: u64,
    /// RSS budget (default: twice the RSS at the end of the warm-up, and at least 256 MiB
    /// above it).
    pub rss_budget: Option<u64>,
    /// A full collection in a quiet window is free: one may come this long after the last
    /// (sooner after half a cadence of work, or, where the due collections meet requests, once
    /// its pause is at most `cpu` of the time since the last).
    pub opportunistic: Duration,
    /// How long a pause may delay an arrival and still count as quiet: a request that waits a
    /// millisecond or two does not move the p99, and at a steady rate the next arrival comes a
    /// gap after the last, so a window with no arrival for the whole pause never comes where
    /// the pause is longer than the idle time after a request (on large-heap at 72 req/s, 6 ms
    /// after requests of 8 ms, against collections of 10-20 ms).
    pub slack: Duration,
    /// The pause a collection of the unfrozen part need not go below. Where the pauses are in
    /// the p99 whatever the cadence, each one adds itself to the requests it delays, so they are
    /// kept small ([`Scheduler::cadence`]), down to this: a few young collections' worth
    /// (0.1-0.5 ms each on the suite). (At 5 ms, churn's collections, pauses of the garbage
    /// alone, stayed 5 ms long where CPython's rule after a freeze runs 1 ms ones: replayed
    /// through the simulator on the suite's churn run at 190 req/s, p99 9.3 ms at 5 ms, 8.8 at
    /// 3 ms, 8.4 at 2 ms and below, against `freeze:3`'s 7.4.)
    pub pause: Duration,
    /// The share of the time the collections of the unfrozen part should take at most where
    /// their pauses are in the p99 whatever the cadence: past it they come more rarely than
    /// every `a / b`, up to [`BUDGET_STRETCH`] times; where the garbage alone takes more, every
    /// `a / b`. (CPython's own rule after a freeze spends about 7 % on large-heap at 160 req/s:
    /// 20 collections of 15-30 ms per 6 s.)
    pub cpu: f64,
    /// How often where the pauses are in the p99 whatever the cadence (`cadence=`): every
    /// `a / b`, pauses of `2a` (the default), or as often as the CPU budget allows, the
    /// shortest pauses it affords ([`Scheduler::cadence`]).
    pub tail_cadence: TailCadence,
    /// Who runs the middle generation's collections after the warm-up (`middle=`).
    pub middle: MiddleCollections,
    /// Where the traffic comes in bursts, which windows may be quiet (`bursts=`).
    pub burst_windows: BurstWindows,
    /// Whether a predicted pause of the unfrozen part follows the recent collections where
    /// they all paused longer than the pause line says (`drift=`).
    pub drift: PauseDrift,
    /// threshold0: tuned by experiment after the freeze, left as it is, or set.
    pub young: YoungThreshold,
    /// `stagger=on`: full collections take the service's lock (the agent wraps the policy).
    pub stagger: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            warmup: Duration::from_secs(3),
            freeze: true,
            quiet: 0.9,
            max_wait: Duration::from_secs(2),
            idle_wait: Duration::from_millis(100),
            growth: 0.10,
            min_growth: 4 << 20,
            rss_budget: None,
            opportunistic: Duration::from_secs(1),
            slack: Duration::from_millis(2),
            pause: Duration::from_millis(1),
            cpu: 0.10,
            tail_cadence: TailCadence::TwiceLive,
            middle: MiddleCollections::Automatic,
            burst_windows: BurstWindows::Any,
            drift: PauseDrift::Follow,
            young: YoungThreshold::Auto,
            stagger: false,
        }
    }
}

/// How often the unfrozen part is collected where no cadence keeps its pauses out of the p99
/// ([`SchedulerConfig::tail_cadence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailCadence {
    /// `cadence=2a`: every `a / b`, pauses twice what stays live. Near the best cadence's p99
    /// in a single-server queue with Poisson arrivals (bench/suite/cadence_queue.py).
    TwiceLive,
    /// `cadence=cpu`: as often as the CPU budget (`cpu=`) allows, the shortest pauses it
    /// affords (the rule before `2a`). Replayed on large-heap, the best schedule without
    /// foresight collected every 10 requests, but live, in turns with `2a` on every workload,
    /// it was slower on three (1.22-1.25×) and faster on none (bench/suite/option-ab-cpu.md):
    /// an option, so that the comparison can be run again.
    Budget,
}

/// Who runs the middle generation's (generation 1's) collections once the warm-up is over
/// ([`SchedulerConfig::middle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiddleCollections {
    /// `middle=auto`: CPython, every `threshold1` young collections, wherever they fall.
    Automatic,
    /// `middle=held`: the scheduler's own collections, which run at quiet moments where there
    /// are some. CPython's middle collections come in the middle of requests: on orm they
    /// paused 0.65 ms (up to 2 ms) and overlapped 25 of its 33 slowest requests, where the
    /// scheduler's quiet collections of the unfrozen part paused 0.38 ms and delayed no one
    /// (bench/suite/option_ab.sh run at 7f44b0a); on large-heap and bursty they freed nothing.
    /// What they would have freed waits for the scheduler's next collection instead. Live, in
    /// turns with `auto` on every workload, faster on two, slower on three, the intervals
    /// overlapping, median 1.06× (bench/suite/option-ab-held.md): an option, not the default.
    Held,
}

/// How a collection of the unfrozen part is predicted where the recent ones paused longer than
/// the pause line fitted to the last 16 ([`SchedulerConfig::drift`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseDrift {
    /// `drift=follow`: the line is lifted by the least of the last [`DRIFT_POINTS`] residuals
    /// where all of them are above it (the default). What stays live in the unfrozen part can
    /// grow with the time since the freeze (a cache turning over, a queue building), and a line
    /// through older, shorter pauses then undershoots every prediction: on growing-cache at
    /// 6136cdc an opportunistic collection predicted at 13 ms took 94; on large-heap, run
    /// past its capacity, the due collections took 1.5× and the quiet ones 3.3× what was
    /// predicted (median), and a quiet window judged for a short pause was none.
    Follow,
    /// `drift=off`: the line alone. An option, so that the comparison can be run again.
    Off,
}

/// The most recent pauses that must all lie above the pause line before the prediction
/// follows them ([`PauseDrift::Follow`]): one or two above it are the noise of a fit.
const DRIFT_POINTS: usize = 3;

/// Where the traffic comes in bursts with idle gaps between them, which windows a collection
/// may count as quiet ([`SchedulerConfig::burst_windows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BurstWindows {
    /// `bursts=any`: any window the arrivals leave, inside a burst too (the default).
    Any,
    /// `bursts=gaps`: the idle gaps only, a silence past the one that makes an idle gap
    /// (`Traffic::bursts`). On bursty in the suite run at dd5bf54 the quiet collections of the
    /// scored turns were nearly all inside bursts (14, 5 and 9 of `neurogc`'s, `neurogc-own`'s
    /// and `neurogc-loo`'s, 1 in an idle gap among them), and the requests they met took up to
    /// 12 ms against a median of 4.4. Live, in turns with `any` (15 rounds, bursty alone: the
    /// only workload of the suite whose traffic the scheduler finds bursty), none came inside
    /// a burst, but the work they had done fell to due collections, which met 29-30 of the
    /// slowest 1 % against 14-20: p99 1.5× and 1.34× in two runs, the intervals overlapping
    /// (bench/suite/option-ab-any.md, run while `gaps` was the default, and
    /// option-ab-gaps.md). An option, so that the comparison can be run again.
    IdleGaps,
}

/// A running estimate (exponentially weighted) of one kind of pause.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Estimate {
    value: Option<f64>,
}

impl Estimate {
    const WEIGHT: f64 = 0.3;

    fn new() -> Self {
        Estimate { value: None }
    }

    fn add(&mut self, x: f64) {
        self.value = Some(match self.value {
            None => x,
            Some(v) => v + Self::WEIGHT * (x - v),
        });
    }

    fn or(&self, prior: f64) -> f64 {
        self.value.unwrap_or(prior)
    }
}

/// What the scheduler is about to do, and why.
#[derive(Clone, Debug, PartialEq)]
enum Plan {
    /// A full collection (the guard's: now, whatever the traffic).
    Collect { why: String, trigger: Trigger },
    /// Collect and freeze the warm heap.
    Freeze,
    /// Unfreeze, collect, freeze. `early`: within seconds of the freeze ([`FAST_TURNOVER`]).
    Refreeze {
        why: String,
        trigger: Trigger,
        early: bool,
    },
}

impl Plan {
    fn trigger(&self) -> Trigger {
        match self {
            Plan::Collect { trigger, .. } | Plan::Refreeze { trigger, .. } => *trigger,
            Plan::Freeze => Trigger::Freeze,
        }
    }
}

/// Who runs the full collections.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FullCollections {
    /// CPython, as it would: the warm-up is not over.
    Warming,
    /// The scheduler: CPython's `threshold2` (kept to give back) is held out of reach, and
    /// `threshold1` too under `middle=held`, where it is kept here as the number of young
    /// collections after which something is worth collecting ([`Scheduler::promoted`]).
    Held { threshold1: u64, threshold2: u64 },
    /// CPython again, `threshold2` given back: the heap is left unfrozen (it turns over), and
    /// its rule alone collects it, as under the default; memory growth no longer does (the
    /// guard still does).
    GivenBack,
}

/// A collection the guard ran.
#[derive(Clone, Copy, Debug)]
struct GuardTurn {
    at: Duration,
    /// It scanned the whole heap (nothing frozen, or a re-freeze); otherwise the frozen part,
    /// which may hold the garbage, is still to come.
    whole_heap: bool,
}

/// What moves in a process that is doing something: an idle one moves none of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Moving {
    rss: Option<u64>,
    collections: Option<[u64; 3]>,
    arrivals: Option<u64>,
}

/// The policy.
pub struct Scheduler {
    spec: String,
    cfg: SchedulerConfig,
    /// Observe only (a collector it cannot control safely).
    observing: bool,
    budget: u64,
    frozen: bool,
    /// The heap's memory in use right after the last full collection (the live heap, as far
    /// as the process can tell: RSS less what the allocator holds free).
    live_after_full: Option<u64>,
    /// Growth past `in_use_at_freeze` that makes the frozen part stale (doubles when a re-freeze
    /// gives little back).
    stale_growth: f64,
    last_full: Duration,
    /// The work done by then (see [`Scheduler::work`]).
    last_full_work: f64,
    /// Middle-generation collections finished by then (see [`Scheduler::promoted`]).
    last_full_middle: u64,
    /// Young collections at the last full one (`middle=held`'s [`Scheduler::promoted`]).
    last_full_young: u64,
    /// Since when a collection has been needed but not yet run.
    needed_since: Option<Duration>,
    /// Since when such a need, going without a quiet window, has waited for nothing in flight
    /// ([`SchedulerConfig::idle_wait`]).
    held_since: Option<Duration>,
    pause_full: Estimate,
    pause_frozen: Estimate,
    pause_refreeze: Estimate,
    /// Pauses of collections of the unfrozen part against the time since the previous one.
    pause_model: PauseModel,
    /// Objects a collection (not a freeze or re-freeze) freed per unit of work since the
    /// last full collection: what the next one is expected to free.
    freed_per_work: Estimate,
    /// The process's CPU time (ms a second) against the requests a second, a point per sample:
    /// how busy the service is at a rate ([`Scheduler::busy`], [`queue_factor`]).
    load: Line,
    /// When the scheduler last collected the whole heap (freeze, re-freeze, or unfrozen).
    whole_heap_at: Duration,
    /// RSS when the heap was (re-)frozen.
    in_use_at_freeze: Option<u64>,
    /// Reported once: live memory above the budget.
    over_budget_said: bool,
    /// When the warm-up ended (baseline and budget set then).
    warmed_at: Option<Duration>,
    /// When the service began serving (its first request), where a middleware counts them: the
    /// warm-up is counted from it ([`Scheduler::warmed_up`]).
    serving_since: Option<Duration>,
    /// When the heap was last (re-)frozen.
    frozen_at: Duration,
    /// The work done by then (see [`Scheduler::work`]).
    frozen_work: f64,
    /// [`FAST_TURNOVER`] as work, fixed at the (re-)freeze from the traffic then (a rate read
    /// later would stretch it after a lull), and whether it counts requests.
    fast_window: (f64, bool),
    /// The lowest memory in use a collection left since the last (re-)freeze: where the frozen
    /// part's garbage starts from ([`FAST_TURNOVER`]).
    floor_since_freeze: Option<u64>,
    /// A re-freeze within seconds of the freeze found no heap that turns over: not again.
    early_refuted: bool,
    /// When the policy was last asked (ticks are counted from it).
    asked: Duration,
    /// What the last ask saw move (RSS, collections, arrivals), and how many asks in a row saw
    /// none of it move: an idle process is asked less often ([`Scheduler::next_tick`]).
    last_seen: Option<Moving>,
    still: u32,
    /// The guard's last collection.
    guard_fired: Option<GuardTurn>,
    /// How often a needed collection found its quiet window before the wait ran out (1) or
    /// not (0), recent ones weighing most: where they seldom do, waiting only grows the pause.
    quiet_found: Estimate,
    /// Needed collections run without waiting since quiet windows proved rare; every
    /// [`PROBE_EVERY`]th waits again (`probing`), so a change in the traffic is noticed.
    not_waited: u32,
    probing: bool,
    /// The experiment on threshold0 (`young=auto`), from the first sample after the freeze.
    young: Option<YoungTuner>,
    /// The cadence is stretched by this factor: doubled by each due collection that paused
    /// longer than the target yet freed little ([`LOW_YIELD`]), back to 1 when one frees much.
    stretch: f64,
    /// A collection in a quiet window could come at any moment: ticks are fast.
    quiet_worth_watching: bool,
    /// Who runs the full collections: CPython until the warm-up ends, then the scheduler,
    /// or CPython again once the heap is left unfrozen.
    full: FullCollections,
    /// The last collection for memory growth, of what the freeze left, freed next to nothing.
    growth_freed_little: bool,
    /// The heap turns over faster than a freeze lasts: it stays unfrozen.
    no_freeze: bool,
    /// Objects the collections of the unfrozen part freed since the last (re-)freeze: the old
    /// garbage that died outside the frozen part, against which a stale re-freeze's yield is
    /// weighed ([`turns_over`]).
    freed_unfrozen: u64,
    /// A model trained on the service (`neurogc:MODEL_DIR`): its priors stand in for the
    /// built-in guesses until the scheduler's own collections teach it, and its net answers
    /// the quiet-window question.
    model: Option<SchedulerModel>,
    /// The net's scratch memory (no allocation per question).
    scratch: Vec<f32>,
    /// The net's last answer (asked without the interpreter), for `tick` to reuse.
    net_answer: Option<NetAnswer>,
    /// In `tick`: the interpreter is held, the net is not run.
    attached: bool,
}

/// The quiet-window net's answer to one question.
#[derive(Clone, Copy, Debug, PartialEq)]
struct NetAnswer {
    at_ns: u64,
    /// The part of the pause asked about (the pause less the slack).
    window_ms: f64,
    p: f64,
}

/// A collection for memory growth that frees fewer objects than this found no garbage where it
/// looked.
const GROWTH_FREED_LITTLE: u64 = 1_000;

/// The share of the memory in use at the freeze a frozen heap may gain before it is stale (it
/// doubles after each re-freeze that collects little).
const STALE_GROWTH: f64 = 0.10;

/// Memory in use a frozen heap may gain past the freeze's, on top of `stale_growth`, before it
/// is stale: the request objects frozen with the warm heap and the allocator's fragmentation
/// are not worth a pause of the whole heap. (Measured on large-heap: at 8 MiB, the 256 request
/// traces frozen with the catalogue, about 85 k objects, put a 490 ms re-freeze into a 24 s run.)
const STALE_MARGIN: u64 = 16 << 20;

/// A frozen heap whose memory in use after its collections rises by the staleness margin (the
/// growth share, 10 % of the live heap, + 16 MiB) over the lowest since the freeze, within this
/// much serving time of it, turns over within seconds: the warm heap was mostly objects that
/// die soon after (cycle-leak's documents, retired ~3 s after they were stored). It is
/// re-frozen then, and stops freezing where that re-freeze freed [`TURNOVER_SHARE`] of the
/// frozen objects (the other test of [`turns_over`] says little so soon); else it is frozen
/// again, and this rule is off from then on. The window is work: requests at the traffic's
/// rate at the freeze, where a middleware counts them, else seconds.
/// The staleness limit proper is counted from the memory in use before the freeze's
/// collection, which holds the garbage that collection frees: on cycle-leak 27 MiB of the
/// 140, so the frozen documents had died twice over before it was reached (peak RSS 1.17-1.21×
/// the default's, over the 1.10× bound). Counted from what the freeze left, but only this
/// soon after it: from there on growing-cache's turning-over cache reached it within a run too
/// (a 485 ms re-freeze). (Measured from the lowest floor after the freeze: cycle-leak +42 MiB
/// of 140 within 3 s at 350 req/s; growing-cache +23 of 199 in 20 s at 150 req/s; large-heap
/// +9 of 255 in 20 s at 130 req/s.)
const FAST_TURNOVER: Duration = Duration::from_secs(10);

/// Whether a stale re-freeze that freed `freed` objects, of `frozen` frozen before it, found a
/// heap that turns over, where the collections of the unfrozen part had freed `freed_unfrozen`
/// since the freeze. Either it freed [`TURNOVER_SHARE`] of the frozen objects, or most of the old
/// garbage died frozen: it freed more than all those collections did. Then a re-freeze, a pause
/// of the whole heap, comes each time the frozen part's garbage reaches the staleness limit
/// (10 % + 16 MiB), at least as often as CPython's rule collects the whole heap (at a quarter of
/// the old generation's growth), and the freeze spared little in between: the collections it
/// made cheap found little. (On growing-cache, at 4a2426a, over 3 turns of 60 s: the first
/// stale re-freeze freed 166 k objects, under 40 % of the frozen ones, where the unfrozen part's
/// collections had freed 10 k; frozen again, the second paused 780 ms, and p99.9 was 1.7× the
/// default's.)
fn turns_over(freed: u64, frozen: Option<u64>, freed_unfrozen: u64) -> bool {
    freed_a_share(freed, frozen) || freed > freed_unfrozen
}

fn freed_a_share(freed: u64, frozen: Option<u64>) -> bool {
    frozen.is_some_and(|f| f > 0 && freed as f64 >= TURNOVER_SHARE * f as f64)
}

/// Which of [`turns_over`]'s tests a re-freeze passed, in words.
fn turnover_evidence(freed: u64, frozen: Option<u64>, freed_unfrozen: u64) -> String {
    match frozen.filter(|_| freed_a_share(freed, frozen)) {
        Some(f) => format!(
            "it freed {:.0} % of the frozen objects ({:.0} % or more)",
            100.0 * freed as f64 / f as f64,
            TURNOVER_SHARE * 100.0
        ),
        None => format!(
            "it freed more than the {freed_unfrozen} objects the collections of the unfrozen part \
             freed since the freeze: most of the old garbage died frozen"
        ),
    }
}

/// A stale re-freeze that frees this share of the frozen objects found a heap that turns over
/// (long-lived objects that die some seconds later, not a warm heap that stays); the scheduler
/// then stops freezing: every freeze would go stale and hold the garbage until the next
/// re-freeze, a full pause each time. (Measured on cycle-leak: 55-60 % freed each time, and
/// waiting for a second such re-freeze cost the run 1.17× the default's peak RSS; a cache that
/// only grows and evicts never went stale.)
const TURNOVER_SHARE: f64 = 0.4;

/// Objects freed per ms of pause below which a collection of the unfrozen part mostly scanned
/// live objects: collecting as often buys little memory for its pauses, so the cadence
/// stretches and the growth trigger and the guard bound the memory. (Measured: 20-110 where
/// the unfrozen part is a turning-over cache, 600-3600 where it holds request garbage.)
pub const LOW_YIELD: f64 = 200.0;
const MAX_STRETCH: f64 = 64.0;

/// A collection shorter than this (ms) is not judged by its yield: its fixed cost is much of it,
/// and it costs too little to stretch the cadence for.
const JUDGED_MS: f64 = 5.0;

/// The share of requests the old generation's collections may delay: below it their pauses stay
/// out of the p99 (half of its 1 %, for the requests a pause delays that the model misses).
pub const TAIL_SHARE: f64 = 0.005;

/// The share of requests the old generation's collections may still delay once the garbage's own
/// share of the pauses is paid (`rate` in units of work per second, `b` in ms per unit, `queue`
/// from [`queue_factor`]): at or below 0 no cadence keeps them out of the p99.
fn tail_room(rate: f64, b: f64, queue: f64) -> f64 {
    TAIL_SHARE - rate * b * queue / 1e3
}

/// How many times its own length a pause delays arrivals at utilisation `busy` (the share of
/// the time the service is serving): the requests arriving during the pause wait, and so do those
/// arriving while the queue it left drains, at the rate `1 - busy` the service has to spare:
/// `1 / (1 - busy)`. (Counted as the pause alone, churn at 65 % busy looked able to keep 34-49 ms
/// pauses every 986 requests out of its p99, and they made it 2.7× `freeze:3`'s.) At most 10:
/// beyond 90 % busy the service's own queue is the tail.
fn queue_factor(busy: f64) -> f64 {
    1.0 / (1.0 - busy.clamp(0.0, 0.9))
}

/// Memory grown past the growth trigger, as a multiple of it, beyond which a need waits for no
/// quiet window. (Measured on cycle-leak, 12 MiB/s of documents: waiting up to `max_wait`, 2 s,
/// took the peak RSS to 1.34× the default's and the growth collections to 140-190 ms, against
/// 70-90 ms for those on time; churn's freeze after the warm-up, 2 s late, held 1.09× the
/// default's peak before anything else ran.)
const WAIT_HEADROOM: f64 = 1.25;

/// How far past the intervals it was measured at the cadence may step in one go: a line fitted
/// to pauses at about one interval says little of much longer ones, and the next collection
/// measures the step. (On large-heap, a slope fitted near 0 from points at 22-25 requests
/// made the cadence 204 and 609 requests: those collections paused 117-200 ms against 13-18 ms.)
const STEP_OUT: f64 = 1.5;

/// Before the pause model has three points, the cadence starts at the first value of each pair
/// and steps out ([`STEP_OUT`]) to the second: in requests where a middleware counts them, else
/// in seconds of work.
const FIRST_INTERVAL: ((f64, f64), (f64, f64)) = ((50.0, 400.0), (0.25, 2.0));

/// How many times `a / b` the cadence may stretch to keep the collections within the CPU budget
/// (pauses of up to `5a`): close to the garbage's own share, the budget would ask for pauses
/// without bound, and at or over it nothing keeps it (then every `a / b`).
const BUDGET_STRETCH: f64 = 4.0;

/// How far apart (a ratio) the samples' request rates must be before the CPU time they took is
/// split into a fixed part and a part per request ([`Scheduler::busy`]): closer together, the
/// slope is the noise of a few samples.
const RATE_SPREAD: f64 = 1.5;

/// Below this share of needed collections that found a quiet window, they stop waiting.
const WORTH_WAITING: f64 = 0.2;
const PROBE_EVERY: u32 = 8;

/// Pauses (ms) of collections of the unfrozen part against the work since the one before: the
/// most recent ones, fitted to `a + b·w` ([`Line`]).
#[derive(Clone, Debug, Default, PartialEq)]
struct PauseModel {
    line: Line,
    /// `(a, b)` from a model of the service (per request), until three points exist.
    prior: Option<(f64, f64)>,
}

impl PauseModel {
    fn add(&mut self, w: f64, ms: f64) {
        self.line.add(w, ms);
    }

    /// The mean interval measured.
    fn mean_interval(&self) -> Option<f64> {
        let n = self.line.len();
        (n > 0).then(|| self.line.xs().sum::<f64>() / n as f64)
    }

    /// The shortest pause measured.
    fn shortest(&self) -> Option<f64> {
        self.line.ys().reduce(f64::min)
    }

    /// The longest interval measured.
    fn longest_interval(&self) -> Option<f64> {
        self.line.xs().reduce(f64::max)
    }

    /// `(a, b)` once three points exist; with one interval length only, all of the pause is
    /// taken as growth (`a` = 0).
    fn fit(&self) -> Option<(f64, f64)> {
        (self.line.len() >= 3).then(|| self.line.fit()).flatten()
    }

    /// How far (ms) the last [`DRIFT_POINTS`] pauses all lie above the line `(a, b)` fitted to
    /// them ([`PauseModel::fit`]): the least of their residuals, or 0 where one of them is on it
    /// or below.
    fn drift(&self, (a, b): (f64, f64)) -> f64 {
        self.line
            .recent(DRIFT_POINTS)
            .map(|(w, ms)| ms - (a + b * w))
            .reduce(f64::min)
            .map_or(0.0, |least| least.max(0.0))
    }
}

/// A duration of `secs` seconds, kept within an hour (an estimate out of bounds must not
/// panic the sampler).
fn secs(secs: f64) -> Duration {
    Duration::from_secs_f64(if secs.is_finite() {
        secs.clamp(0.0, 3600.0)
    } else {
        3600.0
    })
}

/// Pauses assumed before any is measured, ms: a full collection of a fresh heap, and of what a
/// frozen one leaves.
const PRIOR_FULL_MS: f64 = 50.0;
const PRIOR_FROZEN_MS: f64 = 5.0;

impl Scheduler {
    pub fn new(spec: impl Into<String>, cfg: SchedulerConfig) -> Self {
        Scheduler {
            spec: spec.into(),
            cfg,
            observing: false,
            budget: u64::MAX,
            frozen: false,
            live_after_full: None,
            stale_growth: STALE_GROWTH,
            last_full: Duration::ZERO,
            last_full_work: 0.0,
            last_full_middle: 0,
            last_full_young: 0,
            needed_since: None,
            held_since: None,
            pause_full: Estimate::new(),
            pause_frozen: Estimate::new(),
            pause_refreeze: Estimate::new(),
            pause_model: PauseModel::default(),
            freed_per_work: Estimate::new(),
            load: Line::default(),
            whole_heap_at: Duration::ZERO,
            in_use_at_freeze: None,
            over_budget_said: false,
            warmed_at: None,
            serving_since: None,
            frozen_at: Duration::ZERO,
            frozen_work: 0.0,
            fast_window: (0.0, false),
            floor_since_freeze: None,
            early_refuted: false,
            asked: Duration::ZERO,
            last_seen: None,
            still: 0,
            guard_fired: None,
            quiet_found: Estimate { value: Some(0.5) },
            not_waited: 0,
            probing: false,
            young: None,
            stretch: 1.0,
            quiet_worth_watching: false,
            full: FullCollections::Warming,
            growth_freed_little: false,
            no_freeze: false,
            freed_unfrozen: 0,
            model: None,
            scratch: Vec::new(),
            net_answer: None,
            attached: false,
        }
    }

    /// The scheduler with a model of the service (`neurogc:MODEL_DIR`).
    pub fn with_model(mut self, model: SchedulerModel) -> Self {
        let p = &model.meta.priors;
        self.pause_model.prior = p.unfrozen_a_ms.zip(p.unfrozen_b_ms);
        self.scratch = model.scratch();
        self.model = Some(model);
        self
    }

    /// What the model brings, for the start action.
    fn model_summary(&self) -> String {
        let Some(m) = &self.model else {
            return "no model: every estimate is learned online".into();
        };
        let trained = format!("model trained on {} run(s)", m.meta.data.len());
        if m.adds_nothing() {
            return format!(
                "{trained} adds nothing (its net did not beat the online estimate on held-out \
                 moments, and it has no priors): every estimate is learned online, as without one"
            );
        }
        let p = &m.meta.priors;
        let ms = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v:.1} ms"));
        format!(
            "{trained}: quiet windows by {}; priors: full pause {}, unfrozen pause {} + {} per \
             request",
            if m.uses_net() {
                "its net"
            } else {
                "the online estimate (the net did not beat it on held-out moments)"
            },
            ms(p.full_pause_ms),
            ms(p.unfrozen_a_ms),
            p.unfrozen_b_ms
                .map_or("none".into(), |b| format!("{b:.3} ms"))
        )
    }

    /// The objects a collection now is expected to free: its own estimate per unit of work,
    /// else the model's per request; none before either exists.
    fn predicted_freed(&self, obs: &Observation) -> Option<f64> {
        let per_work = self.freed_per_work.value.or_else(|| {
            obs.traffic
                .and(self.model.as_ref())
                .and_then(|m| m.meta.priors.freed_per_request)
        })?;
        Some(per_work * (Self::work(obs) - self.last_full_work).max(0.0))
    }

    /// The pause of a full collection of the whole heap, before one is measured.
    fn prior_full_ms(&self) -> f64 {
        self.model
            .as_ref()
            .and_then(|m| m.meta.priors.full_pause_ms)
            .unwrap_or(PRIOR_FULL_MS)
    }

    /// The pause of a collection of what the freeze left, before one is measured: the model's
    /// `a + b·w` for the work since the last full collection, else the built-in guess.
    fn prior_frozen_ms(&self, obs: &Observation) -> f64 {
        match self.pause_model.prior.filter(|_| obs.traffic.is_some()) {
            Some((a, b)) => a + b * (Self::work(obs) - self.last_full_work).max(0.0),
            None => PRIOR_FROZEN_MS,
        }
    }

    /// The pause model's `(a, b)`: its own fit, or (per request, so only where requests are
    /// counted) the model's prior until it has one.
    fn pause_fit(&self, obs: &Observation) -> Option<(f64, f64)> {
        self.pause_model
            .fit()
            .or(self.pause_model.prior.filter(|_| obs.traffic.is_some()))
    }

    /// How long (ms) an arrival may wait for a pause and the pause still count as quiet: the
    /// slack (`slack=`), but none where the traffic comes in bursts (`burst`, from
    /// [`Scheduler::burst`], asked once per decision). There a request a pause delays arrived
    /// in a burst, behind others: its latency is already the tail, and the idle gap after the
    /// burst is a real window, soon (docs/scheduler.md, "When").
    fn slack_ms(&self, burst: Option<Bursts>) -> f64 {
        if burst.is_some() {
            0.0
        } else {
            self.cfg.slack.as_secs_f64() * 1e3
        }
    }

    /// Where the traffic comes in bursts, the longest one remembered and the idle gap
    /// (`Traffic::bursts` for a pause of `pause_ms`: it sorts the ring's gaps, so once per
    /// decision).
    fn burst(&self, obs: &Observation, pause_ms: f64) -> Option<Bursts> {
        obs.traffic
            .and_then(|t| t.bursts(secs(pause_ms / 1e3), self.cfg.max_wait))
    }

    /// The part of a pause of `pause_ms` in which an arrival would wait longer than `slack_ms`.
    fn window_ms(pause_ms: f64, slack_ms: f64) -> f64 {
        (pause_ms - slack_ms).max(0.0)
    }

    /// A quiet window's reason: the chance `p` of no arrival in the part of a pause of `pause_ms`
    /// that counts (the pause less `slack_ms`).
    fn quiet_reason(pause_ms: f64, slack_ms: f64, p: f64, by: &str) -> String {
        format!(
            "quiet window: P(no arrival in {:.1} ms) = {p:.2}{by} (a {pause_ms:.1} ms pause, \
             {slack_ms:.1} ms of slack)",
            Self::window_ms(pause_ms, slack_ms)
        )
    }

    /// The chance that a pause of `pause_ms` starting now delays no request by more than the
    /// slack (`slack_ms(burst)`): nothing in flight and no arrival in the pause less the slack,
    /// and, where the traffic comes in `burst`s, the burst over (`bursts=gaps`). The model's net
    /// answers where there is one and enough history, else the survival of the recent gaps
    /// ([`crate::traffic`]). The second value says which, or that the burst is not over.
    fn quiet_chance(
        &mut self,
        obs: &Observation,
        pause_ms: f64,
        burst: Option<Bursts>,
    ) -> (f64, &'static str) {
        let Some(t) = obs.traffic else {
            return (1.0, "");
        };
        if t.in_flight > 0 {
            return (0.0, "");
        }
        let inside = |b: Bursts| t.silence().is_some_and(|s| s < b.idle_gap);
        if self.cfg.burst_windows == BurstWindows::IdleGaps && burst.is_some_and(inside) {
            return (0.0, " (inside a burst)");
        }
        let window_ms = Self::window_ms(pause_ms, self.slack_ms(burst));
        // Nothing to wait for: no arrival can wait longer than the slack (the net was trained on
        // pauses of 2 ms and more, and is not asked).
        if window_ms == 0.0 {
            return (1.0, "");
        }
        let pause = secs(window_ms / 1e3);
        let survival = t.quiet_chance(pause);
        let Some(model) = self.model.as_ref().filter(|m| m.uses_net()) else {
            return (survival, "");
        };
        // The net runs without the interpreter only: in `ready`, whose answer `tick` (with the
        // interpreter) reuses for the same question moments later; a question `ready` did not
        // ask (a sample's tick) gets the survival estimate.
        if self.attached {
            return match self.net_answer {
                Some(a)
                    if a.window_ms == window_ms
                        && t.now_ns.saturating_sub(a.at_ns) < 50_000_000 =>
                {
                    (a.p, " (model)")
                }
                _ => (survival, ""),
            };
        }
        match quiet_inputs(t.arrivals, t.now_ns, pause.as_nanos() as u64, survival) {
            Some(x) => {
                let p = f64::from(model.quiet_chance(&x, &mut self.scratch));
                self.net_answer = Some(NetAnswer {
                    at_ns: t.now_ns,
                    window_ms,
                    p,
                });
                (p, " (model)")
            }
            None => (survival, ""),
        }
    }

    /// Memory in use grown since the last full collection (or the warm-up's end), and the growth
    /// that makes a collection needed: a share of the live heap then, and at least `min_growth`.
    fn growth(&self, obs: &Observation) -> Option<(u64, f64)> {
        let (in_use, live) = (obs.in_use_bytes()?, self.live_after_full?);
        let worth = (live as f64 * self.cfg.growth).max(self.cfg.min_growth as f64);
        Some((in_use.saturating_sub(live), worth))
    }

    /// The RSS budget in force.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// [`FAST_TURNOVER`]: the memory a collection of the unfrozen part left (`floor`) has risen
    /// by `worth` (the growth trigger's share) + [`STALE_MARGIN`] over the lowest since the
    /// freeze, within that much serving time of it. Judged
    /// once a collection of the unfrozen part has run since the freeze (a floor of what the
    /// freeze left) and 200 ms after the last one (the allocator's free memory is read at most
    /// that often); not after a re-freeze that found little (the memory may be live), nor after
    /// an early one that found no heap that turns over.
    fn fast_turnover(&mut self, obs: &Observation, floor: u64, worth: f64) -> Option<Plan> {
        if obs.elapsed <= self.last_full + Duration::from_millis(200) {
            return None;
        }
        let lowest = self.floor_since_freeze.map_or(floor, |f| f.min(floor));
        self.floor_since_freeze = Some(lowest);
        if self.last_full <= self.frozen_at {
            return None;
        }
        let served = Self::work(obs) - self.frozen_work;
        let (window, in_requests) = self.fast_window;
        let risen = floor.saturating_sub(lowest);
        if self.stale_growth > STALE_GROWTH
            || self.early_refuted
            || in_requests != obs.traffic.is_some()
            || served > window
            || (risen as f64) < worth + STALE_MARGIN as f64
        {
            return None;
        }
        Some(Plan::Refreeze {
            why: format!(
                "stale freeze within {} s of serving: {} MiB in use after the last full \
                 collection, {} MiB after the freeze's, {:.0} {} since: the warm heap turns over",
                FAST_TURNOVER.as_secs(),
                floor >> 20,
                lowest >> 20,
                served,
                Self::unit(obs),
            ),
            trigger: Trigger::Stale,
            early: true,
        })
    }

    /// A (re-)freeze's start: [`FAST_TURNOVER`]'s window and floor begin here.
    fn mark_frozen(&mut self, obs: &Observation) {
        self.frozen = true;
        self.frozen_at = obs.elapsed;
        self.frozen_work = Self::work(obs);
        let secs = FAST_TURNOVER.as_secs_f64();
        self.fast_window = match obs.traffic {
            Some(t) => (secs * t.rate(), true),
            None => (secs, false),
        };
        self.floor_since_freeze = None;
        // A new unfrozen part: what the last one yielded says little of it.
        self.freed_per_work = Estimate::new();
    }

    /// The service's work so far, what makes garbage: requests served where a middleware
    /// counts them, else seconds. (Seconds of a stopped or idle service make none.)
    /// Whether the warm-up is over: `warmup` of serving where a middleware counts the requests
    /// (from the first one), else `warmup` since the agent started. A service's start-up (a
    /// catalogue built, a cache filled by replayed traffic, a model loaded) can outlast any
    /// fixed warm-up, and a freeze in the middle of it holds what start-up throws away: on
    /// growing-cache, frozen at 3 s, 1.2 s before the app served, the re-freeze 5 s later freed
    /// 53 % of the frozen objects, the scheduler gave the full collections back to CPython's
    /// rule, and p99 was the default's (5.1x `freeze:3`, peak RSS 1.19x the default's).
    fn warmed_up(&mut self, obs: &Observation) -> bool {
        if self.warmed_at.is_some() {
            return true;
        }
        let since = match obs.traffic {
            // No warm-up asked for: none waited for either.
            _ if self.cfg.warmup.is_zero() => Duration::ZERO,
            None => Duration::ZERO,
            Some(t) if t.total == 0 => return false,
            // The first arrival where the recent ones still hold it, else the oldest they hold
            // (later than the first: the warm-up is not cut short).
            Some(t) => *self.serving_since.get_or_insert_with(|| {
                t.arrivals
                    .first()
                    .map_or(obs.elapsed, |&ns| Duration::from_nanos(ns).min(obs.elapsed))
            }),
        };
        obs.elapsed >= since + self.cfg.warmup
    }

    fn work(obs: &Observation) -> f64 {
        obs.traffic
            .map_or(obs.elapsed.as_secs_f64(), |t| t.total as f64)
    }

    /// Learns how busy the service is from a sample's interval, where it served enough requests
    /// to say (an interval the process spent stopped or idle does not), and after the warm-up
    /// and the last collection of the whole heap (start-up and one-off pauses of hundreds of ms
    /// are no part of serving a request). The process's CPU is counted up to one core: more is
    /// threads outside the interpreter, which the requests do not wait for.
    fn learn_load(&mut self, obs: &Observation) {
        let (Some(s), Some(_)) = (obs.sample, obs.traffic) else {
            return;
        };
        let began = obs.elapsed.as_secs_f64() - s.interval_s;
        let settled = self
            .warmed_at
            .is_some_and(|w| began >= w.as_secs_f64() && began >= self.whole_heap_at.as_secs_f64());
        let requests = s.requests.unwrap_or(0) as f64;
        let Some(cpu) = s.cpu.filter(|c| c.is_finite() && *c >= 0.0) else {
            return;
        };
        let (rate, ms) = (requests / s.interval_s, cpu.min(100.0) * 10.0);
        // Not from a short interval (a sample cut by the end of a run): its rate is noise.
        if settled && requests >= 20.0 && s.interval_s >= 0.5 && rate.is_finite() {
            self.load.add(rate, ms);
        }
    }

    /// The share of the time the service is busy at `rate` requests a second, from the samples'
    /// CPU time against their rates: a fixed part (threads and timers that run whatever the
    /// traffic) and a part per request, where two samples or more lie at each end of a range of
    /// rates [`RATE_SPREAD`] wide and the CPU time rises with the rate. Else all of it is per
    /// request: a flat line from a few samples' noise would make a burst look as light as the
    /// stretch before it. (Charged per request alone, a light stretch's background work made
    /// each request look dearer, and a burst after it look busier than it was.)
    fn busy(&self, rate: f64) -> Option<f64> {
        let spread = self.load.spread().is_some_and(|s| s >= RATE_SPREAD);
        let ms = match self.load.fit() {
            Some((a, b)) if spread && b > 0.0 => a + b * rate,
            _ => self.load.ratio()? * rate,
        };
        Some(ms / 1e3)
    }

    /// [`queue_factor`] at `rate` requests a second: 1 until a sample has said how busy the
    /// service is, and where no middleware counts requests (no queue of them to drain).
    fn queue(&self, obs: &Observation, rate: f64) -> f64 {
        match (obs.traffic, self.busy(rate)) {
            (Some(_), Some(busy)) => queue_factor(busy),
            _ => 1.0,
        }
    }

    /// Whether anything reached the old generation since the last full collection. Only a
    /// middle-generation collection promotes into it; until one has run, a full collection
    /// would find there only what was live at the last one, and spend its pause on the young
    /// garbage that the next young collection frees for far less (measured on large-heap: due
    /// collections every ~45 requests, 11–18 ms each, kept the young ones from ever running).
    /// Under `middle=held` nothing is promoted: the young collections' survivors stay in the
    /// middle generation, and a collection is worth its pause once as many young collections
    /// have run as CPython's `threshold1` would have waited for. True where nothing counts the
    /// collections.
    fn promoted(&self, obs: &Observation) -> bool {
        obs.collections.is_none_or(|c| match self.full {
            FullCollections::Held { threshold1, .. }
                if self.cfg.middle == MiddleCollections::Held =>
            {
                c[0] >= self.last_full_young + threshold1.max(1)
            }
            _ => c[1] > self.last_full_middle,
        })
    }

    fn unit(obs: &Observation) -> &'static str {
        if obs.traffic.is_some() {
            "requests"
        } else {
            "s"
        }
    }

    /// How often the unfrozen part is collected, in work (see [`Scheduler::work`]). A
    /// collection after `w` of work pauses about `a + b·w` ms (`a`: what stays live in it, `b`:
    /// garbage arriving) and delays the one or so request in flight and those arriving during
    /// it and while the queue it left drains: `q·rate·(a + b·w)/1000 + 1` of every `w`, with
    /// `q = 1 / (1 − busy)` ([`queue_factor`]). Below [`TAIL_SHARE`] of the requests the
    /// pauses stay out of the p99, so the scheduler collects that rarely:
    /// `w = (q·rate·a/1000 + 1) / (TAIL_SHARE − q·rate·b/1000)` — collecting more often would
    /// not make a pause shorter than `a` and would meet more requests. Where the garbage alone
    /// delays more than that share, no cadence keeps the pauses out of the p99, and they are
    /// kept small instead: every `a / b`, pauses of `2a`. More often, each pause would give back
    /// less than half of itself for twice the pauses, whose time the queue adds to everyone's
    /// wait (in a single-server queue at 40-70 % busy, pauses of `2a` came within 1.02× of the
    /// best cadence's p99 in the median setting, collecting as often as 10 % of the time allows
    /// 1.24×: bench/suite/cadence_queue.py). Rarer where that would take more than the CPU
    /// budget (`cpu=`: `(a + b·w)` ms per `w / rate` s at most that share), up to
    /// [`BUDGET_STRETCH`] times. Never so often that the pause goes below the target
    /// (`pause=`), nor past [`STEP_OUT`] times the longest interval measured. Until the model has
    /// three points it steps out the same way from a short first interval (50 requests or
    /// 0.25 s of work, [`FIRST_INTERVAL`]), up to 400 requests or 2 s: a first guess of 400
    /// requests put orm's first collections after the freeze at 74-96 ms (0.24 ms of pause per
    /// request's garbage), the p99 of its run, where the fitted cadence then collected every
    /// 16-171 requests.
    pub fn cadence(&self, obs: &Observation) -> f64 {
        let ((first, default), lo, hi) = if obs.traffic.is_some() {
            (FIRST_INTERVAL.0, 10.0, 100_000.0)
        } else {
            (FIRST_INTERVAL.1, 0.1, 30.0)
        };
        match self.pause_fit(obs) {
            Some((a, b)) if b > 0.0 => {
                let small = ((self.cfg.pause.as_secs_f64() * 1e3 - a) / b).max(0.0);
                let (rate, in_flight) = obs
                    .traffic
                    .map_or((1.0, 0.0), |t| (t.rate().max(1e-9), 1.0));
                let queue = self.queue(obs, rate);
                let tail_room = tail_room(rate, b, queue);
                // ms of pause per unit of work the CPU budget leaves for the live part.
                let cpu_room = 1e3 * self.cfg.cpu / rate - b;
                let w = if tail_room > 0.0 {
                    (rate * a * queue / 1e3 + in_flight) / tail_room
                } else if cpu_room > 0.0 && self.cfg.tail_cadence == TailCadence::Budget {
                    // `(a + b·w)` ms per `w / rate` s is the budget's share at `w = a / cpu_room`.
                    a / cpu_room
                } else if cpu_room > 0.0 {
                    (a / b.min(cpu_room)).min(BUDGET_STRETCH * a / b)
                } else {
                    a / b
                };
                let reach = self
                    .pause_model
                    .longest_interval()
                    .map_or(hi, |l| STEP_OUT * l);
                w.max(small).min(reach).clamp(lo, hi)
            }
            // No growth seen over the intervals measured says nothing of ten times longer ones:
            // the cadence steps out to half again the mean interval measured, and each step is
            // measured. (Taken as `hi`, a slope fitted at or under 0 from points at about the
            // same interval stopped large-heap's collections for 10 s: the growth collection
            // then paused 263 ms and the re-freeze after it 301 ms, where those before took
            // 15 ms; twice the longest interval still made one step of 220 ms.)
            Some(_) => self
                .pause_model
                .mean_interval()
                .map_or(hi, |w| (STEP_OUT * w).clamp(lo, hi)),
            None => self
                .pause_model
                .longest_interval()
                .map_or(first, |l| (STEP_OUT * l).clamp(first, default)),
        }
    }

    /// The pause of a collection of the unfrozen part after `w` of work, from the pause model's
    /// own fit where it sees the pause grow with the work. Where the fit's intercept came out
    /// negative (the line then runs through the origin), never below the shortest pause
    /// measured: it would promise pauses of next to nothing soon after a collection. Lifted by
    /// the recent pauses' drift above the line ([`PauseDrift`]).
    fn fitted_pause(&self, w: f64) -> Option<f64> {
        let (a, b) = self.pause_model.fit().filter(|&(_, b)| b > 0.0)?;
        let drift = match self.cfg.drift {
            PauseDrift::Follow => self.pause_model.drift((a, b)),
            PauseDrift::Off => 0.0,
        };
        let pause = a + b * w.max(0.0) + drift;
        let floor = if a <= 0.0 {
            self.pause_model.shortest()
        } else {
            None
        };
        Some(floor.map_or(pause, |f| pause.max(f)))
    }

    fn predicted_pause_ms(&self, plan: &Plan, obs: &Observation) -> f64 {
        let full = self.pause_full.or(self.prior_full_ms());
        match plan {
            Plan::Refreeze { .. } => self.pause_refreeze.or(full),
            Plan::Freeze => full,
            // The pause model's own prediction for the work done so far where it sees the pause
            // grow with it: a collection in a quiet window soon after the last one is shorter
            // than the average.
            Plan::Collect { .. } if self.frozen => self
                .fitted_pause(Self::work(obs) - self.last_full_work)
                .unwrap_or_else(|| self.pause_frozen.or(self.prior_frozen_ms(obs))),
            Plan::Collect { .. } => full,
        }
    }

    /// What is due now, before looking at the traffic.
    fn due(&mut self, obs: &Observation) -> Option<Plan> {
        let rss = obs.rss_bytes;
        let warming = !self.warmed_up(obs);
        if !warming && self.warmed_at.is_none() {
            // Warm-up over: what is resident now is the service's live heap.
            self.warmed_at = Some(obs.elapsed);
            if let Some(r) = rss {
                self.live_after_full = obs.in_use_bytes();
                if self.cfg.rss_budget.is_none() {
                    self.budget = (r * 2).max(r + (256 << 20));
                }
            }
        }
        // While memory stays above the budget after the guard collected the whole heap, the guard
        // collects at most once a second and spends at most 5 % of the time paused. (Counted from
        // its own collections: the opportunistic ones of the unfrozen part, every second or so,
        // held it back for 2 s on cycle-leak while RSS passed the budget by 10 %.)
        let pace = secs((self.pause_full.or(self.prior_full_ms()) / 1e3 * 20.0).max(1.0));
        let guard_ready = self
            .guard_fired
            .is_none_or(|g| !g.whole_heap || obs.elapsed >= g.at + pace);
        if let Some(rss) = rss.filter(|&r| r > self.budget && guard_ready) {
            let why = format!(
                "guard: rss {} MiB > budget {} MiB",
                rss >> 20,
                self.budget >> 20
            );
            // A frozen heap's garbage can only go by unfreezing: when a collection right before
            // did not bring RSS under the budget, the guard re-freezes. (Which collection this
            // is, is recorded when it runs: `ready` asks too, without the interpreter.)
            let collected_recently = self
                .guard_fired
                .is_some_and(|g| obs.elapsed < g.at + pace + Duration::from_millis(500));
            return Some(if self.frozen && collected_recently {
                Plan::Refreeze {
                    why,
                    trigger: Trigger::Guard,
                    early: false,
                }
            } else {
                Plan::Collect {
                    why,
                    trigger: Trigger::Guard,
                }
            });
        }
        if warming {
            return None;
        }
        if self.cfg.freeze && !self.frozen && !self.no_freeze {
            return Some(Plan::Freeze);
        }
        // Growth is judged on the memory in use: RSS stays near its peak after a collection
        // (glibc keeps what was freed), and the live estimate taken from it would ratchet up by
        // the growth share at every collection.
        let (Some(in_use), Some(live)) = (obs.in_use_bytes(), self.live_after_full) else {
            return None;
        };
        let (grown, worth) = self.growth(obs)?;
        if self.frozen {
            if let Some(plan) = self.fast_turnover(obs, live.min(in_use), worth) {
                return Some(plan);
            }
            // Stale: the memory a full collection of the unfrozen part leaves in use (the lowest
            // since the last one) stays past the freeze's: garbage among the frozen objects. Not
            // the memory in use now, which also holds the young and unfrozen garbage the next
            // collections free (with a larger threshold0, enough to pass the margin: a 533 ms
            // re-freeze of large-heap's whole heap for nothing).
            // Not within 200 ms of a full collection either: `live` is read before it, and the
            // allocator's free memory is read at most every 200 ms.
            let steady = obs.elapsed >= self.frozen_at + Duration::from_secs(5)
                && obs.elapsed > self.last_full + Duration::from_millis(200);
            if let Some(at_freeze) = self.in_use_at_freeze.filter(|_| steady) {
                let limit = at_freeze as f64 * (1.0 + self.stale_growth) + STALE_MARGIN as f64;
                // After a collection for growth that freed next to nothing, what has grown
                // since is frozen garbage too (nothing collects it until the re-freeze).
                let floor = if self.growth_freed_little {
                    in_use
                } else {
                    live.min(in_use)
                };
                if floor as f64 > limit {
                    return Some(Plan::Refreeze {
                        why: format!(
                            "stale freeze: {} MiB in use after the last full collection, {} MiB \
                             at the freeze",
                            floor >> 20,
                            at_freeze >> 20
                        ),
                        trigger: Trigger::Stale,
                        early: false,
                    });
                }
                // In use past the limit, though the last full collection left less: the frozen
                // part may have gone stale since, and only a collection of the unfrozen part can
                // tell. (Left to the growth trigger, a tenth of the live heap later, growing-
                // cache's frozen garbage passed the limit by 16 MiB before it was seen: peak RSS
                // 1.15× the default's over 3 minutes, at f0bf3bc.) Once per `min_growth` of
                // growth, so young garbage over a floor just under the limit does not collect at
                // every tick. (Where the growth trigger collects anyway, it says so.)
                if in_use as f64 > limit && grown >= self.cfg.min_growth && (grown as f64) < worth {
                    let passed = format!(
                        "{} MiB in use passed the staleness limit of {} MiB ({} MiB at the freeze)",
                        in_use >> 20,
                        limit as u64 >> 20,
                        at_freeze >> 20
                    );
                    // Unless the unfrozen part's last due collections freed little (the cadence
                    // is stretched for it): then its collection would free little of this too,
                    // and only pause before the re-freeze it leads to. (On growing-cache such a
                    // collection paused 92-145 ms, 0.3 s before a re-freeze of 419-645 ms, in
                    // targeted runs at dd9156c and before: one queue for both.)
                    if self.stretch > 1.0 {
                        return Some(Plan::Refreeze {
                            why: format!(
                                "{passed}, and the unfrozen part's last collections freed under \
                                 {LOW_YIELD:.0} objects per ms of pause: collecting it would not \
                                 bring the memory back"
                            ),
                            trigger: Trigger::Stale,
                            early: false,
                        });
                    }
                    return Some(Plan::Collect {
                        why: format!(
                            "{passed}: a collection of the unfrozen part says whether the frozen \
                             part went stale"
                        ),
                        trigger: Trigger::Growth,
                    });
                }
            }
        }
        // After a collection for growth that freed next to nothing, the memory that grew is
        // garbage among the frozen objects (documents frozen at warm-up, since retired): only a
        // re-freeze frees it, and waiting for the staleness limit holds it meanwhile (on
        // cycle-leak that limit was the run's peak RSS, 1.18× the default's). Unless a re-freeze
        // has found little before: then the memory may be live, and growth waits for the limit.
        let futile = self.frozen && self.growth_freed_little;
        if futile && self.stale_growth <= STALE_GROWTH {
            return Some(Plan::Refreeze {
                why: "a collection for memory growth freed next to nothing of what the freeze \
                      left: the growth is garbage among the frozen objects"
                    .into(),
                trigger: Trigger::Stale,
                early: false,
            });
        }
        if grown as f64 >= worth && !futile && self.full != FullCollections::GivenBack {
            return Some(Plan::Collect {
                why: format!(
                    "memory grew {} MiB since the last full collection (live {} MiB)",
                    grown >> 20,
                    live >> 20
                ),
                trigger: Trigger::Growth,
            });
        }
        let cadence = self.cadence(obs) * self.stretch;
        if self.frozen && Self::work(obs) - self.last_full_work >= cadence && self.promoted(obs) {
            let stretched = if self.stretch > 1.0 {
                format!(
                    " (× {:.0}: the last ones freed under {LOW_YIELD:.0} objects per ms of pause)",
                    self.stretch
                )
            } else {
                String::new()
            };
            return Some(Plan::Collect {
                why: format!(
                    "due: every {cadence:.prec$} {}{stretched} keeps the pauses out of the p99 or small",
                    Self::unit(obs),
                    // Seconds without traffic are often fractions of one; requests are whole.
                    prec = if obs.traffic.is_none() && cadence < 10.0 { 2 } else { 0 },
                ),
                trigger: Trigger::Due,
            });
        }
        None
    }

    /// The plan to carry out now, with the reason for its moment; `None`: wait.
    fn decide(&mut self, obs: &Observation) -> Option<(Plan, String)> {
        if self.observing {
            return None;
        }
        let plan = self.due(obs);
        let Some(plan) = plan else {
            self.need_over();
            // Nothing needed: a full collection in a quiet window is still free.
            let pause = self.predicted_pause_ms(
                &Plan::Collect {
                    why: String::new(),
                    trigger: Trigger::Quiet,
                },
                obs,
            );
            // Only after work since the last one: a service that served nothing made no garbage
            // (an idle one was collected every second, tens of ms each, for nothing).
            let worked = Self::work(obs) > self.last_full_work;
            // Spare: a second since the last one, or half a cadence of work; or, where the due
            // collections have been meeting requests (the running share that found a quiet
            // window under a half), as long since the last as keeps this pause within the CPU
            // budget (`cpu=`): a window that delays no one costs only CPU, and the shorter the
            // pause, the more windows fit it (docs/scheduler.md, "When").
            let spare = || {
                obs.elapsed >= self.last_full + self.cfg.opportunistic
                    || Self::work(obs) - self.last_full_work >= self.cadence(obs) / 2.0
                    || (self.quiet_found.or(1.0) < 0.5
                        && obs.elapsed >= self.last_full + secs(pause / 1e3 / self.cfg.cpu))
            };
            let ok =
                self.frozen && worked && obs.traffic.is_some() && self.promoted(obs) && spare();
            self.quiet_worth_watching = self.frozen && worked && obs.traffic.is_some();
            if !ok {
                return None;
            }
            let burst = self.burst(obs, pause);
            let (p, by) = self.quiet_chance(obs, pause, burst);
            if p >= self.cfg.quiet {
                let plan = Plan::Collect {
                    why: "opportunistic".into(),
                    trigger: Trigger::Quiet,
                };
                let slack = self.slack_ms(burst);
                return Some((plan, Self::quiet_reason(pause, slack, p, by)));
            }
            return None;
        };
        let since = *self.needed_since.get_or_insert(obs.elapsed);
        let pause = self.predicted_pause_ms(&plan, obs);
        if plan.trigger() == Trigger::Guard {
            return Some((plan, "forced by the memory guard".into()));
        }
        let burst = self.burst(obs, pause);
        let slack = self.slack_ms(burst);
        let (p, by) = self.quiet_chance(obs, pause, burst);
        if p >= self.cfg.quiet {
            self.quiet_found.add(1.0);
            self.probing = false;
            return Some((plan, Self::quiet_reason(pause, slack, p, by)));
        }
        let window = Self::window_ms(pause, slack);
        // Waiting costs memory: a need stops waiting once memory has grown past the growth
        // trigger by a quarter, whatever its reason (the freeze after the warm-up included).
        if let Some((grown, worth)) = self
            .growth(obs)
            .filter(|&(g, w)| g as f64 >= w * WAIT_HEADROOM)
        {
            if self.hold_for_in_flight(obs) {
                return None;
            }
            self.quiet_found.add(0.0);
            self.probing = false;
            return Some((
                plan,
                format!(
                    "memory cannot wait: {} MiB grown since the last full collection, past the \
                     {:.0} MiB that make one needed by a quarter (no quiet window: P = {p:.2} \
                     for {window:.1} ms of a {pause:.1} ms pause{by}){}",
                    grown >> 20,
                    worth / f64::from(1 << 20),
                    self.held_note(obs),
                ),
            ));
        }
        let found = self.quiet_found.or(0.5);
        if found < WORTH_WAITING && obs.traffic.is_some() && !self.probing {
            if self.hold_for_in_flight(obs) {
                return None;
            }
            self.not_waited += 1;
            if self.not_waited.is_multiple_of(PROBE_EVERY) {
                self.probing = true;
                self.held_since = None;
            } else {
                return Some((
                    plan,
                    format!(
                        "not waiting: recent needed collections found a quiet window {:.0} % of the time{}",
                        found * 100.0,
                        self.held_note(obs)
                    ),
                ));
            }
        }
        // Waiting longer than half the cadence lets the pause grow more than the wait can save,
        // where quiet windows come by chance. Where the traffic comes in bursts with idle gaps
        // between them, one comes within a burst's length, and a pause in it delays no one
        // however much it grew: the wait lasts up to the longest burst remembered. (On bursty,
        // 0.3-2 s bursts, the needs gave up after 0.12-0.45 s, found windows 8-16 % of the
        // time and stopped waiting: due collections of 6-40 ms inside the bursts, p99 1.5× that
        // of `freeze:3`, at c2dc4c9.) Only where the typical burst ends within `max_wait`: the
        // idle gaps around one suite turn of steady traffic, 6 s apart, made large-heap's first
        // due collection of each round wait the whole 2 s, 31 ms where 12 were predicted.
        let rate = obs.traffic.map_or(1.0, |t| t.rate());
        let wait = if self.frozen && rate > 0.0 {
            self.cfg.max_wait.min(
                secs(self.cadence(obs) / 2.0 / rate)
                    .max(burst.map_or(Duration::ZERO, |b| b.longest)),
            )
        } else {
            self.cfg.max_wait
        };
        if obs.elapsed >= since + wait {
            if self.hold_for_in_flight(obs) {
                return None;
            }
            self.quiet_found.add(0.0);
            self.probing = false;
            return Some((
                plan,
                format!(
                    "no quiet window in {:.2} s (P = {p:.2} for {window:.1} ms of a {pause:.1} ms \
                     pause{by}){}",
                    wait.as_secs_f64(),
                    self.held_note(obs)
                ),
            ));
        }
        None
    }

    /// Whether a need about to run without a quiet window holds on, up to `idle_wait`, for
    /// nothing in flight. Between requests the only ones a pause delays are those arriving
    /// during it, each by what is left of it; in the middle of one, that one waits the whole
    /// pause too. (In the suite at 0a56f3d, of `neurogc`'s collections that ran without a
    /// quiet window in the scored turns, 35 of 42 on orm started with requests in flight and
    /// met 21 of its 25 slowest requests, the other 7 none; on large-heap 8 of 10, meeting 11
    /// of 14. The server is empty for a few ms after most requests, and the scheduler looks
    /// every 10 ms while a need waits.)
    fn hold_for_in_flight(&mut self, obs: &Observation) -> bool {
        let busy = obs.traffic.is_some_and(|t| t.in_flight > 0);
        if !busy || self.cfg.idle_wait.is_zero() {
            return false;
        }
        let since = *self.held_since.get_or_insert(obs.elapsed);
        obs.elapsed < since + self.cfg.idle_wait
    }

    /// What the wait for nothing in flight came to, for the reason ("" where there was none).
    fn held_note(&self, obs: &Observation) -> String {
        let Some(since) = self.held_since else {
            return String::new();
        };
        let waited = obs.elapsed.saturating_sub(since).as_secs_f64() * 1e3;
        match obs.traffic.map_or(0, |t| t.in_flight) {
            0 => format!("; nothing in flight after {waited:.0} ms"),
            n => format!("; {n} still in flight after {waited:.0} ms"),
        }
    }

    /// The need is met or gone: the next one waits afresh.
    fn need_over(&mut self) {
        self.needed_since = None;
        self.held_since = None;
    }

    /// Runs a full collection, timed by this thread's CPU time (what the collection costs; a
    /// wall clock would also count a stopped or descheduled process); returns (objects
    /// collected, pause ms).
    fn timed_collect(gc: &mut dyn GcControl, intent: Intent) -> Result<(u64, f64), GcError> {
        let guard = intent.trigger == Trigger::Guard;
        let t = gc.cpu_ms();
        let n = gc.collect(2, intent)?;
        let ms = (gc.cpu_ms() - t).max(0.0);
        if guard {
            // What the collection freed goes back to the system, so that RSS, which the
            // budget is in, shows it (glibc keeps freed memory otherwise).
            gc.release_free_memory();
        }
        Ok((n, ms))
    }

    fn carry_out(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
        plan: Plan,
        moment: String,
    ) -> Result<Vec<Action>, GcError> {
        let predicted = self.predicted_pause_ms(&plan, obs);
        // A freeze or re-freeze collects the whole heap: its yield is not the cadence's.
        let freed = match plan {
            Plan::Collect { .. } => self.predicted_freed(obs),
            _ => None,
        };
        // The collection's own row in the GC events says why it ran: its need and its moment
        // (the sample keeps only the last action of its interval).
        let need = match &plan {
            Plan::Collect { why, .. } | Plan::Refreeze { why, .. } => why.clone(),
            Plan::Freeze => format!(
                "warm-up of {:.1} s over{}: the warm heap is frozen",
                self.cfg.warmup.as_secs_f64(),
                if self.serving_since.is_some() {
                    " (counted from the first request)"
                } else {
                    ""
                }
            ),
        };
        let why = format!("{need}; {moment}");
        let intent = Intent {
            trigger: plan.trigger(),
            predicted_ms: Some(predicted),
            predicted_freed: freed,
            why: Some(why.into()),
        };
        let in_flight = obs.traffic.map_or(0, |t| t.in_flight);
        let expected = freed.map_or(String::new(), |n| format!(", to free ~{n:.0} objects"));
        let context =
            format!("{moment}; {in_flight} in flight; predicted pause {predicted:.1} ms{expected}");
        if plan.trigger() == Trigger::Guard {
            self.guard_fired = Some(GuardTurn {
                at: obs.elapsed,
                whole_heap: !self.frozen || matches!(plan, Plan::Refreeze { .. }),
            });
        }
        if !self.frozen || !matches!(plan, Plan::Collect { .. }) {
            self.whole_heap_at = obs.elapsed;
        }
        let mut actions = Vec::new();
        match plan {
            Plan::Collect { why, trigger } => {
                let (n, ms) = Self::timed_collect(gc, intent)?;
                if trigger == Trigger::Growth {
                    self.growth_freed_little = self.frozen && n < GROWTH_FREED_LITTLE;
                }
                // Over enough work to be a rate (a guard collection right after another is not).
                let since = Self::work(obs) - self.last_full_work;
                if since >= if obs.traffic.is_some() { 10.0 } else { 1.0 } {
                    self.freed_per_work.add(n as f64 / since);
                }
                if self.frozen {
                    self.learn_yield(n, ms, trigger == Trigger::Due);
                    self.freed_unfrozen += n;
                    self.pause_frozen.add(ms);
                    let since = Self::work(obs) - self.last_full_work;
                    if since > 0.0 {
                        self.pause_model.add(since, ms);
                    }
                } else {
                    self.pause_full.add(ms);
                }
                actions.push(Action::new(
                    format!("collect(2) -> {n} in {ms:.1} ms"),
                    format!("{why}; {context}"),
                ));
            }
            Plan::Freeze => {
                let (n, ms) = Self::timed_collect(gc, intent)?;
                self.pause_full.add(ms);
                gc.freeze()?;
                let frozen = gc
                    .freeze_count()
                    .map_or(String::new(), |f| format!("; {f} objects frozen"));
                self.mark_frozen(obs);
                self.freed_unfrozen = 0;
                // Read before the freeze's collection, on purpose: it includes what that
                // collection freed, a margin of its own. (Lowered to what the collection left,
                // the staleness limit put a 485 ms re-freeze into growing-cache's suite run, a
                // p99 1.34× the default's, and cycle-leak's peak RSS was no lower.)
                self.in_use_at_freeze = obs.in_use_bytes();
                actions.push(Action::new(
                    format!("collect(2) -> {n} in {ms:.1} ms; gc.freeze()"),
                    // The reason begins with the GC event's `why` (need; moment).
                    format!("{need}; {context}{frozen}"),
                ));
            }
            Plan::Refreeze {
                why,
                trigger,
                early,
            } => {
                let frozen_before = gc.freeze_count();
                gc.unfreeze()?;
                let (n, ms) = Self::timed_collect(gc, intent)?;
                // Within seconds of the freeze the collections of the unfrozen part have freed
                // little yet, so only the share of the frozen objects freed tells a heap that
                // turns over from a live one still growing (a cache filling after the warm-up),
                // whose re-freeze also frees what died frozen; one such is enough.
                // (Without the count of frozen objects, the test that needs none.)
                let turned_over = if early && frozen_before.is_some() {
                    self.early_refuted = !freed_a_share(n, frozen_before);
                    !self.early_refuted
                } else {
                    turns_over(n, frozen_before, self.freed_unfrozen)
                };
                let of_frozen = frozen_before.map_or(String::new(), |f| format!(" of {f} frozen"));
                let unfrozen_freed = self.freed_unfrozen;
                self.freed_unfrozen = 0;
                self.pause_refreeze.add(ms);
                self.in_use_at_freeze = obs.in_use_bytes();
                if trigger == Trigger::Stale && turned_over {
                    self.no_freeze = true;
                    self.frozen = false;
                    self.freed_per_work = Estimate::new();
                    // Unfrozen, the heap is CPython's own case again: its rule alone collects it,
                    // as often as the default does, with the guard under it (docs/scheduler.md:
                    // the growth trigger waited for twice the garbage on growing-cache and fired
                    // twice as often as the rule on cycle-leak).
                    let mut t = gc.threshold()?;
                    let given_back = match self.full {
                        FullCollections::Held {
                            threshold1,
                            threshold2,
                        } if t[2] == HELD_BACK => Some((threshold1, threshold2)),
                        _ => None,
                    };
                    if let Some((t1, t2)) = given_back {
                        if t[1] == HELD_BACK {
                            t[1] = t1;
                        }
                        t[2] = t2;
                        self.full = FullCollections::GivenBack;
                    }
                    // The young threshold's experiment ends with the freeze; a trial running
                    // then goes back to its base (left at 2800 on growing-cache, unjudged).
                    let trial_base = self.young.as_mut().and_then(YoungTuner::stop);
                    if let Some(t0) = trial_base {
                        t[0] = t0;
                    }
                    let rule = if given_back.is_some() || trial_base.is_some() {
                        gc.set_threshold(t)?;
                        format!("; set_threshold({}, {}, {})", t[0], t[1], t[2])
                    } else {
                        String::new()
                    };
                    let trial = trial_base.map_or(String::new(), |t0| {
                        format!("; the young threshold trial ends with the freeze, back to {t0}")
                    });
                    actions.push(Action::new(
                        format!(
                            "gc.unfreeze(); collect(2) -> {n}{of_frozen} in {ms:.1} ms; left unfrozen{rule}"
                        ),
                        format!(
                            "{why}; {}: the heap turns over, a freeze only holds its garbage; CPython's own rule collects the whole heap again, the guard under it{trial}; {context}",
                            turnover_evidence(n, frozen_before, unfrozen_freed)
                        ),
                    ));
                    self.after_collection(obs);
                    self.need_over();
                    self.mark_full(obs);
                    return Ok(actions);
                }
                gc.freeze()?;
                self.mark_frozen(obs);
                let refuted = if early && self.early_refuted {
                    format!(
                        "; yet it freed under {:.0} % of the frozen objects: a live heap still \
                         growing, frozen again, and no re-freeze within seconds again",
                        TURNOVER_SHARE * 100.0
                    )
                } else {
                    String::new()
                };
                actions.push(Action::new(
                    format!("gc.unfreeze(); collect(2) -> {n}{of_frozen} in {ms:.1} ms; gc.freeze()"),
                    format!("{why}{refuted}; the collections of the unfrozen part freed {unfrozen_freed} since the freeze; {context}"),
                ));
                // Learned from the outcome: a re-freeze that finds little waits longer next time.
                self.after_collection(obs);
                if n < 10_000 {
                    self.stale_growth *= 2.0;
                }
                // A fresh unfrozen part: what the stretch learned was about the old one.
                self.stretch = 1.0;
                self.growth_freed_little = false;
                self.need_over();
                self.mark_full(obs);
                return Ok(actions);
            }
        }
        self.after_collection(obs);
        self.need_over();
        self.mark_full(obs);
        Ok(actions)
    }

    /// Marks a full collection now: the cadence, the work and the promotions count from here.
    fn mark_full(&mut self, obs: &Observation) {
        self.last_full = obs.elapsed;
        self.last_full_work = Self::work(obs);
        self.last_full_middle = obs.collections.map_or(0, |c| c[1]);
        self.last_full_young = obs.collections.map_or(0, |c| c[0]);
    }

    /// Resets the cadence's stretch after any collection of the unfrozen part that freed much,
    /// and stretches it after a `due` one that paused past the target for little (the others
    /// ran for their own reasons: memory grew, or the moment was free).
    fn learn_yield(&mut self, collected: u64, ms: f64, due: bool) {
        let freed_per_ms = collected as f64 / ms.max(0.1);
        if freed_per_ms >= LOW_YIELD {
            self.stretch = 1.0;
        } else if due && ms > JUDGED_MS {
            self.stretch = (self.stretch * 2.0).min(MAX_STRETCH);
        }
    }

    /// Takes the live heap after a full collection: the memory in use observed, at most (it is
    /// read before the collection; the next sample lowers it to what the collection left).
    fn after_collection(&mut self, obs: &Observation) {
        if let Some(in_use) = obs.in_use_bytes() {
            self.live_after_full = Some(in_use);
        }
    }

    /// Feeds the threshold0 experiment the sample of an interval that began after the freeze
    /// (the freeze's own collection is no part of any threshold's cost), and carries out the
    /// change it asks for.
    fn tune_young(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
    ) -> Result<Option<Action>, GcError> {
        // Only at sample ticks (this runs every 10 ms tick), while the experiment runs.
        let Some(s) = obs.sample else {
            return Ok(None);
        };
        let began = obs.elapsed.as_secs_f64() - s.interval_s;
        let running = self.young.as_ref().is_some_and(|t| !t.settled());
        if !running || !self.frozen || began < self.frozen_at.as_secs_f64() {
            return Ok(None);
        }
        // Whether full pauses are in the p99: until the pause model says otherwise, they are.
        let rate = obs.traffic.map_or(1.0, |t| t.rate());
        let queue = self.queue(obs, rate);
        let full_in_tail = self
            .pause_fit(obs)
            .is_none_or(|(_, b)| tail_room(rate, b, queue) <= 0.0);
        let Some(tuner) = self.young.as_mut() else {
            return Ok(None);
        };
        let work = match obs.traffic {
            Some(_) => s.requests.unwrap_or(0) as f64,
            None => s.interval_s,
        };
        let window = Window::of_sample(
            s.interval_s,
            work,
            s.gc.map(|g| g.collections),
            s.gc.map(|g| g.pause_ms_sum),
            obs.in_use_bytes(),
        );
        let Some(change) = tuner.observe(window, full_in_tail) else {
            return Ok(None);
        };
        let mut t = gc.threshold()?;
        t[0] = change.threshold0;
        gc.set_threshold(t)?;
        Ok(Some(Action::new(
            format!("set_threshold({}, {}, {})", t[0], t[1], t[2]),
            change.why,
        )))
    }

    /// At the end of the warm-up, holds CPython's full collections back: from then on they are
    /// the scheduler's. Until then CPython's own rule runs them: held back from the start, the
    /// garbage of a service's start-up (a cache warmed by replayed traffic) piled up to the
    /// freeze, and RSS, which glibc and pymalloc seldom give back, stayed at that peak
    /// (growing-cache: 335 MiB at the freeze against the default's 222 MiB peak).
    fn take_control(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
    ) -> Result<Option<Action>, GcError> {
        if self.observing || self.full != FullCollections::Warming || !self.warmed_up(obs) {
            return Ok(None);
        }
        let mut t = gc.threshold()?;
        self.full = FullCollections::Held {
            threshold1: t[1],
            threshold2: t[2],
        };
        t[2] = HELD_BACK;
        let held = self.cfg.middle == MiddleCollections::Held;
        if held {
            t[1] = HELD_BACK;
        }
        gc.set_threshold(t)?;
        Ok(Some(Action::new(
            format!("set_threshold({}, {}, {})", t[0], t[1], t[2]),
            if held {
                "warm-up over: middle and full collections are the scheduler's"
            } else {
                "warm-up over: full collections are the scheduler's"
            },
        )))
    }

    /// `tick`'s work, with the interpreter held (the net is not run: [`Scheduler::quiet_chance`]).
    fn tick_attached(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
    ) -> Result<Vec<Action>, GcError> {
        self.asked = obs.elapsed;
        self.learn_load(obs);
        let mut actions: Vec<Action> = self.take_control(gc, obs)?.into_iter().collect();
        actions.extend(self.over_budget(obs));
        actions.extend(self.tune_young(gc, obs)?);
        if let Some((plan, moment)) = self.decide(obs) {
            actions.extend(self.carry_out(gc, obs, plan, moment)?);
        } else if obs.elapsed > self.last_full + Duration::from_millis(200) {
            // Memory freed by the last full collection lowers the live estimate.
            if let Some(in_use) = obs.in_use_bytes() {
                if self.live_after_full.is_some_and(|live| in_use < live) {
                    self.live_after_full = Some(in_use);
                }
            }
        }
        Ok(actions)
    }

    /// Live memory (after a full collection) above the budget: reported once, never raised.
    fn over_budget(&mut self, obs: &Observation) -> Option<Action> {
        let rss = obs.rss_bytes?;
        let just_collected = self
            .guard_fired
            .is_some_and(|g| g.whole_heap && obs.elapsed < g.at + Duration::from_millis(300));
        if just_collected && rss > self.budget && !self.over_budget_said {
            self.over_budget_said = true;
            return Some(Action::warning(
                "over budget",
                format!(
                    "live memory {} MiB exceeds the RSS budget {} MiB even after a full \
                     collection: the guard cannot keep it; the budget stays",
                    rss >> 20,
                    self.budget >> 20
                ),
            ));
        }
        None
    }
}

impl Policy for Scheduler {
    fn spec(&self) -> &str {
        &self.spec
    }

    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        // Until the warm-up is over only a budget given explicitly applies.
        self.budget = self.cfg.rss_budget.unwrap_or(u64::MAX);
        let collector = gc.collector()?;
        if collector != Collector::Generational {
            self.observing = true;
            return Ok(vec![Action::new(
                "observing only",
                format!(
                    "{collector:?} collector: full collections cannot be held back without \
                     turning automatic collection off, so neurogc leaves it as it is"
                ),
            )]);
        }
        let mut t = gc.threshold()?;
        match self.cfg.young {
            YoungThreshold::Fixed(n) => t[0] = n,
            YoungThreshold::Auto => self.young = Some(YoungTuner::new(t[0])),
            YoungThreshold::Off => {}
        }
        gc.set_threshold(t)?;
        self.live_after_full = obs.in_use_bytes();
        self.mark_full(obs);
        Ok(vec![Action::new(
            format!("set_threshold({}, {}, {})", t[0], t[1], t[2]),
            format!(
                "warm-up of {:.1} s (of serving, from the first request, where a middleware \
                 counts them): CPython collects as it would meanwhile; then young \
                 collections stay automatic and full collections are the scheduler's ({}); {}",
                self.cfg.warmup.as_secs_f64(),
                match self.cfg.rss_budget {
                    Some(b) => format!("rss budget {} MiB", b >> 20),
                    None => "rss budget: twice the live heap after the warm-up".into(),
                },
                self.model_summary()
            ),
        )])
    }

    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.attached = true;
        let actions = self.tick_attached(gc, obs);
        self.attached = false;
        actions
    }

    fn ready(&mut self, obs: &Observation) -> bool {
        self.asked = obs.elapsed;
        let seen = Moving {
            rss: obs.rss_bytes,
            collections: obs.collections,
            arrivals: obs.traffic.map(|t| t.total),
        };
        self.still = if self.last_seen == Some(seen) {
            self.still.saturating_add(1)
        } else {
            0
        };
        self.last_seen = Some(seen);
        if !self.observing && self.full == FullCollections::Warming && self.warmed_up(obs) {
            return true; // to hold CPython's full collections back
        }
        // A plan exists and its moment has come: cheap, and without the interpreter.
        let needed_before = self.needed_since;
        let ready = self.decide(obs).is_some();
        if !ready {
            return false;
        }
        // `tick` decides again with the interpreter; it must see the same wait.
        self.needed_since = needed_before.or(self.needed_since);
        true
    }

    fn next_tick(&self) -> Option<Duration> {
        if self.observing {
            return None;
        }
        // Fast while a need waits for its quiet window, or while a free one may come (work was
        // done since the last collection, and a middleware reports the traffic). Otherwise 50 ms
        // is soon enough for the guard and the cadence; and where nothing moved (no memory, no
        // collection, no request) since the last look, twice then four times that: an idle
        // process's ticks were most of its agent's CPU, and the guard has nothing to bound
        // until something moves. (Ticks are times since the agent started, counted from the
        // last time it was asked.)
        let gap = if self.needed_since.is_some() || self.quiet_worth_watching {
            Duration::from_millis(10)
        } else {
            Duration::from_millis(50) * (1 << self.still.min(2))
        };
        Some(self.asked + gap)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, RecordingGc};
    use super::*;
    use crate::traffic::Traffic;

    const MIB: u64 = 1 << 20;

    fn obs<'a>(secs: f64, rss_mib: u64, traffic: Option<Traffic<'a>>) -> Observation<'a> {
        Observation {
            rss_bytes: Some(rss_mib * MIB),
            traffic,
            ..at(secs)
        }
    }

    /// 100 arrivals 5 ms apart.
    fn steady_arrivals() -> Vec<u64> {
        (0..100).map(|i| i * 5_000_000).collect()
    }

    /// Two requests in flight right after those arrivals: no quiet window.
    fn busy(arrivals: &[u64]) -> Traffic<'_> {
        Traffic {
            in_flight: 2,
            ..idle(arrivals)
        }
    }

    /// Nothing in flight right after those arrivals, 100 requests served.
    fn idle(arrivals: &[u64]) -> Traffic<'_> {
        Traffic {
            in_flight: 0,
            now_ns: 500_000_000,
            arrivals,
            total: 100,
        }
    }

    fn started(cfg: SchedulerConfig) -> (Scheduler, RecordingGc) {
        let mut gc = RecordingGc::default();
        let mut s = Scheduler::new("neurogc", cfg);
        let a = s.start(&mut gc, &obs(0.0, 100, None)).unwrap();
        assert!(
            a[0].reason.contains("CPython collects as it would"),
            "{a:?}"
        );
        (s, gc)
    }

    /// The first tick after the warm-up did nothing but hold CPython's full collections back.
    fn takes_control_only(actions: &[Action]) -> bool {
        actions.len() == 1 && actions[0].reason.starts_with("warm-up over")
    }

    /// Started with no warm-up: the first tick may freeze.
    /// Whether the scheduler unfroze the heap (a re-freeze, or leaving it unfrozen).
    fn refroze(actions: &[Action]) -> bool {
        actions
            .iter()
            .any(|x| x.action.starts_with("gc.unfreeze()"))
    }

    /// The first action was a re-freeze at the staleness limit, not the early rule's
    /// ("stale freeze within 10 s of serving").
    fn refroze_at_the_limit(actions: &[Action]) -> bool {
        refroze(&actions[..1]) && actions[0].reason.starts_with("stale freeze: ")
    }

    /// A stale re-freeze that frees half of 200 k frozen objects (a heap that turns over): a
    /// collection of the unfrozen part at `first` leaves 150 MiB in use, and the tick at
    /// `then` re-freezes. Returns that tick's actions, after asserting it left the heap
    /// unfrozen with CPython's thresholds back.
    fn left_unfrozen_after_turnover(
        s: &mut Scheduler,
        gc: &mut RecordingGc,
        first: f64,
        then: f64,
    ) -> Vec<Action> {
        gc.frozen = Some(200_000);
        gc.freed = 100_000;
        s.tick(gc, &obs(first, 150, None)).unwrap();
        let a = s.tick(gc, &obs(then, 150, None)).unwrap();
        assert!(
            a[0].action
                .ends_with("left unfrozen; set_threshold(700, 10, 10)"),
            "{a:?}"
        );
        a
    }

    /// A scheduler whose warm-up ended at its default length (what it learns from samples is
    /// learned only after it).
    fn warmed_scheduler() -> Scheduler {
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        s.warmed_at = Some(s.cfg.warmup);
        s
    }

    fn started_now() -> (Scheduler, RecordingGc) {
        started(SchedulerConfig {
            warmup: Duration::ZERO,
            ..SchedulerConfig::default()
        })
    }

    #[test]
    fn holds_back_full_collections_and_freezes_after_warm_up() {
        let (mut s, mut gc) = started(SchedulerConfig::default());
        // CPython's own rule runs through the warm-up.
        assert_eq!(gc.threshold, [700, 10, 10]);
        assert!(!s.ready(&obs(1.0, 100, None)));
        assert!(s.tick(&mut gc, &obs(1.0, 100, None)).unwrap().is_empty());
        assert!(s.ready(&obs(3.0, 100, None)));
        let a = s.tick(&mut gc, &obs(3.0, 100, None)).unwrap();
        assert_eq!(a[0].action, "set_threshold(700, 10, 2147483647)", "{a:?}");
        assert_eq!(gc.threshold, [700, 10, HELD_BACK]);
        assert!(a[1].action.ends_with("gc.freeze()"), "{a:?}");
        assert_eq!(gc.calls[2..], ["collect(2)", "freeze"]);
        assert!(s.frozen);
    }

    #[test]
    fn where_requests_are_counted_the_warm_up_is_serving_time() {
        let (mut s, mut gc) = started(SchedulerConfig::default());
        let none_yet = Traffic {
            in_flight: 0,
            now_ns: 0,
            arrivals: &[],
            total: 0,
        };
        // A middleware is there but the service still starts: no warm-up has begun, however
        // long that takes.
        for secs in [3.0, 10.0] {
            assert!(!s.ready(&obs(secs, 100, Some(none_yet))));
            assert!(s
                .tick(&mut gc, &obs(secs, 100, Some(none_yet)))
                .unwrap()
                .is_empty());
        }
        assert_eq!(gc.threshold, [700, 10, 10]);
        // The first request at 10.5 s, seen at 11 s: warm 3 s after it.
        let arrivals = [10_500_000_000u64, 10_900_000_000];
        let serving = |now: f64| Traffic {
            in_flight: 0,
            now_ns: (now * 1e9) as u64,
            arrivals: &arrivals,
            total: 2,
        };
        for secs in [11.0, 13.4] {
            assert!(!s.ready(&obs(secs, 100, Some(serving(secs)))), "{secs}");
            assert!(s
                .tick(&mut gc, &obs(secs, 100, Some(serving(secs))))
                .unwrap()
                .is_empty());
        }
        assert!(s.ready(&obs(13.5, 100, Some(serving(13.5)))));
        let a = s
            .tick(&mut gc, &obs(13.5, 100, Some(serving(13.5))))
            .unwrap();
        assert_eq!(gc.threshold, [700, 10, HELD_BACK], "{a:?}");
        assert!(
            a.iter().any(|x| x.action.ends_with("gc.freeze()")
                && x.reason
                    .starts_with("warm-up of 3.0 s over (counted from the first request)")),
            "{a:?}"
        );
    }

    #[test]
    fn waits_for_a_quiet_window_then_gives_up_waiting() {
        let cfg = SchedulerConfig {
            freeze: false,
            warmup: Duration::from_millis(500),
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        // Growth during the warm-up is the heap being built, not garbage.
        assert!(s.tick(&mut gc, &obs(0.2, 300, None)).unwrap().is_empty());
        // Warm at 100 MiB; then 12 MiB grown past it: a collection is needed.
        assert!(takes_control_only(
            &s.tick(&mut gc, &obs(0.5, 100, None)).unwrap()
        ));
        assert_eq!(
            s.budget(),
            356 * MIB,
            "twice the warm heap, and 256 MiB above it"
        );
        let arrivals = steady_arrivals();
        let busy = busy(&arrivals);
        assert!(!s.ready(&obs(1.0, 112, Some(busy))));
        assert!(s
            .tick(&mut gc, &obs(1.0, 112, Some(busy)))
            .unwrap()
            .is_empty());
        // Quiet: nothing in flight, and a silence far longer than any gap (0.9 s: it lasts
        // another 50 ms with chance 0.9 / 0.95).
        let quiet = Traffic {
            in_flight: 0,
            now_ns: 1_400_000_000,
            arrivals: &arrivals,
            total: 100,
        };
        assert!(s.ready(&obs(1.5, 112, Some(quiet))));
        let a = s.tick(&mut gc, &obs(1.5, 112, Some(quiet))).unwrap();
        assert!(a[0].reason.contains("quiet window"), "{a:?}");
        assert!(a[0].reason.contains("memory grew 12 MiB"), "{a:?}");
        // Needed again (12 MiB past the 112 MiB live after it), never quiet: after max_wait it
        // runs anyway, once nothing is in flight, or with requests in flight after `idle_wait`.
        for (t, rss) in [(2.0, 124), (4.1, 125), (4.15, 125)] {
            assert!(s
                .tick(&mut gc, &obs(t, rss, Some(busy)))
                .unwrap()
                .is_empty());
        }
        let a = s.tick(&mut gc, &obs(4.25, 125, Some(busy))).unwrap();
        assert!(a[0].reason.contains("no quiet window in 2.00 s"), "{a:?}");
        assert!(
            a[0].reason.contains("2 still in flight after 150 ms"),
            "{a:?}"
        );
        assert!(a[0].reason.contains("; 2 in flight"), "{a:?}");
        // Needed again, and memory grows on while it waits: past the trigger by a quarter, it
        // waits no more for a quiet window, only for the requests in flight to end (and not
        // for that past `idle_wait`).
        for (t, rss) in [(4.3, 139), (4.4, 142)] {
            assert!(s
                .tick(&mut gc, &obs(t, rss, Some(busy)))
                .unwrap()
                .is_empty());
        }
        let a = s.tick(&mut gc, &obs(4.55, 142, Some(busy))).unwrap();
        assert!(
            a[0].reason
                .contains("memory cannot wait: 17 MiB grown since the last full collection"),
            "{a:?}"
        );
        assert!(
            a[0].reason.contains("2 still in flight after 150 ms"),
            "{a:?}"
        );
        // `idle_wait=0`: no wait for it either.
        let cfg = SchedulerConfig {
            idle_wait: Duration::ZERO,
            ..cfg
        };
        let (mut s, mut gc) = started(cfg);
        assert!(takes_control_only(
            &s.tick(&mut gc, &obs(0.5, 100, None)).unwrap()
        ));
        assert!(s
            .tick(&mut gc, &obs(1.0, 112, Some(busy)))
            .unwrap()
            .is_empty());
        let a = s.tick(&mut gc, &obs(3.1, 112, Some(busy))).unwrap();
        assert!(a[0].reason.contains("no quiet window in 2.00 s"), "{a:?}");
        assert!(!a[0].reason.contains("still in flight"), "{a:?}");
    }

    #[test]
    fn the_freeze_after_the_warm_up_waits_no_longer_than_memory_allows() {
        let (mut s, mut gc) = started(SchedulerConfig::default());
        let arrivals = steady_arrivals();
        let busy = busy(&arrivals);
        let a = s.tick(&mut gc, &obs(3.0, 100, Some(busy))).unwrap();
        assert!(takes_control_only(&a), "{a:?}");
        // Busy: the freeze waits for a quiet window while memory grows within the trigger's 10
        // MiB and a quarter...
        for (t, rss) in [(3.5, 105), (4.0, 112)] {
            assert!(s
                .tick(&mut gc, &obs(t, rss, Some(busy)))
                .unwrap()
                .is_empty());
        }
        // ... and no longer, well before its 2 s: as soon as nothing is in flight (no window
        // for its 50 ms pause, the next arrival due within 5 ms).
        assert!(s
            .tick(&mut gc, &obs(4.2, 113, Some(busy)))
            .unwrap()
            .is_empty());
        let idle = idle(&arrivals);
        assert!(s.ready(&obs(4.25, 113, Some(idle))));
        let a = s.tick(&mut gc, &obs(4.25, 113, Some(idle))).unwrap();
        assert!(a[0].action.ends_with("gc.freeze()"), "{a:?}");
        assert!(a[0].reason.contains("memory cannot wait"), "{a:?}");
        assert!(
            a[0].reason.contains("nothing in flight after 50 ms"),
            "{a:?}"
        );
        assert!(a[0].reason.contains("; 0 in flight"), "{a:?}");
    }

    /// A model whose net adds `correction` to the survival estimate's logit for every question
    /// (an LSTM with zero weights and the output bias set), with the given priors.
    fn model(correction: f32, priors: neurogc_model::scheduler::Priors) -> SchedulerModel {
        use neurogc_model::model::TensorMap;
        use neurogc_model::scheduler::*;
        let h = 2;
        // (QUIET_INPUTS inputs per step.)
        let mut t = TensorMap::new();
        let zeros = |n| vec![0f32; n];
        t.insert_f32(
            "lstm.weight_ih_l0",
            vec![4 * h, QUIET_INPUTS],
            zeros(4 * h * QUIET_INPUTS),
        );
        t.insert_f32("lstm.weight_hh_l0", vec![4 * h, h], zeros(4 * h * h));
        t.insert_f32("lstm.bias_ih_l0", vec![4 * h], zeros(4 * h));
        t.insert_f32("lstm.bias_hh_l0", vec![4 * h], zeros(4 * h));
        t.insert_f32("fc.weight", vec![1, h], zeros(h));
        t.insert_f32("fc.bias", vec![1], vec![correction]);
        let meta = SchedulerMeta {
            format: SCHEDULER_FORMAT.into(),
            quiet: QuietMeta {
                hidden: h,
                layers: 1,
                gaps: QUIET_GAPS,
                inputs: QUIET_INPUT_NAMES.iter().map(|s| s.to_string()).collect(),
                scale: InputScale {
                    mean: vec![0.0; QUIET_INPUTS],
                    std: vec![1.0; QUIET_INPUTS],
                },
                use_net: true,
                metrics: QuietMetrics::default(),
            },
            priors,
            data: vec![],
            training: serde_json::Value::Null,
        };
        SchedulerModel::from_parts(meta, &t).unwrap()
    }

    #[test]
    fn the_model_answers_the_quiet_window_question() {
        let cfg = SchedulerConfig {
            freeze: false,
            warmup: Duration::from_millis(500),
            ..SchedulerConfig::default()
        };
        let arrivals = steady_arrivals();
        // Nothing in flight, 1 ms after an arrival of a 5 ms beat: the gaps' survival says the
        // next one comes within the pause; a net that learned otherwise is believed, one that
        // learned nothing answers as the estimate, one not shown better is not asked.
        let between = Traffic {
            in_flight: 0,
            now_ns: 496_000_000,
            arrivals: &arrivals,
            total: 100,
        };
        for (correction, use_net, collects) in [
            (None, true, false),
            (Some(30.0), true, true),
            (Some(0.0), true, false),
            (Some(30.0), false, false),
        ] {
            let (s, mut gc) = started(cfg);
            let mut s = match correction {
                Some(c) => {
                    let mut m = model(c, Default::default());
                    m.meta.quiet.use_net = use_net;
                    s.with_model(m)
                }
                None => s,
            };
            s.tick(&mut gc, &obs(0.5, 100, None)).unwrap();
            // A tick nobody asked `ready` before (a sample's) does not run the net: the
            // estimate answers, and waits.
            let early = obs(0.9, 112, Some(between));
            assert!(s.tick(&mut gc, &early).unwrap().is_empty());
            assert_eq!(s.net_answer, None);
            // Asked without the interpreter first, as the agent does: the net runs there only.
            let o = obs(1.0, 112, Some(between));
            assert_eq!(s.ready(&o), collects, "{correction:?} {use_net}");
            let a = s.tick(&mut gc, &o).unwrap();
            assert_eq!(!a.is_empty(), collects, "{correction:?} {use_net}: {a:?}");
            if collects {
                assert!(a[0].reason.contains("= 1.00 (model)"), "{a:?}");
            }
            // In flight is never quiet, whatever the model says.
            let busy = busy(&arrivals);
            assert!(s
                .tick(&mut gc, &obs(1.1, 112, Some(busy)))
                .unwrap()
                .is_empty());
        }
    }

    #[test]
    fn a_model_that_adds_nothing_says_so_and_decides_as_none() {
        // No net asked, no priors: what a model of several services whose net lost comes to.
        let mut m = model(30.0, Default::default());
        m.meta.quiet.use_net = false;
        assert!(m.adds_nothing());
        let (s, mut gc) = started_now();
        let mut s = s.with_model(m);
        let a = s.start(&mut gc, &obs(0.0, 100, None)).unwrap();
        assert!(a[0].reason.contains("adds nothing"), "{a:?}");
        let (plain, _) = started_now();
        let t = busy(&[]);
        assert_eq!(
            s.cadence(&obs(5.0, 100, Some(t))),
            plain.cadence(&obs(5.0, 100, Some(t)))
        );
        // A net that is asked, or one prior, is something.
        assert!(!model(0.0, Default::default()).adds_nothing());
        let mut with_prior = model(
            0.0,
            neurogc_model::scheduler::Priors {
                full_pause_ms: Some(300.0),
                ..Default::default()
            },
        );
        with_prior.meta.quiet.use_net = false;
        assert!(!with_prior.adds_nothing());
    }

    #[test]
    fn the_models_priors_stand_in_until_its_own_collections_teach_it() {
        let priors = neurogc_model::scheduler::Priors {
            full_pause_ms: Some(300.0),
            unfrozen_a_ms: Some(1.0),
            unfrozen_b_ms: Some(0.1),
            freed_per_request: Some(200.0),
            collections: 8,
        };
        let (s, mut gc) = started_now();
        let mut s = s.with_model(model(0.0, priors));
        s.cfg.pause = Duration::from_millis(5);
        let freeze = Plan::Freeze;
        let o = obs(1.0, 100, Some(busy(&[])));
        assert_eq!(s.predicted_pause_ms(&freeze, &o), 300.0);
        let a = s.start(&mut gc, &obs(0.0, 100, None)).unwrap();
        assert!(a[0].reason.contains("full pause 300.0 ms"), "{a:?}");
        // The cadence from a + b·w at 200 requests a second: the garbage alone delays more
        // than the tail's share, so the pauses are kept at the 5 ms target: (5 − 1) / 0.1.
        let arrivals: Vec<u64> = (0..100).map(|i| i * 5_000_000).collect();
        let t = busy(&arrivals);
        assert!((s.cadence(&obs(5.0, 100, Some(t))) - 40.0).abs() < 1e-6);
        // Without a model, until three collections are timed: 50 requests, then half again
        // the longest interval measured, up to 400.
        let (mut plain, _) = started_now();
        assert_eq!(plain.cadence(&obs(5.0, 100, Some(t))), 50.0);
        plain.pause_model.add(50.0, 9.0);
        assert_eq!(plain.cadence(&obs(5.0, 100, Some(t))), 75.0);
        plain.pause_model.add(300.0, 20.0);
        assert_eq!(plain.cadence(&obs(5.0, 100, Some(t))), 400.0);
        // Without a middleware: seconds of work.
        let (plain, _) = started_now();
        assert_eq!(plain.cadence(&obs(5.0, 100, None)), 0.25);
        // Three of its own collections replace the prior: pauses of 1 + 0.3·w, which the CPU
        // budget would allow every 5 requests (2.5 ms each), under the 5 ms target, which sets
        // the cadence: (5 − 1) / 0.3. (Test configured at 5 ms: the default 1 ms would leave
        // the shortest cadence, 10 requests, in both cases.)
        for w in [10.0, 20.0, 30.0] {
            s.pause_model.add(w, 1.0 + 0.3 * w);
        }
        assert!((s.cadence(&obs(5.0, 100, Some(t))) - 4.0 / 0.3).abs() < 1e-6);
    }

    #[test]
    fn stops_waiting_where_quiet_windows_never_come_and_probes_again() {
        let cfg = SchedulerConfig {
            freeze: false,
            growth: 0.01,
            min_growth: 16 * MIB,
            warmup: Duration::from_millis(500),
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        assert!(takes_control_only(
            &s.tick(&mut gc, &obs(0.5, 100, None)).unwrap()
        ));
        let arrivals = steady_arrivals();
        let busy = busy(&arrivals);
        let (mut t, mut rss) = (1.0, 100);
        let mut moments = Vec::new();
        for _ in 0..12 {
            rss += 18; // a collection is needed again (not yet pressing)
            for _ in 0..100 {
                let a = s.tick(&mut gc, &obs(t, rss, Some(busy))).unwrap();
                t += 0.25;
                if let Some(x) = a.first() {
                    moments.push(if x.reason.contains("no quiet window") {
                        'W'
                    } else if x.reason.contains("not waiting") {
                        'N'
                    } else {
                        '?'
                    });
                    break;
                }
            }
        }
        // Three waits that found nothing, then no more waiting but every 8th, which probes.
        assert_eq!(moments.iter().collect::<String>(), "WWWNNNNNNNWN");
    }

    #[test]
    fn a_need_inside_a_burst_waits_for_the_idle_gap_after_it() {
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen);
        // Bursts of 300 arrivals 2 ms apart (500 a second, 0.598 s), 300 ms of silence after
        // each; now 100 arrivals into the fourth, one in flight.
        const MS: u64 = 1_000_000;
        let mut arrivals = Vec::new();
        let mut t = 0;
        for n in [300, 300, 300, 100] {
            for _ in 0..n {
                arrivals.push(t);
                t += 2 * MS;
            }
            t += 300 * MS;
        }
        let last = *arrivals.last().unwrap();
        let at = |secs, in_flight, silence_ms| {
            obs(
                secs,
                100,
                Some(Traffic {
                    in_flight,
                    now_ns: last + silence_ms * MS,
                    arrivals: &arrivals,
                    total: 1000,
                }),
            )
        };
        // Due (400 requests without a pause model), inside the burst: it waits. Half the cadence
        // at this rate is 0.4 s; the bursts last 0.598 s, and the wait with them.
        for secs in [5.0, 5.45, 5.55] {
            assert!(
                s.tick(&mut gc, &at(secs, 1, 1)).unwrap().is_empty(),
                "{secs}"
            );
        }
        // The burst is over: 50 ms of silence, a window for the collection.
        let a = s.tick(&mut gc, &at(5.65, 0, 50)).unwrap();
        assert!(a[0].reason.starts_with("due"), "{a:?}");
        assert!(a[0].reason.contains("quiet window"), "{a:?}");
        // A burst longer than the wait may last: it runs anyway, after `idle_wait` with a
        // request in flight.
        s.last_full_work = 0.0;
        for secs in [7.0, 7.61] {
            assert!(s.tick(&mut gc, &at(secs, 1, 1)).unwrap().is_empty());
        }
        let a = s.tick(&mut gc, &at(7.75, 1, 1)).unwrap();
        assert!(a[0].reason.contains("no quiet window in 0.60 s"), "{a:?}");
        assert!(
            a[0].reason.contains("1 still in flight after 140 ms"),
            "{a:?}"
        );
    }

    #[test]
    fn the_guard_keeps_its_budget() {
        let cfg = SchedulerConfig {
            rss_budget: Some(200 * MIB),
            freeze: false,
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        let a = s.tick(&mut gc, &obs(1.0, 300, None)).unwrap();
        assert!(
            a[0].reason.contains("guard: rss 300 MiB > budget 200 MiB"),
            "{a:?}"
        );
        // Still above right after: said once, and the budget is not raised.
        let a = s.tick(&mut gc, &obs(1.1, 300, None)).unwrap();
        assert!(a.iter().any(|x| x.action == "over budget"), "{a:?}");
        assert_eq!(s.budget(), 200 * MIB);
        assert!(s
            .tick(&mut gc, &obs(1.2, 300, None))
            .unwrap()
            .iter()
            .all(|x| x.action != "over budget"));
    }

    #[test]
    fn a_frozen_heap_over_budget_is_unfrozen() {
        let cfg = SchedulerConfig {
            rss_budget: Some(200 * MIB),
            warmup: Duration::ZERO,
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen);
        // The agent asks `ready` first, without the interpreter: asking does not spend the
        // guard's turn (it did, and the guard then waited for the pace while RSS passed the
        // budget by 10 % on cycle-leak).
        let over = obs(1.0, 250, None);
        assert!(s.ready(&over));
        let a = s.tick(&mut gc, &over).unwrap();
        assert!(a[0].action.starts_with("collect(2)"), "{a:?}");
        assert_eq!(gc.triggers, [Trigger::Freeze, Trigger::Guard]);
        // Collecting the unfrozen part left it above the budget: the next turn unfreezes, at
        // once, not after the pace that holds back collections of live memory.
        let a = s.tick(&mut gc, &obs(1.05, 250, None)).unwrap();
        assert!(refroze(&a), "{a:?}");
        // Both handed what they freed back to the system before RSS was read again.
        assert_eq!(gc.released, 2);
        // Still above after a collection of the whole heap: live memory, reported once, and
        // the guard waits for its pace.
        let a = s.tick(&mut gc, &obs(1.1, 250, None)).unwrap();
        assert!(a.iter().any(|x| x.action == "over budget"), "{a:?}");
        let guard = |gc: &RecordingGc| gc.triggers.iter().filter(|&&t| t == Trigger::Guard).count();
        assert_eq!(guard(&gc), 2);
        s.tick(&mut gc, &obs(1.5, 250, None)).unwrap();
        assert_eq!(guard(&gc), 2);
        s.tick(&mut gc, &obs(2.1, 250, None)).unwrap();
        assert_eq!(guard(&gc), 3);
    }

    #[test]
    fn a_stale_freeze_is_refrozen_and_a_useless_one_backs_off() {
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        // Not 5 s after the freeze yet: memory alone is no staleness (the growth is collected).
        let a = s.tick(&mut gc, &obs(3.0, 150, None)).unwrap();
        assert!(!refroze(&a), "{a:?}");
        // Steady, and that collection left 150 MiB in use against 100 at the freeze (> 100 ×
        // 1.10 + 16). (Past the first 10 s of serving after the freeze: sooner, the early rule
        // would answer first.)
        let a = s.tick(&mut gc, &obs(12.0, 150, None)).unwrap();
        assert!(a[0].action.starts_with("gc.unfreeze()"), "{a:?}");
        assert!(
            a[0].reason.starts_with(
                "stale freeze: 150 MiB in use after the last full collection, 100 MiB at the \
                 freeze"
            ),
            "{a:?}"
        );
        // It gave nothing back (RecordingGc collects 0): the next one needs twice the growth.
        assert_eq!(s.stale_growth, 0.2);
    }

    #[test]
    fn a_warm_heap_that_turns_over_within_seconds_is_refrozen_at_once() {
        // 140 MiB in use before the freeze's collection, 113 after it; the documents frozen
        // then die within seconds, and what the collections of the unfrozen part leave climbs
        // back: 32 MiB (over 10 % of the live heap + 16 MiB) within 10 s of the freeze is a
        // re-freeze, long before the staleness limit (140 × 1.10 + 16 = 170 MiB).
        // The re-freeze frees 200 k objects, more than the collections of the unfrozen part
        // did (150 k), which so soon says little. 200 k of 100 k frozen (the documents): the
        // heap turns over, it is left to CPython's rule. Of 1 M (request traces frozen with a
        // catalogue, while a live cache fills): frozen again, and no second early re-freeze.
        // With no count of the frozen objects, only the other test is left.
        for (at, frozen, stale, turns) in [
            (3.0, Some(100_000), true, true),
            (3.0, Some(1_000_000), true, false),
            (3.0, None, true, true),
            (12.0, Some(100_000), false, false),
        ] {
            let (mut s, mut gc) = started_now();
            gc.freed = 50_000;
            gc.frozen = frozen;
            s.tick(&mut gc, &obs(0.1, 140, None)).unwrap();
            assert!(s.frozen);
            // Due collections of the unfrozen part leave 113 MiB.
            for t in [0.5, 0.8] {
                s.tick(&mut gc, &obs(t, 113, None)).unwrap();
            }
            // The growth trigger collects the unfrozen part; it leaves 145 MiB in use.
            let a = s.tick(&mut gc, &obs(at, 145, None)).unwrap();
            assert!(a[0].reason.contains("memory grew"), "{a:?}");
            gc.freed = 200_000;
            let a = s.tick(&mut gc, &obs(at + 0.5, 145, None)).unwrap();
            assert_eq!(refroze(&a), stale, "{at}: {a:?}");
            if !stale {
                continue;
            }
            assert!(
                a[0].reason.starts_with(
                    "stale freeze within 10 s of serving: 145 MiB in use after the last full \
                     collection, 113 MiB after the freeze's"
                ),
                "{a:?}"
            );
            assert_eq!(a[0].action.contains("left unfrozen"), turns, "{a:?}");
            assert_eq!(s.frozen, !turns);
            assert_eq!(
                a[0].reason
                    .contains("yet it freed under 40 % of the frozen objects"),
                !turns,
                "{a:?}"
            );
            if !turns {
                // The same rise again within seconds of the new freeze: no second one.
                gc.freed = 50_000;
                for t in [at + 1.0, at + 1.3] {
                    s.tick(&mut gc, &obs(t, 113, None)).unwrap();
                }
                let a = s.tick(&mut gc, &obs(at + 3.0, 145, None)).unwrap();
                assert!(a[0].reason.contains("memory grew"), "{a:?}");
                let a = s.tick(&mut gc, &obs(at + 3.5, 145, None)).unwrap();
                assert!(!refroze(&a), "{a:?}");
            }
        }
    }

    #[test]
    fn the_fast_turnover_window_is_the_traffic_at_the_freeze() {
        // Frozen at 190 req/s: 10 s of serving are 1900 requests from then on.
        let (mut s, _) = started_now();
        // 20 arrivals 5 ms apart, 100 ms to now; then 100, 1 ms apart.
        let steady: Vec<u64> = (0..20).map(|i| i * 5_000_000).collect();
        let burst: Vec<u64> = (0..100).map(|i| i * 1_000_000).collect();
        let served = |arrivals, total| Traffic {
            total,
            now_ns: 100_000_000,
            ..busy(arrivals)
        };
        s.mark_frozen(&obs(0.1, 140, Some(served(&steady, 0))));
        s.floor_since_freeze = Some(113 << 20);
        s.last_full = Duration::from_secs(2);
        let risen = 145 << 20;
        let judged = |s: &mut Scheduler, traffic| {
            s.fast_turnover(&obs(3.0, 145, traffic), risen, 0.0)
                .is_some()
        };
        assert!(judged(&mut s, Some(served(&steady, 1800))));
        assert!(!judged(&mut s, Some(served(&steady, 2000))));
        // A burst at 990 req/s later does not stretch it to 9900 requests.
        assert!(!judged(&mut s, Some(served(&burst, 2000))));
        // Nor are seconds compared with requests (a middleware gone).
        assert!(!judged(&mut s, None));
    }

    #[test]
    fn the_requests_frozen_with_the_warm_heap_do_not_make_it_stale() {
        // 250 MiB at the freeze: 25 + 15 MiB more left by a collection of the unfrozen part
        // (the traces frozen with it, now dead) is under the 10 % + 16 MiB that makes it stale.
        // (The collection frees the request garbage of the unfrozen part.) Past the early
        // rule's 10 s, whose limit here is the same 41 MiB over the freeze's 250.
        for (mib, stale) in [(290, false), (292, true)] {
            let (mut s, mut gc) = started_now();
            gc.freed = 50_000;
            s.tick(&mut gc, &obs(0.1, 250, None)).unwrap();
            assert!(s.frozen);
            let a = s.tick(&mut gc, &obs(12.0, mib, None)).unwrap();
            assert!(a[0].reason.contains("memory grew"), "{a:?}");
            let a = s.tick(&mut gc, &obs(12.5, mib, None)).unwrap();
            assert_eq!(refroze(&a), stale, "{mib}: {a:?}");
            if stale {
                assert!(refroze_at_the_limit(&a), "{a:?}");
            }
        }
    }

    #[test]
    fn memory_the_next_collection_frees_does_not_make_a_freeze_stale() {
        // Young and unfrozen garbage (a large threshold0) lifts the memory in use past the
        // margin between collections; what a collection leaves is under it.
        let (mut s, mut gc) = started_now();
        gc.freed = 50_000;
        s.tick(&mut gc, &obs(0.1, 250, None)).unwrap();
        let a = s.tick(&mut gc, &obs(8.0, 300, None)).unwrap();
        assert!(!refroze(&a) && a[0].reason.contains("memory grew"), "{a:?}");
        // It left 260 MiB; garbage piles up to 300 again before the next one.
        let _ = s.tick(&mut gc, &obs(8.5, 260, None)).unwrap();
        let a = s.tick(&mut gc, &obs(9.0, 300, None)).unwrap();
        assert!(!refroze(&a), "{a:?}");
    }

    #[test]
    fn memory_in_use_past_the_staleness_limit_is_looked_at_before_the_growth_trigger() {
        // 200 MiB at the freeze: stale past 200 × 1.10 + 16 = 236 MiB. The last full
        // collection left 225; 239 in use is 14 MiB of growth, under the growth trigger's 22.5,
        // yet past the limit: a collection of the unfrozen part says whether the frozen part is
        // stale, and what it leaves decides.
        for (left, stale) in [(238, true), (234, false)] {
            let (mut s, mut gc) = started_now();
            gc.freed = 50_000;
            s.tick(&mut gc, &obs(0.1, 200, None)).unwrap();
            let a = s.tick(&mut gc, &obs(8.0, 225, None)).unwrap();
            assert!(a[0].reason.contains("memory grew"), "{a:?}");
            assert!(s.tick(&mut gc, &obs(8.5, 225, None)).unwrap().is_empty());
            let a = s.tick(&mut gc, &obs(12.0, 239, None)).unwrap();
            assert!(
                a[0].action.starts_with("collect(2)")
                    && a[0].reason.contains(
                        "239 MiB in use passed the staleness limit of 236 MiB (200 MiB at the \
                         freeze)"
                    ),
                "{a:?}"
            );
            let a = s.tick(&mut gc, &obs(12.5, left, None)).unwrap();
            assert_eq!(refroze(&a), stale, "{left}: {a:?}");
            if !stale {
                // Young garbage 3 MiB over what it left: under `min_growth`, not collected again.
                assert!(s.tick(&mut gc, &obs(13.0, 237, None)).unwrap().is_empty());
            }
        }
        // Where the unfrozen part's last due collections freed little (the cadence stretched),
        // the collection that would tell is skipped: its answer is known, and its pause would
        // come just before the re-freeze's.
        let (mut s, mut gc) = started_now();
        gc.freed = 50_000;
        s.tick(&mut gc, &obs(0.1, 200, None)).unwrap();
        s.tick(&mut gc, &obs(8.0, 225, None)).unwrap();
        s.stretch = 2.0;
        let a = s.tick(&mut gc, &obs(12.0, 239, None)).unwrap();
        assert!(refroze(&a), "{a:?}");
        assert!(
            a[0].reason.contains(
                "239 MiB in use passed the staleness limit of 236 MiB (200 MiB at the freeze), \
                 and the unfrozen part's last collections freed under 200 objects per ms"
            ),
            "{a:?}"
        );
    }

    #[test]
    fn a_heap_that_turns_over_is_left_unfrozen() {
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen);
        // The re-freeze frees half of what was frozen: long-lived objects, dead seconds later;
        // stale past the early rule's 10 s.
        let a = left_unfrozen_after_turnover(&mut s, &mut gc, 11.0, 13.0);
        assert!(refroze_at_the_limit(&a), "{a:?}");
        assert!(a[0].reason.contains("turns over"), "{a:?}");
        assert!(
            a[0].reason
                .contains("it freed 50 % of the frozen objects (40 % or more)"),
            "{a:?}"
        );
        assert!(!s.frozen);
        // CPython's own rule for full collections is back, after the collection.
        let calls: Vec<&str> = gc.calls.iter().rev().take(2).map(String::as_str).collect();
        assert_eq!(calls, ["set_threshold([700, 10, 10])", "collect(2)"]);
        assert_eq!(gc.threshold, [700, 10, 10]);
        // No freeze again, and memory growth is CPython's rule's to collect, as under the
        // default ...
        let a = s.tick(&mut gc, &obs(14.0, 190, None)).unwrap();
        assert!(a.is_empty(), "{a:?}");
        // ... with the guard under it (budget: 256 MiB over the 100 MiB after the warm-up).
        let a = s.tick(&mut gc, &obs(15.0, 400, None)).unwrap();
        assert!(a.iter().all(|x| !x.action.contains("freeze")), "{a:?}");
        assert!(a.iter().any(|x| x.reason.contains("guard")), "{a:?}");
    }

    #[test]
    fn a_re_freeze_that_frees_a_small_share_keeps_freezing() {
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        gc.frozen = Some(1_000_000);
        // 12 s apart: each past the early rule's 10 s after the last (re-)freeze.
        for (t, mib) in [(12.0, 150), (24.0, 190), (36.0, 230)] {
            // Growth collected first, freeing more than the re-freeze will: most old garbage
            // dies unfrozen. What it leaves is over the margin: re-frozen.
            gc.freed = 120_000;
            let _ = s.tick(&mut gc, &obs(t, mib, None)).unwrap();
            gc.freed = 100_000;
            let a = s.tick(&mut gc, &obs(t + 0.5, mib, None)).unwrap();
            assert!(
                a[0].action
                    .ends_with("-> 100000 of 1000000 frozen in 0.0 ms; gc.freeze()"),
                "{a:?}"
            );
            assert!(a[0].reason.contains("unfrozen part freed 120000"), "{a:?}");
            assert!(refroze_at_the_limit(&a), "{a:?}");
        }
        assert!(s.frozen);
    }

    #[test]
    fn a_heap_whose_old_garbage_dies_frozen_is_left_unfrozen() {
        // A re-freeze that frees 15 % of the frozen objects, more than the collections of the
        // unfrozen part had freed since the freeze (a cache that evicts what was frozen).
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        gc.frozen = Some(1_000_000);
        gc.freed = 5_000;
        // (Past the first 10 s after the freeze: sooner, only the share would tell.)
        let _ = s.tick(&mut gc, &obs(12.0, 150, None)).unwrap();
        gc.freed = 150_000;
        let a = s.tick(&mut gc, &obs(12.5, 150, None)).unwrap();
        assert!(a[0].action.contains("left unfrozen"), "{a:?}");
        assert!(
            a[0].reason
                .contains("more than the 5000 objects the collections of the unfrozen part"),
            "{a:?}"
        );
        assert!(!s.frozen);
    }

    #[test]
    fn turnover_is_a_share_of_the_frozen_heap_or_most_of_the_old_garbage() {
        assert!(turns_over(400, Some(1_000), 10_000));
        assert!(!turns_over(399, Some(1_000), 10_000));
        assert!(turns_over(399, Some(1_000), 398));
        assert!(!turns_over(399, Some(1_000), 399));
        // Where the frozen count is unknown, only the second test speaks.
        assert!(!turns_over(399, None, 399));
        assert!(turns_over(400, None, 399));
    }

    #[test]
    fn collections_that_free_little_stretch_the_cadence() {
        let (mut s, mut gc) = started_now();
        let arrivals = steady_arrivals();
        let with = |total| Traffic {
            total,
            ..busy(&arrivals)
        };
        // No traffic yet: frozen at once (a quiet moment).
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen);
        s.last_full_work = 0.0;
        // 40 ms for 1000 objects: a scan of live objects. Twice: the cadence is stretched 4 ×.
        s.learn_yield(1000, 40.0, true);
        s.learn_yield(1000, 40.0, true);
        assert_eq!(s.stretch, 4.0);
        // A cheap collection says nothing either way.
        s.learn_yield(0, 4.5, true);
        // Nor does a slow one that was not due (memory grew, or a quiet moment).
        s.learn_yield(0, 40.0, false);
        assert_eq!(s.stretch, 4.0);
        // Without a pause model the cadence is 50 requests at first: 150 since the freeze are
        // not due.
        s.last_full = Duration::from_secs(100);
        assert_eq!(s.due(&obs(100.5, 100, Some(with(150)))), None);
        let due = s.due(&obs(100.5, 100, Some(with(250)))).expect("due");
        assert!(
            format!("{due:?}").contains("every 200 requests (× 4"),
            "{due:?}"
        );
        // One that frees much puts it back.
        s.learn_yield(100_000, 40.0, false);
        assert_eq!(s.stretch, 1.0);
    }

    #[test]
    fn a_quiet_window_is_used_only_after_work() {
        let (mut s, mut gc) = started_now();
        let idle = |total| Traffic {
            in_flight: 0,
            now_ns: 60_000_000_000,
            arrivals: &[],
            total,
        };
        s.tick(&mut gc, &obs(0.1, 100, Some(idle(0)))).unwrap();
        assert!(s.frozen);
        // Quiet, seconds after the freeze, but not a request served since: nothing to collect.
        assert!(s
            .tick(&mut gc, &obs(5.0, 100, Some(idle(0))))
            .unwrap()
            .is_empty());
        // Requests served since (fewer than the first cadence's 50), then quiet: a free
        // collection.
        let a = s.tick(&mut gc, &obs(6.0, 100, Some(idle(30)))).unwrap();
        assert!(a[0].action.starts_with("collect(2)"), "{a:?}");
        assert!(a[0].reason.contains("opportunistic"), "{a:?}");
        // And not again until more work.
        assert!(s
            .tick(&mut gc, &obs(8.0, 100, Some(idle(30))))
            .unwrap()
            .is_empty());
    }

    /// Arrivals 14 ms apart, the last 8 ms ago, nothing in flight: a steady rate with 6 ms
    /// of idle time left after each request.
    fn paced_arrivals() -> Vec<u64> {
        (0..100).map(|i| i * 14_000_000).collect()
    }

    fn paced(arrivals: &[u64], total: u64) -> Traffic<'_> {
        Traffic {
            in_flight: 0,
            now_ns: arrivals[arrivals.len() - 1] + 8_000_000,
            arrivals,
            total,
        }
    }

    /// The chance of a quiet window for a pause of `pause_ms` now, and its reason, as `decide`
    /// asks it.
    fn quiet(s: &mut Scheduler, o: &Observation, pause_ms: f64) -> (f64, String) {
        let burst = s.burst(o, pause_ms);
        let (p, by) = s.quiet_chance(o, pause_ms, burst);
        let slack = s.slack_ms(burst);
        (p, Scheduler::quiet_reason(pause_ms, slack, p, by))
    }

    #[test]
    fn a_pause_that_delays_the_next_arrival_by_the_slack_at_most_is_quiet() {
        let arrivals = paced_arrivals();
        let o = obs(10.0, 100, Some(paced(&arrivals, 100)));
        // A 7.5 ms pause: the next arrival, due in 6 ms, waits 1.5 ms.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        let (p, why) = quiet(&mut s, &o, 7.5);
        assert!(p >= 0.99, "{p}");
        assert!(
            why.contains("P(no arrival in 5.5 ms) = 1.00 (a 7.5 ms pause, 2.0 ms of slack)"),
            "{why}"
        );
        // A pause that would make it wait longer is not, nor any without slack.
        assert!(quiet(&mut s, &o, 9.0).0 < 0.1);
        let mut strict = Scheduler::new(
            "neurogc",
            SchedulerConfig {
                slack: Duration::ZERO,
                ..SchedulerConfig::default()
            },
        );
        assert!(quiet(&mut strict, &o, 7.5).0 < 0.1);
        // A pause within the slack is quiet with nothing in flight, whatever arrives.
        assert_eq!(quiet(&mut s, &o, 1.5).0, 1.0);
        // Bursts of 20 arrivals 5 ms apart, 500 ms between them, 1 ms after an arrival inside
        // one: a 5.5 ms pause would delay the next arrival, 4 ms away, by 1.5 ms, but that one
        // queues in a burst: no slack.
        let bursts: Vec<u64> = (0..40u64)
            .flat_map(|b| (0..20u64).map(move |i| b * 595_000_000 + i * 5_000_000))
            .collect();
        let mid_burst = bursts.len() - 5;
        let o = obs(
            10.0,
            100,
            Some(Traffic {
                in_flight: 0,
                now_ns: bursts[mid_burst] + 1_000_000,
                arrivals: &bursts[..=mid_burst],
                total: 800,
            }),
        );
        let (p, why) = quiet(&mut s, &o, 5.5);
        assert!(p > 0.0 && p < 0.5, "{p}");
        assert!(why.contains("(a 5.5 ms pause, 0.0 ms of slack)"), "{why}");
        // With `bursts=gaps`, no gap inside a burst is a window.
        let mut s = Scheduler::new(
            "neurogc",
            SchedulerConfig {
                burst_windows: BurstWindows::IdleGaps,
                ..SchedulerConfig::default()
            },
        );
        let (p, why) = quiet(&mut s, &o, 5.5);
        assert_eq!(p, 0.0);
        assert!(
            why.contains("= 0.00 (inside a burst) (a 5.5 ms pause, 0.0 ms of slack)"),
            "{why}"
        );
        // After the burst's last arrival, 20 median gaps (100 ms) of silence make the idle gap:
        // 1 ms short of it the burst may go on; at it, a 50 ms pause is quiet.
        let last = bursts.len() - 21;
        let after = |ms: u64| {
            obs(
                10.0,
                100,
                Some(Traffic {
                    in_flight: 0,
                    now_ns: bursts[last] + ms * 1_000_000,
                    arrivals: &bursts[..=last],
                    total: 800,
                }),
            )
        };
        assert_eq!(quiet(&mut s, &after(99), 50.0).0, 0.0);
        let (p, why) = quiet(&mut s, &after(100), 50.0);
        assert!(p >= 0.9, "{p} {why}");
    }

    #[test]
    fn a_fit_through_the_origin_predicts_no_pause_below_the_shortest_measured() {
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        // 6 ms + 0.16 ms a request: its own line.
        for (w, ms) in [(10.0, 7.6), (40.0, 12.4), (70.0, 17.2)] {
            s.pause_model.add(w, ms);
        }
        let p = s.fitted_pause(1.0).unwrap();
        assert!((p - 6.16).abs() < 0.01, "{p}");
        // A line whose intercept would be negative: through the origin, floored at 1 ms.
        s.pause_model = PauseModel::default();
        for (w, ms) in [(10.0, 1.0), (40.0, 12.0), (70.0, 23.0)] {
            s.pause_model.add(w, ms);
        }
        assert_eq!(s.fitted_pause(1.0), Some(1.0));
        assert!(s.fitted_pause(70.0).unwrap() > 20.0);
    }

    #[test]
    fn a_prediction_follows_pauses_that_drift_above_the_line() {
        // 6 ms + 0.16 ms a request, then the part that stays live grows: the last three paused
        // 4, 7 and 10 ms over what their work alone would have.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        let points = [
            (10.0, 7.6),
            (40.0, 12.4),
            (70.0, 17.2),
            (10.0, 7.6),
            (40.0, 12.4),
        ];
        for (w, ms) in points {
            s.pause_model.add(w, ms);
        }
        let on_the_line = s.fitted_pause(10.0).unwrap();
        assert!((on_the_line - 7.6).abs() < 0.01, "{on_the_line}");
        for (w, ms) in [(40.0, 16.4), (10.0, 14.6), (70.0, 27.2)] {
            s.pause_model.add(w, ms);
        }
        let (a, b) = s.pause_model.fit().unwrap();
        let least = [(40.0, 16.4), (10.0, 14.6), (70.0, 27.2)]
            .iter()
            .map(|&(w, ms)| ms - (a + b * w))
            .fold(f64::INFINITY, f64::min);
        assert!(least > 1.0, "all three above the refitted line: {least}");
        let followed = s.fitted_pause(10.0).unwrap();
        assert!(
            (followed - (a + b * 10.0 + least)).abs() < 1e-9,
            "{followed}"
        );
        // Off, the line alone.
        s.cfg.drift = PauseDrift::Off;
        assert!((s.fitted_pause(10.0).unwrap() - (a + b * 10.0)).abs() < 1e-9);
        // One of the last three at or below the line: noise, not drift.
        s.cfg.drift = PauseDrift::Follow;
        s.pause_model.add(40.0, 1.0);
        let (a, b) = s.pause_model.fit().unwrap();
        assert!((s.fitted_pause(10.0).unwrap() - (a + b * 10.0)).abs() < 1e-9);
    }

    #[test]
    fn where_due_collections_meet_requests_short_quiet_ones_come_sooner() {
        let (mut s, mut gc) = started_now();
        let arrivals = paced_arrivals();
        let a = s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen, "{a:?}");
        // Pauses of 6 ms + 0.16 ms per request (a cadence of about 40 requests), and due
        // collections that have found no quiet window.
        let learn = |s: &mut Scheduler, found: f64| {
            s.pause_model = PauseModel::default();
            for (w, ms) in [(10.0, 7.6), (40.0, 12.4), (70.0, 17.2)] {
                s.pause_model.add(w, ms);
            }
            s.quiet_found = Estimate::new();
            s.quiet_found.add(found);
        };
        learn(&mut s, 0.0);
        // A tick `after` seconds past the last collection, ten requests after it.
        let ten_requests_later = |s: &mut Scheduler, gc: &mut RecordingGc, after: f64| {
            let (at, base) = (s.last_full.as_secs_f64() + after, s.last_full_work as u64);
            s.tick(gc, &obs(at, 100, Some(paced(&arrivals, base + 10))))
                .unwrap()
        };
        // Ten requests after the last collection, a 7.6 ms pause: not within 76 ms of it (the CPU
        // budget, 10 %)...
        let a = ten_requests_later(&mut s, &mut gc, 0.05);
        assert!(a.is_empty(), "{a:?}");
        // ... but 100 ms after it, though a second has not passed nor half a cadence.
        let a = ten_requests_later(&mut s, &mut gc, 0.1);
        assert!(
            a.first()
                .is_some_and(|x| x.reason.contains("opportunistic")),
            "{a:?}"
        );
        // Where the due collections find their windows, not before half a cadence.
        learn(&mut s, 1.0);
        let a = ten_requests_later(&mut s, &mut gc, 0.1);
        assert!(a.is_empty(), "{a:?}");
    }

    #[test]
    fn nothing_is_collected_before_something_was_promoted() {
        let (mut s, mut gc) = started_now();
        let arrivals = steady_arrivals();
        let with = |total| Traffic {
            total,
            ..busy(&arrivals)
        };
        let counted = |secs, total, middle| Observation {
            collections: Some([5_000, middle, 0]),
            ..obs(secs, 100, Some(with(total)))
        };
        // Frozen at 7 middle-generation collections (no traffic yet: a quiet moment).
        let first = Observation {
            collections: Some([5_000, 7, 0]),
            ..obs(0.1, 100, None)
        };
        s.tick(&mut gc, &first).unwrap();
        assert!(s.frozen);
        // Past the cadence (50 requests at first without a pause model), but no middle-generation
        // collection since: the old generation holds only what was live at the freeze.
        assert_eq!(s.due(&counted(5.0, 1000, 7)), None);
        // One promoted: due.
        let due = s.due(&counted(5.0, 1000, 8)).expect("due");
        assert_eq!(due.trigger(), Trigger::Due);
        // Where nothing counts the collections, the cadence alone decides.
        assert!(s.due(&obs(5.0, 100, Some(with(1000)))).is_some());
        // And a quiet window is not used for an old generation nothing reached.
        let idle = Traffic {
            in_flight: 0,
            now_ns: 60_000_000_000,
            arrivals: &[],
            total: 30,
        };
        s.last_full_work = 0.0;
        let quiet = |middle| Observation {
            collections: Some([5_000, middle, 0]),
            ..obs(8.0, 100, Some(idle))
        };
        assert!(s.tick(&mut gc, &quiet(7)).unwrap().is_empty());
        let a = s.tick(&mut gc, &quiet(9)).unwrap();
        assert!(a[0].reason.contains("opportunistic"), "{a:?}");
    }

    #[test]
    fn middle_held_holds_the_middle_collections_and_waits_for_threshold1_young_ones() {
        let (mut s, mut gc) = started(SchedulerConfig {
            warmup: Duration::ZERO,
            middle: MiddleCollections::Held,
            ..SchedulerConfig::default()
        });
        let first = Observation {
            collections: Some([5_000, 7, 0]),
            ..obs(0.1, 100, None)
        };
        let a = s.tick(&mut gc, &first).unwrap();
        assert_eq!(
            a[0].action, "set_threshold(700, 2147483647, 2147483647)",
            "{a:?}"
        );
        assert!(a[0].reason.contains("middle and full collections"), "{a:?}");
        assert!(s.frozen);
        let arrivals = steady_arrivals();
        let counted = |young| Observation {
            collections: Some([young, 7, 0]),
            ..obs(
                5.0,
                100,
                Some(Traffic {
                    total: 1000,
                    ..busy(&arrivals)
                }),
            )
        };
        // Past the cadence; no middle collection will ever be counted, so the young ones say
        // when something is worth collecting: CPython's threshold1 (10) of them.
        assert_eq!(s.due(&counted(5_009)), None);
        assert_eq!(
            s.due(&counted(5_010)).map(|p| p.trigger()),
            Some(Trigger::Due)
        );
        // A heap that turns over gets both thresholds back.
        left_unfrozen_after_turnover(&mut s, &mut gc, 11.0, 13.0);
        assert_eq!(gc.threshold, [700, 10, 10]);
    }

    #[test]
    fn observes_only_where_it_cannot_hold_full_collections_back() {
        let mut gc = RecordingGc {
            collector: Collector::Incremental,
            ..RecordingGc::default()
        };
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        let a = s.start(&mut gc, &obs(0.0, 100, None)).unwrap();
        assert_eq!(a[0].action, "observing only");
        assert!(s.tick(&mut gc, &obs(10.0, 5000, None)).unwrap().is_empty());
        assert!(gc.calls.is_empty());
        assert_eq!(s.next_tick(), None);
    }

    #[test]
    fn background_work_is_not_charged_to_the_requests() {
        // 5 ms a request and 100 ms a second of the service's own (a timer, a thread).
        let arrivals = steady_arrivals();
        let traffic = idle(&arrivals);
        let learn = |s: &mut Scheduler, requests: u64, ms: f64| {
            let sample = crate::sample::Sample {
                cpu: Some(ms / 10.0),
                interval_s: 1.0,
                requests: Some(requests),
                ..Default::default()
            };
            s.learn_load(&Observation {
                sample: Some(&sample),
                ..obs(10.0, 100, Some(traffic))
            });
        };
        let served = |requests: u64| 100.0 + 5.0 * requests as f64;
        let close = |s: &Scheduler, rate: f64, want: f64| {
            let busy = s.busy(rate).expect("learned");
            assert!((busy - want).abs() < 1e-9, "at {rate}: {busy}, not {want}");
        };
        // After a light stretch only, each request looks to cost 7 ms: 150 req/s would be
        // over capacity (q at its cap of 10).
        let mut s = warmed_scheduler();
        for _ in 0..4 {
            learn(&mut s, 50, served(50));
        }
        close(&s, 150.0, 1.05);
        // One sample at twice the rate is not enough to split the two (a rate of one second
        // may be noise): 2,000 ms over 300 requests.
        learn(&mut s, 100, served(100));
        close(&s, 150.0, 2000.0 / 300.0 * 0.15);
        // Two at each end, 2× apart: the fixed part and the part per request.
        learn(&mut s, 100, served(100));
        for (rate, want) in [(150.0, 0.85), (50.0, 0.35), (0.0, 0.1)] {
            close(&s, rate, want);
        }
        // Ends 1.49× apart are too close to tell; 1.5× are not.
        for (high, split) in [(149, false), (150, true)] {
            let mut s = warmed_scheduler();
            for requests in [100, 100, high, high] {
                learn(&mut s, requests, served(requests));
            }
            let ratio = (2.0 * served(100) + 2.0 * served(high)) / (200 + 2 * high) as f64;
            let want = if split {
                0.1 + 0.005 * 300.0
            } else {
                ratio * 0.3
            };
            close(&s, 300.0, want);
        }
        // CPU that does not rise with the rate (noise, a collection in the light stretch) is no
        // fixed part: a flat line would make any burst look as light as the stretch before.
        let mut s = warmed_scheduler();
        for (requests, ms) in [(50, 350.0), (50, 350.0), (75, 340.0), (75, 340.0)] {
            learn(&mut s, requests, ms);
        }
        close(&s, 150.0, 1380.0 / 250.0 * 0.15);
        // Nor does a short interval teach anything (a sample cut by the end of a run).
        let short = crate::sample::Sample {
            cpu: Some(50.0),
            interval_s: 0.1,
            requests: Some(20),
            ..Default::default()
        };
        let mut s = warmed_scheduler();
        s.learn_load(&Observation {
            sample: Some(&short),
            ..obs(10.0, 100, Some(traffic))
        });
        assert_eq!(s.busy(100.0), None);
    }

    #[test]
    fn the_cadence_follows_the_pause_model() {
        let o = obs(1.0, 100, None);
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        assert_eq!(
            s.cadence(&o),
            0.25,
            "before any point: 0.25 s, stepping out to 2 s"
        );
        // Pause ∝ work (45 ms per second), in the p99 whatever the cadence: as often as there
        // is, every 0.1 s (4.5 ms pauses); with `pause=5ms`, every 5/45 s.
        for t in [0.6, 2.2, 1.0] {
            s.pause_model.add(t, 45.0 * t);
        }
        assert_eq!(s.cadence(&o), 0.1);
        s.cfg.pause = Duration::from_millis(5);
        let c = s.cadence(&o);
        assert!((c - 5.0 / 45.0).abs() < 1e-6, "{c}");
        // A large live part (a = 20 ms) and pauses in the p99 whatever the cadence: every
        // a / b = 2 s (pauses of 40 ms, twice their fixed part), not every 2/9 s as 10 % of the
        // time would allow (pauses of 22 ms, nine times as many). Rarer where that would take
        // more than the CPU budget: with `cpu=0.015`, every 4 s (60 ms per 4 s).
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for t in [0.5, 1.0, 2.0, 4.0] {
            s.pause_model.add(t, 20.0 + 10.0 * t);
        }
        let c = s.cadence(&o);
        assert!((c - 2.0).abs() < 1e-6, "{c}");
        s.cfg.cpu = 0.015;
        let c = s.cadence(&o);
        assert!((c - 4.0).abs() < 1e-6, "{c}");
        // Near the garbage's own share (10 ms/s against 1.1 %), the budget would ask for a
        // collection every 20 s: at most 4 × a / b, every 8 s. Over it, every a / b again.
        // (Measured up to 8 s, so that the step out from the longest interval is not what
        // stops it.)
        s.pause_model.add(8.0, 100.0);
        s.cfg.cpu = 0.011;
        let c = s.cadence(&o);
        assert!((c - 8.0).abs() < 1e-6, "{c}");
        s.cfg.cpu = 0.009;
        let c = s.cadence(&o);
        assert!((c - 2.0).abs() < 1e-6, "{c}");
        // `cadence=cpu`: as often as 10 % of the time allows, every 2/9 s (pauses of 22 ms).
        s.cfg.cpu = 0.10;
        s.cfg.tail_cadence = TailCadence::Budget;
        let c = s.cadence(&o);
        assert!((c - 2.0 / 9.0).abs() < 1e-6, "{c}");
        // Garbage alone over the budget (b = 120 ms/s): every a / b, pauses of 2a.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for t in [0.5, 1.0, 2.0, 4.0] {
            s.pause_model.add(t, 20.0 + 120.0 * t);
        }
        let c = s.cadence(&o);
        assert!((c - 20.0 / 120.0).abs() < 1e-6, "{c}");
        // Little garbage (b = 1 ms/s): rarely enough that pauses take 0.5 % of the time, every
        // 5 s (pauses of 25 ms), not every 0.2 s as the CPU budget would allow.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for t in [0.5, 1.0, 2.0, 4.0] {
            s.pause_model.add(t, 20.0 + t);
        }
        let c = s.cadence(&o);
        assert!((c - 5.0).abs() < 1e-6, "{c}");
        // No growth seen (pauses that shrink a little over about the same intervals): half
        // again the mean interval, not the longest cadence there is.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for (t, ms) in [(0.40, 15.2), (0.42, 16.3), (0.44, 14.7)] {
            s.pause_model.add(t, ms);
        }
        assert_eq!(s.pause_model.fit().map(|f| f.1), Some(0.0));
        let c = s.cadence(&o);
        assert!((c - 0.63).abs() < 1e-9, "{c}");
        // A little growth over about the same intervals (b = 1 ms/s) would put the cadence at
        // 3.65 s, far past what was measured: it steps out to half again the longest instead.
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for (t, ms) in [(0.40, 15.0), (0.42, 15.02), (0.44, 15.04)] {
            s.pause_model.add(t, ms);
        }
        let (a, b) = s.pause_model.fit().expect("fit");
        assert!((b - 1.0).abs() < 1e-6 && (a - 14.6).abs() < 1e-6, "{a} {b}");
        let c = s.cadence(&o);
        assert!((c - 0.66).abs() < 1e-9, "{c}");
        // In requests, at ~200 req/s: a 10 ms pause delays 2 arrivals and ~1 in flight; with
        // 0.001 ms per request of garbage, every (2 + 1) / (0.005 - 0.0002) ≈ 625 requests
        // (the rate is measured over the last arrivals).
        let arrivals = steady_arrivals();
        let steady = idle(&arrivals);
        let mut s = Scheduler::new("neurogc", SchedulerConfig::default());
        for w in [100.0, 400.0, 1000.0, 2000.0] {
            s.pause_model.add(w, 10.0 + 0.001 * w);
        }
        let c = s.cadence(&obs(1.0, 100, Some(steady)));
        assert!((600.0..650.0).contains(&c), "{c}");
        // More garbage (0.02 ms per request) at 200 req/s: its pauses alone delay 0.4 % of the
        // arrivals, so on an idle server they could stay out of the p99 (every ~1,030 requests).
        // At 60 % busy each pause's queue delays 2.5 times as many: 1 %, in the p99 whatever
        // the cadence, so the pauses are kept small, 1 ms every 25 requests.
        let mut s = warmed_scheduler();
        for w in [100.0, 400.0, 1000.0, 2000.0] {
            s.pause_model.add(w, 0.5 + 0.02 * w);
        }
        let c = s.cadence(&obs(1.0, 100, Some(steady)));
        assert!((1000.0..1100.0).contains(&c), "{c}");
        let sample = crate::sample::Sample {
            cpu: Some(60.0),
            interval_s: 1.0,
            requests: Some(200),
            ..Default::default()
        };
        let learn = |s: &mut Scheduler, sample: &crate::sample::Sample, at: f64| {
            s.learn_load(&Observation {
                sample: Some(sample),
                ..obs(at, 100, Some(steady))
            })
        };
        // Not from the warm-up (3 s): its CPU builds the heap.
        learn(&mut s, &sample, 3.5);
        assert_eq!(s.busy(200.0), None);
        learn(&mut s, &sample, 10.0);
        // 3 ms a request.
        let learned = s.busy(200.0).expect("learned");
        assert!((learned - 0.6).abs() < 1e-9, "{learned}");
        let o = obs(10.0, 100, Some(steady));
        let q = s.queue(&o, 200.0);
        assert!((q - 2.5).abs() < 1e-9, "{q}");
        assert_eq!(s.queue(&obs(10.0, 100, None), 200.0), 1.0);
        let c = s.cadence(&o);
        assert!((c - 25.0).abs() < 1e-6, "{c}");
        // An interval of a stopped process (a few requests) says nothing of the load, nor does
        // one with the scheduler's collection of the whole heap in it.
        let stopped = crate::sample::Sample {
            cpu: Some(0.5),
            requests: Some(1),
            ..sample.clone()
        };
        learn(&mut s, &stopped, 11.0);
        s.whole_heap_at = Duration::from_secs_f64(11.5);
        let refrozen = crate::sample::Sample {
            cpu: Some(95.0),
            ..sample.clone()
        };
        learn(&mut s, &refrozen, 12.0);
        assert_eq!(s.busy(200.0), Some(learned));
        // A process's CPU beyond one core is threads the requests do not wait for.
        let threads = crate::sample::Sample {
            cpu: Some(400.0),
            ..sample.clone()
        };
        learn(&mut s, &threads, 13.0);
        // One core at 200 req/s beside 60 % at 200 req/s: 4 ms a request.
        let busy = s.busy(200.0).expect("learned");
        assert!((busy - 0.8).abs() < 1e-9, "{busy}");
        // Where a pause's queue is small (30 % busy at 200 req/s, q = 1/0.7), the cadence
        // that keeps the pauses out of the p99 counts it: 10 ms pauses of what stays live and
        // 0.001 ms per request of garbage, every (200·10·q/1000 + 1) / (0.005 − 200·0.001·q/1000).
        let mut s = warmed_scheduler();
        for w in [100.0, 400.0, 1000.0, 2000.0] {
            s.pause_model.add(w, 10.0 + 0.001 * w);
        }
        let light = crate::sample::Sample {
            cpu: Some(30.0),
            ..sample.clone()
        };
        learn(&mut s, &light, 10.0);
        let (rate, q) = (steady.rate(), 1.0 / (1.0 - 0.3 / 200.0 * steady.rate()));
        let want = (rate * 10.0 * q / 1e3 + 1.0) / (0.005 - rate * 0.001 * q / 1e3);
        let c = s.cadence(&o);
        assert!((c - want).abs() < 1e-6 && c > 700.0, "{c} {want}");
        // Counted in requests where a middleware counts them: idle or stopped time is no work.
        let arrivals = [0u64, 1_000_000];
        let traffic = Traffic {
            in_flight: 0,
            now_ns: 2_000_000,
            arrivals: &arrivals,
            total: 5000,
        };
        let o = obs(1.0, 100, Some(traffic));
        assert_eq!(Scheduler::work(&o), 5000.0);
        assert_eq!(
            Scheduler::new("neurogc", SchedulerConfig::default()).cadence(&o),
            50.0
        );
    }

    #[test]
    fn tunes_the_young_threshold_from_the_samples_after_the_freeze() {
        let cfg = SchedulerConfig {
            warmup: Duration::from_secs(1),
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        // One sample a second: 100 young collections of 0.1 ms, one full one of 18 ms.
        let mut sample = crate::sample::Sample {
            interval_s: 1.0,
            ..Default::default()
        };
        sample.gc[0].collections = 100;
        sample.gc[0].pause_ms_sum = 10.0;
        sample.gc[2].collections = 1;
        sample.gc[2].pause_ms_sum = 18.0;
        let mut set = Vec::new();
        for sec in 1..=9 {
            let o = Observation {
                sample: Some(&sample),
                ..obs(sec as f64, 100, None)
            };
            for a in s.tick(&mut gc, &o).unwrap() {
                if a.action.starts_with("set_threshold") && a.reason.contains("young threshold") {
                    set.push((sec, a));
                }
            }
        }
        // Frozen at 1 s; the samples of 2-4 s make the settling window (3 full collections),
        // those of 5-7 s the measured one; the trial starts at 7 s.
        assert_eq!(set.len(), 1, "{set:?}");
        assert_eq!(set[0].0, 7);
        assert!(
            set[0].1.reason.contains("young threshold trial: 2800"),
            "{set:?}"
        );
        assert_eq!(gc.threshold, [2800, 10, HELD_BACK]);
        // The heap turns over during the trial (a stale re-freeze frees half the frozen
        // objects): left unfrozen, and the trial, unjudged, goes back to 700 with the freeze.
        let a = left_unfrozen_after_turnover(&mut s, &mut gc, 9.5, 10.0);
        assert!(
            a[0].reason
                .contains("the young threshold trial ends with the freeze, back to 700"),
            "{a:?}"
        );
        assert_eq!(gc.threshold, [700, 10, 10]);
        assert!(s.young.as_ref().is_some_and(YoungTuner::settled));
        // young=off and young=N leave no experiment.
        for (young, t0) in [
            (YoungThreshold::Off, 700),
            (YoungThreshold::Fixed(50_000), 50_000),
        ] {
            let (s, gc) = started(SchedulerConfig {
                young,
                ..SchedulerConfig::default()
            });
            assert!(s.young.is_none());
            assert_eq!(gc.threshold[0], t0);
        }
    }

    #[test]
    fn the_live_estimate_follows_the_memory_in_use_not_rss() {
        // glibc keeps what a collection frees: RSS stays at its peak while the memory in use
        // falls. A live estimate taken from RSS ratcheted up by the growth share at every
        // collection (RSS 1.53x the default's on growing-cache).
        let cfg = SchedulerConfig {
            freeze: false,
            young: YoungThreshold::Off,
            ..SchedulerConfig::default()
        };
        let (mut s, mut gc) = started(cfg);
        let at = |secs: f64, rss_mib: u64, free_mib: u64| Observation {
            heap_free_bytes: Some(free_mib * MIB),
            ..obs(secs, rss_mib, None)
        };
        assert!(
            takes_control_only(&s.tick(&mut gc, &at(3.0, 200, 0)).unwrap()),
            "warm: 200 MiB live"
        );
        // 24 MiB of garbage, over a tenth of it: collected.
        let a = s.tick(&mut gc, &at(4.0, 224, 0)).unwrap();
        assert!(
            a.iter().any(|x| x.reason.contains("memory grew 24 MiB")),
            "{a:?}"
        );
        // It freed those 24 MiB: RSS stays, the allocator holds them free.
        assert!(s.tick(&mut gc, &at(5.0, 224, 24)).unwrap().is_empty());
        // New garbage reuses them first: RSS does not move, yet 21 MiB more are in use, over a
        // tenth of 200 MiB: collected (a live estimate of 224 MiB would wait for 246).
        let a = s.tick(&mut gc, &at(6.0, 224, 3)).unwrap();
        assert!(
            a.iter().any(|x| x.reason.contains("memory grew 21 MiB")),
            "{a:?}"
        );
    }

    #[test]
    fn growth_a_collection_of_the_unfrozen_part_cannot_free_is_refrozen() {
        // Documents frozen at warm-up and retired since: memory grows, yet a collection of what
        // the freeze left finds nothing (the recording collector frees 0 objects).
        let (mut s, mut gc) = started_now();
        s.tick(&mut gc, &obs(0.1, 100, None)).unwrap();
        assert!(s.frozen);
        let grew = |a: &[Action]| {
            a.iter()
                .any(|x| x.action.starts_with("collect(2) -> 0") && x.reason.contains("grew"))
        };
        let a = s.tick(&mut gc, &obs(2.0, 112, None)).unwrap();
        assert!(grew(&a), "{a:?}");
        // The growth is frozen garbage: re-frozen at once, not 10 % + 16 MiB later.
        let a = s.tick(&mut gc, &obs(2.1, 112, None)).unwrap();
        assert!(refroze(&a), "{a:?}");
        assert!(
            a[0].reason.contains("garbage among the frozen objects"),
            "{a:?}"
        );
        // That re-freeze found little too: the memory may be live. Growth collects once more,
        // then no second collection for nothing...
        let a = s.tick(&mut gc, &obs(3.0, 125, None)).unwrap();
        assert!(grew(&a), "{a:?}");
        assert!(s.tick(&mut gc, &obs(4.0, 140, None)).unwrap().is_empty());
        // ... until the freeze is stale (5 s after it, 20 % + 16 MiB over it): re-frozen.
        let a = s.tick(&mut gc, &obs(6.0, 140, None)).unwrap();
        assert!(!refroze(&a), "{a:?}");
        let a = s.tick(&mut gc, &obs(7.2, 152, None)).unwrap();
        assert!(refroze(&a), "{a:?}");
        assert!(refroze_at_the_limit(&a), "{a:?}");
    }

    #[test]
    fn asks_to_be_ticked_from_its_last_tick_on() {
        let (mut s, mut gc) = started(SchedulerConfig::default());
        s.tick(&mut gc, &obs(2.0, 100, None)).unwrap();
        assert_eq!(s.next_tick(), Some(Duration::from_millis(2050)));
        s.ready(&obs(7.5, 100, None));
        s.tick(&mut gc, &obs(7.5, 100, None)).unwrap();
        assert!(s.frozen);
        // Frozen, but no middleware reports traffic: no quiet window to catch.
        assert_eq!(s.next_tick(), Some(Duration::from_millis(7550)));
        // Requests served since the freeze: a free collection may come at any moment.
        let arrivals = steady_arrivals();
        assert!(!s.ready(&obs(7.6, 100, Some(busy(&arrivals)))));
        assert_eq!(s.next_tick(), Some(Duration::from_millis(7610)));
    }

    #[test]
    fn an_idle_process_is_asked_less_often_until_something_moves() {
        let (mut s, mut gc) = started(SchedulerConfig::default());
        s.ready(&obs(7.5, 100, None));
        s.tick(&mut gc, &obs(7.5, 100, None)).unwrap();
        assert!(s.frozen);
        let gaps: Vec<u128> = [7.55, 7.65]
            .iter()
            .map(|&at| {
                s.ready(&obs(at, 100, None));
                (s.next_tick().unwrap() - Duration::from_secs_f64(at)).as_millis()
            })
            .collect();
        assert_eq!(gaps, [100, 200], "nothing moved since the look at 7.5 s");
        // Memory moved: asked every 50 ms again.
        s.ready(&obs(7.7, 101, None));
        assert_eq!(s.next_tick(), Some(Duration::from_millis(7750)));
    }
}
