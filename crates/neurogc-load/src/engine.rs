//! Runs a [`Config`]: the closed and open loops, the per-second roll-over, Ctrl-C and the drain.
//!
//! Everything runs on one thread (a current-thread tokio runtime and a `LocalSet`): the
//! generator usually shares a 2-core machine with the server it measures, one core is plenty
//! for the rates we need, and single-threaded state needs no locks on the hot path.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use tokio::task::{spawn_local, JoinHandle, LocalSet};
use tokio::time::{sleep_until, timeout, Instant};

use crate::args::{Config, Mode};
use crate::client::{self, Conn, FailKind, Prepared};
use crate::report::{Reporter, Summary};
use crate::requests::RequestLog;
use crate::schedule::{spawn_offset, ArrivalClock, Delays, Wait};
use crate::stats::Stats;
use crate::timer::Sleeper;
use neurogc_rng::Rng;
use neurogc_units::unix;

/// Runs the load described by `cfg` to its end (or Ctrl-C) and returns the summary.
pub fn execute(cfg: Config) -> Result<Summary> {
    raise_fd_limit();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    LocalSet::new().block_on(&rt, drive(Rc::new(cfg)))
}

/// What the load tasks share.
struct Shared {
    cfg: Rc<Config>,
    /// `requests[host][task]`, serialised once.
    requests: Vec<Vec<Prepared>>,
    stats: RefCell<Stats>,
    /// Open loop: idle keep-alive connections and requests in flight, per host.
    pools: Vec<Pool>,
    /// `--requests-out`: every request's row.
    request_log: RefCell<Option<RequestLog>>,
    /// `--alternate`: how long each turn waited for the one before it to drain.
    delays: RefCell<Delays>,
    /// A turn is waiting for the host before it to drain: the deadline moves by the wait.
    draining: Cell<bool>,
}

impl Shared {
    /// Counts a finished request (due at `intended`) and logs it where asked.
    fn finished(
        &self,
        host: usize,
        task: usize,
        intended: Instant,
        result: Result<u16, FailKind>,
        slice: Option<u64>,
    ) {
        let done = Instant::now();
        self.stats
            .borrow_mut()
            .record(host, task, done - intended, result, slice);
        if let Some(log) = self.request_log.borrow_mut().as_mut() {
            log.record(host, intended.into_std(), done.into_std(), result);
        }
    }
}

#[derive(Default)]
struct Pool {
    idle: RefCell<Vec<Conn>>,
    in_flight: Cell<u64>,
}

async fn drive(cfg: Rc<Config>) -> Result<Summary> {
    for t in &cfg.targets {
        let budget = cfg.timeout.min(Duration::from_secs(5));
        match timeout(budget, client::probe(t)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("cannot reach --host {} ({}): {e}", t.url, t.addr),
            Err(_) => anyhow::bail!(
                "cannot reach --host {} ({}): no answer within {budget:?}",
                t.url,
                t.addr
            ),
        }
    }
    let started_wall = SystemTime::now();
    let mut reporter = Reporter::new(&cfg, started_wall)?;
    let shared = Rc::new(Shared {
        requests: cfg
            .targets
            .iter()
            .map(|t| cfg.tasks.tasks().iter().map(|k| t.prepare(k)).collect())
            .collect(),
        stats: RefCell::new(Stats::new(cfg.targets.len(), cfg.tasks.len())),
        pools: cfg.targets.iter().map(|_| Pool::default()).collect(),
        request_log: RefCell::new(match &cfg.requests_out {
            Some(dir) => {
                let urls: Vec<String> = cfg.targets.iter().map(|t| t.url.clone()).collect();
                Some(RequestLog::create(dir, &urls)?)
            }
            None => None,
        }),
        delays: RefCell::new(Delays::default()),
        draining: Cell::new(false),
        cfg: cfg.clone(),
    });
    // Whatever ends the run, no server is left stopped.
    let _resume = Resume(stopped_groups(&cfg).to_vec());
    let start = Instant::now();
    let deadline = cfg.run_time.map(|d| start + d);
    let mut load: JoinHandle<()> = match cfg.mode {
        Mode::Closed {
            users,
            spawn_rate,
            wait,
        } => spawn_local(closed_loop(
            shared.clone(),
            start,
            deadline,
            users,
            spawn_rate,
            wait,
        )),
        Mode::Open { .. } => spawn_local(open_loop(shared.clone(), start, deadline)),
    };

    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut interrupted = false;
    let mut last_roll = start;
    let mut next_tick = start + Duration::from_secs(1);
    // The deadline moves by the time turns waited for a queue to drain, so every turn is whole;
    // while a turn is waiting, the deadline is not known yet.
    let end_at = || deadline.map(|d| d + shared.delays.borrow().total());
    let known_end = || (!shared.draining.get()).then(end_at).flatten();
    // The per-second loop; it ends at the deadline or on Ctrl-C.
    loop {
        let end = known_end();
        // An end less than half a second past a tick ends the run without that tick: the last
        // row is then up to 1.5 s long rather than a sliver (a few ms of waits past the grid).
        let until = end.map_or(next_tick, |d| {
            if d < next_tick + Duration::from_millis(500) {
                d
            } else {
                next_tick
            }
        });
        tokio::select! {
            _ = sleep_until(until) => {}
            _ = &mut ctrl_c => { interrupted = true; break; }
        }
        if end == Some(until) {
            if known_end() == end {
                break;
            }
            if until != next_tick {
                continue; // a turn waited meanwhile: the deadline moved
            }
        }
        roll(&shared, &mut reporter, start, &mut last_roll, until, false)?;
        next_tick += Duration::from_secs(1);
    }
    let end = if interrupted {
        Instant::now()
    } else {
        end_at().unwrap_or_else(Instant::now)
    };
    if !interrupted {
        // Requests sent before the deadline still count: wait for them (each is bounded by
        // --timeout), unless the user presses Ctrl-C.
        tokio::select! {
            _ = &mut load => {}
            _ = tokio::time::sleep(cfg.timeout + Duration::from_secs(1)) => {}
            _ = &mut ctrl_c => { interrupted = true; }
        }
    }
    load.abort();
    let now = Instant::now();
    roll(&shared, &mut reporter, start, &mut last_roll, now, true)?;
    // Rates are over the time the load was offered, without the waits between turns.
    let waited = shared.delays.borrow().total();
    let summary = summarize(
        &cfg,
        &shared.stats.borrow(),
        &reporter,
        started_wall,
        (end - start).saturating_sub(waited),
        waited,
        interrupted,
    );
    reporter.finish(&summary)?;
    Ok(summary)
}

/// Closes the statistics window `[last_roll, now]` and reports it, with the turns that are
/// over (all of them at the `end`).
fn roll(
    shared: &Shared,
    reporter: &mut Reporter,
    start: Instant,
    last_roll: &mut Instant,
    now: Instant,
    end: bool,
) -> Result<()> {
    let (snaps, turns) = {
        let mut stats = shared.stats.borrow_mut();
        for (h, p) in shared.pools.iter().enumerate() {
            stats.set_in_flight(h, p.in_flight.get());
        }
        // A turn is over once no request sent in it can still be in flight.
        let turns = shared.cfg.turns().map(|t| {
            let grace = shared.cfg.timeout + Duration::from_secs(1);
            let delays = shared.delays.borrow();
            let done = |slice: u64| {
                end || t.slice.mul_f64((slice + 1) as f64) + delays.of(slice) + grace <= now - start
            };
            (t, stats.take_turns(done))
        });
        (stats.roll(), turns)
    };
    let interval = now - *last_roll;
    *last_roll = now;
    reporter.second(&snaps, now - start, interval)?;
    match turns {
        Some((t, turns)) if !turns.is_empty() => reporter.turns(&turns, t, &shared.delays.borrow()),
        _ => Ok(()),
    }
}

/// The process groups `--stop-idle` stops between their turns (none without it).
fn stopped_groups(cfg: &Config) -> &[i32] {
    match &cfg.mode {
        Mode::Open { stop_idle, .. } => stop_idle,
        Mode::Closed { .. } => &[],
    }
}

/// Sends `signal` to the process group `pgid`; a group that is gone is no error.
fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Continues every group it holds when dropped: no server stays stopped after the run.
struct Resume(Vec<i32>);

impl Drop for Resume {
    fn drop(&mut self) {
        for &g in &self.0 {
            signal_group(g, libc::SIGCONT);
        }
    }
}

fn summarize(
    cfg: &Config,
    stats: &Stats,
    reporter: &Reporter,
    started: SystemTime,
    duration: Duration,
    waited: Duration,
    interrupted: bool,
) -> Summary {
    let totals = stats.totals();
    let mut rows = reporter.rows("total", &totals, duration, duration);
    let turns = cfg.turns();
    if let Some(t) = turns {
        // A host that took turns was loaded for its slices only: its rates are over those.
        rows = rows
            .into_iter()
            .zip(&totals)
            .map(|(r, s)| r.over(t.loaded(s.host, duration).as_secs_f64()))
            .collect();
    }
    let all: Vec<_> = rows.iter().filter(|r| r.task == "all").collect();
    let sum = |f: fn(&crate::stats::Row) -> u64| all.iter().map(|r| f(r)).sum::<u64>();
    let requests = sum(|r| r.requests);
    let achieved_rate = all.iter().map(|r| r.rps).sum::<f64>() / all.len().max(1) as f64;
    let (users, spawn_rate, wait, rate, arrivals, cap) = match &cfg.mode {
        Mode::Closed {
            users,
            spawn_rate,
            wait,
        } => (
            Some(*users),
            Some(*spawn_rate),
            Some(*wait),
            None,
            None,
            None,
        ),
        Mode::Open {
            rate,
            arrivals,
            max_in_flight,
            ..
        } => (
            None,
            None,
            None,
            Some(*rate),
            Some(*arrivals),
            Some(*max_in_flight),
        ),
    };
    Summary {
        kind: "summary".into(),
        mode: if rate.is_some() { "open" } else { "closed" }.into(),
        hosts: cfg.targets.iter().map(|t| t.url.clone()).collect(),
        tasks: cfg.tasks.tasks().iter().map(|t| t.name.clone()).collect(),
        users,
        spawn_rate,
        wait_min_s: wait.map(|w| w.min_s()),
        wait_max_s: wait.map(|w| w.max_s()),
        target_rate: rate,
        arrivals: arrivals.map(|a| a.name().to_string()),
        max_in_flight: cap,
        seed: cfg.seed,
        started_at: unix(started),
        duration_s: duration.as_secs_f64(),
        interrupted,
        requests,
        failures: sum(|r| r.failures),
        achieved_rate,
        alternate_s: turns.map(|t| t.slice.as_secs_f64()),
        turn_waits_s: turns.map(|_| waited.as_secs_f64()),
        late_starts: sum(|r| r.late_starts),
        dropped: sum(|r| r.dropped),
        rows,
    }
}

/// Sends one request within the timeout; on timeout the connection's state is unknown, so it is dropped.
async fn timed_send(
    shared: &Shared,
    slot: &mut Option<Conn>,
    host: usize,
    task: usize,
) -> Result<u16, FailKind> {
    let addr = shared.cfg.targets[host].addr;
    let req = &shared.requests[host][task];
    match timeout(shared.cfg.timeout, client::send(slot, addr, req)).await {
        Ok(r) => r,
        Err(_) => {
            *slot = None;
            Err(FailKind::Timeout)
        }
    }
}

/// Locust semantics. User `k` of every host starts at k / spawn_rate and draws the same task and
/// wait sequence on every host (same seed), so hosts get the same schedule.
async fn closed_loop(
    shared: Rc<Shared>,
    start: Instant,
    deadline: Option<Instant>,
    users: u64,
    spawn_rate: f64,
    wait: Wait,
) {
    let mut handles = Vec::new();
    for k in 0..users {
        let at = start + spawn_offset(k, spawn_rate);
        if deadline.is_some_and(|d| at >= d) {
            break;
        }
        sleep_until(at).await;
        for host in 0..shared.cfg.targets.len() {
            shared.stats.borrow_mut().add_user(host);
            let rng = Rng::derive(shared.cfg.seed, k);
            handles.push(spawn_local(user(shared.clone(), host, rng, deadline, wait)));
        }
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn user(
    shared: Rc<Shared>,
    host: usize,
    mut rng: Rng,
    deadline: Option<Instant>,
    wait: Wait,
) {
    let mut conn = None;
    while deadline.is_none_or(|d| Instant::now() < d) {
        let task = shared.cfg.tasks.pick(&mut rng);
        let sent = Instant::now();
        let result = timed_send(&shared, &mut conn, host, task).await;
        shared.finished(host, task, sent, result, None);
        let pause = wait.sample(&mut rng);
        if !pause.is_zero() {
            let wake = Instant::now() + pause;
            sleep_until(deadline.map_or(wake, |d| d.min(wake))).await;
        }
    }
}

/// The open-loop scheduler wakes at most this often; requests due in between leave together.
/// Bounds the timer's cost at high rates (a wake is ~3 syscalls) while keeping every dispatch
/// within about 0.1 ms of its intended time.
const MIN_WAKE_GAP: Duration = Duration::from_micros(100);

/// wrk2 semantics: request `i` is due at its intended time whatever happened before it; its
/// latency is measured from that time, so a stalled server cannot slow the clock down
/// (no coordinated omission). All hosts get the same intended times and tasks, or, with
/// `--alternate`, each in its turn (and with `--stop-idle`, each host's processes are stopped
/// outside its turns). A task file's `[bursts]` skips the arrivals that fall in its idle gaps.
async fn open_loop(shared: Rc<Shared>, start: Instant, deadline: Option<Instant>) {
    let Mode::Open {
        rate,
        arrivals,
        late_threshold,
        ref stop_idle,
        ..
    } = shared.cfg.mode
    else {
        return;
    };
    let turns = shared.cfg.turns();
    let bursts = shared.cfg.tasks.bursts();
    let mut clock = ArrivalClock::new(rate, arrivals, Rng::derive(shared.cfg.seed, u64::MAX));
    let picks_of_round =
        |round: u64| Rng::derive(shared.cfg.seed.wrapping_add(round), u64::MAX - 1);
    let gate_of_round = |round: u64| {
        bursts.map(|b| {
            b.gate(Rng::derive(
                shared.cfg.seed.wrapping_add(round),
                u64::MAX - 2,
            ))
        })
    };
    let mut picks = picks_of_round(0);
    let mut gate = gate_of_round(0);
    let mut current_slice = 0;
    if let Some(&first) = stop_idle.first() {
        for &g in &stop_idle[1..] {
            signal_group(g, libc::SIGSTOP);
        }
        signal_group(first, libc::SIGCONT);
    }
    let sleeper = Sleeper::new();
    let mut last_wake = start;
    loop {
        let offset = clock.next_offset();
        if deadline.is_some_and(|d| start + offset >= d) {
            break;
        }
        // Turns that waited for a queue to drain pushed the rest of the schedule back.
        let mut intended = start + shared.delays.borrow().total() + offset;
        if intended > Instant::now() {
            sleeper
                .sleep_until(intended.max(last_wake + MIN_WAKE_GAP))
                .await;
            last_wake = Instant::now();
        }
        // Bursts are timed from the start of the run, or of the host's slice when hosts take
        // turns, so every host's slice of a round gets the same bursts.
        let mut burst_offset = offset;
        if let Some(t) = turns {
            // Every host's slice of a round replays the same task sequence: hosts taking turns
            // get the same requests, as hosts loaded at once do.
            let slice = t.slice_at(offset);
            if slice != current_slice {
                let round = slice / t.hosts as u64;
                let (from, to) = ((current_slice % t.hosts as u64) as usize, t.host_at(offset));
                if from != to && shared.pools[from].in_flight.get() > 0 {
                    shared.draining.set(true);
                    drain(&shared.pools[from]).await;
                    // The turn starts now: its first request is due at the end of the wait.
                    let waited = Instant::now().saturating_duration_since(intended);
                    shared.delays.borrow_mut().add(slice, waited);
                    intended += waited;
                    shared.draining.set(false);
                }
                if !stop_idle.is_empty() {
                    hand_over(from, to, stop_idle);
                }
                current_slice = slice;
                picks = picks_of_round(round);
                gate = gate_of_round(round);
            }
            burst_offset = offset.saturating_sub(t.slice.mul_f64(slice as f64));
        }
        if let Some(g) = gate.as_mut() {
            if !g.is_on(burst_offset) {
                continue;
            }
        }
        let task = shared.cfg.tasks.pick(&mut picks);
        let late = Instant::now().saturating_duration_since(intended) > late_threshold;
        match turns {
            Some(t) => {
                let slice = Some(t.slice_at(offset));
                dispatch(&shared, t.host_at(offset), task, intended, late, slice)
            }
            None => {
                for host in 0..shared.cfg.targets.len() {
                    dispatch(&shared, host, task, intended, late, None);
                }
            }
        }
    }
    // Wait for what is still in flight.
    while shared.pools.iter().any(|p| p.in_flight.get() > 0) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until `pool` has no request in flight (each is bounded by `--timeout`).
async fn drain(pool: &Pool) {
    while pool.in_flight.get() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The load moves from host `from`, whose requests have all been answered (the open loop waited
/// for them), to host `to`: `to` is continued, `from` stopped.
fn hand_over(from: usize, to: usize, groups: &[i32]) {
    signal_group(groups[to], libc::SIGCONT);
    if from != to {
        signal_group(groups[from], libc::SIGSTOP);
    }
}

fn dispatch(
    shared: &Rc<Shared>,
    host: usize,
    task: usize,
    intended: Instant,
    late: bool,
    slice: Option<u64>,
) {
    let Mode::Open { max_in_flight, .. } = shared.cfg.mode else {
        return;
    };
    let pool = &shared.pools[host];
    {
        let mut stats = shared.stats.borrow_mut();
        if late {
            stats.late_start(host, task);
        }
        if pool.in_flight.get() >= max_in_flight as u64 {
            stats.dropped(host, task);
            return;
        }
    }
    pool.in_flight.set(pool.in_flight.get() + 1);
    // Reuse an idle connection, or open a new one: the pool grows to what the rate needs.
    let mut conn = pool.idle.borrow_mut().pop();
    let shared = shared.clone();
    spawn_local(async move {
        let result = timed_send(&shared, &mut conn, host, task).await;
        shared.finished(host, task, intended, result, slice);
        let pool = &shared.pools[host];
        if let Some(c) = conn {
            pool.idle.borrow_mut().push(c);
        }
        pool.in_flight.set(pool.in_flight.get() - 1);
    });
}

/// Many users or a deep in-flight cap need many sockets: lift the soft limit to the hard one.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
