//! When things happen: open-loop intended send times, closed-loop waits and user spawn times.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};

use neurogc_rng::Rng;

/// Spacing of open-loop arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Arrivals {
    /// Exactly 1/rate apart (wrk2).
    Uniform,
    /// Exponential gaps with mean 1/rate: a Poisson process, like independent clients.
    Poisson,
}

impl Arrivals {
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson => "poisson",
        }
    }
}

/// Intended send times of an open-loop run, as offsets from its start.
pub struct ArrivalClock {
    rate: f64,
    kind: Arrivals,
    rng: Rng,
    n: u64,
    poisson_at: f64,
}

impl ArrivalClock {
    pub fn new(rate: f64, kind: Arrivals, rng: Rng) -> Self {
        ArrivalClock {
            rate,
            kind,
            rng,
            n: 0,
            poisson_at: 0.0,
        }
    }

    /// The next intended send time. Uniform times are computed from the index, not summed, so
    /// they do not drift over a long run.
    pub fn next_offset(&mut self) -> Duration {
        let secs = match self.kind {
            Arrivals::Uniform => self.n as f64 / self.rate,
            Arrivals::Poisson => {
                let at = self.poisson_at;
                // 1 - u is in (0, 1], so ln never sees 0.
                self.poisson_at += -(1.0 - self.rng.next_f64()).ln() / self.rate;
                at
            }
        };
        self.n += 1;
        Duration::from_secs_f64(secs)
    }
}

/// Hosts taking turns (`--alternate`): slice `k` of the run belongs to host `k mod hosts`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turns {
    pub slice: Duration,
    pub hosts: usize,
}

impl Turns {
    /// Which slice of the run `offset` (time since the run started) falls in.
    pub fn slice_at(&self, offset: Duration) -> u64 {
        (offset.as_secs_f64() / self.slice.as_secs_f64()) as u64
    }

    /// The host whose slice contains `offset`.
    pub fn host_at(&self, offset: Duration) -> usize {
        (self.slice_at(offset) % self.hosts as u64) as usize
    }

    /// How long `host` held the load during the first `elapsed` of the run.
    pub fn loaded(&self, host: usize, elapsed: Duration) -> Duration {
        let (slice, n) = (self.slice.as_secs_f64(), self.hosts as f64);
        let cycle = slice * n;
        let t = elapsed.as_secs_f64();
        let whole = (t / cycle).floor();
        // Within the unfinished cycle, this host's slice is [host·slice, (host+1)·slice).
        let rest = t - whole * cycle - host as f64 * slice;
        Duration::from_secs_f64(whole * slice + rest.clamp(0.0, slice))
    }
}

/// Hosts taking turns: how much later than planned each slice began. A turn begins only once
/// the host before it has answered every request of its turn, so a queue left at the end of a
/// turn drains (and is measured) on its own host's time, not in the next host's turn, where it
/// would compete for the CPU with the server being measured.
#[derive(Debug, Default)]
pub struct Delays {
    /// The delay in effect from slice `k` on (it only grows).
    from: BTreeMap<u64, Duration>,
}

impl Delays {
    /// Slice `slice` began `wait` later than the slice before it ended.
    pub fn add(&mut self, slice: u64, wait: Duration) {
        let total = self.total() + wait;
        self.from.insert(slice, total);
    }

    /// All the waiting so far.
    pub fn total(&self) -> Duration {
        self.from.values().next_back().copied().unwrap_or_default()
    }

    /// How much later than planned `slice` began (and ended).
    pub fn of(&self, slice: u64) -> Duration {
        self.from
            .range(..=slice)
            .next_back()
            .map_or(Duration::ZERO, |(_, d)| *d)
    }
}

/// Traffic in bursts: arrivals are sent during "on" periods and skipped during "off" gaps, each
/// period's length uniform in its range (a task file's `[bursts]` table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bursts {
    pub on: (Duration, Duration),
    pub off: (Duration, Duration),
}

impl Bursts {
    pub fn new(on: (Duration, Duration), off: (Duration, Duration)) -> Result<Self> {
        for (name, (lo, hi)) in [("on", on), ("off", off)] {
            if lo > hi || hi.is_zero() {
                bail!("bursts.{name} = [{lo:?}, {hi:?}]: need 0 <= MIN <= MAX and MAX > 0");
            }
        }
        Ok(Bursts { on, off })
    }

    /// The on/off schedule drawn from `rng`, starting with a burst.
    pub fn gate(&self, rng: Rng) -> BurstGate {
        BurstGate {
            bursts: *self,
            rng,
            on: true,
            until: None,
        }
    }
}

/// Whether offsets fall in a burst; asked with non-decreasing offsets.
pub struct BurstGate {
    bursts: Bursts,
    rng: Rng,
    /// The period that ends at `until` is a burst.
    on: bool,
    until: Option<Duration>,
}

impl BurstGate {
    fn draw(&mut self, (lo, hi): (Duration, Duration)) -> Duration {
        lo + (hi - lo).mul_f64(self.rng.next_f64())
    }

    /// Is `offset` (from the schedule's start) inside a burst?
    pub fn is_on(&mut self, offset: Duration) -> bool {
        let mut until = match self.until {
            Some(u) => u,
            None => self.draw(self.bursts.on),
        };
        while offset >= until {
            self.on = !self.on;
            until += self.draw(if self.on {
                self.bursts.on
            } else {
                self.bursts.off
            });
        }
        self.until = Some(until);
        self.on
    }
}

/// Closed-loop think time between a user's tasks, uniform in [min, max] (Locust's `between`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait {
    min: f64,
    max: f64,
}

impl Wait {
    pub fn new(min: f64, max: f64) -> Result<Self> {
        if !(min.is_finite() && max.is_finite()) || min < 0.0 || max < min || max > 3600.0 {
            bail!("wait bounds {min},{max} must satisfy 0 <= MIN <= MAX <= 3600 seconds");
        }
        Ok(Wait { min, max })
    }

    pub fn min_s(&self) -> f64 {
        self.min
    }

    pub fn max_s(&self) -> f64 {
        self.max
    }

    pub fn sample(&self, rng: &mut Rng) -> Duration {
        if self.max == 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(self.min + (self.max - self.min) * rng.next_f64())
    }
}

/// Start offset of the `k`-th user (0-based) at `rate` users per second: Locust starts the first
/// at once and one more every 1/rate seconds.
pub fn spawn_offset(k: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(k as f64 / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_arrivals_are_exact() {
        let mut c = ArrivalClock::new(1000.0, Arrivals::Uniform, Rng::new(1));
        let times: Vec<Duration> = (0..3001).map(|_| c.next_offset()).collect();
        assert_eq!(times[0], Duration::ZERO);
        assert_eq!(times[1], Duration::from_millis(1));
        assert_eq!(times[3000], Duration::from_secs(3));
    }

    #[test]
    fn poisson_gaps_have_mean_and_variance_of_an_exponential() {
        let rate = 200.0;
        let mut c = ArrivalClock::new(rate, Arrivals::Poisson, Rng::new(9));
        let n = 100_000;
        let mut prev = c.next_offset().as_secs_f64();
        let (mut sum, mut sum2) = (0.0, 0.0);
        for _ in 0..n {
            let t = c.next_offset().as_secs_f64();
            let g = t - prev;
            prev = t;
            sum += g;
            sum2 += g * g;
        }
        let mean = sum / n as f64;
        let var = sum2 / n as f64 - mean * mean;
        // Exponential: mean = sd = 1/rate; the mean's standard error is 1/(rate sqrt n).
        assert!((mean * rate - 1.0).abs() < 0.0125, "mean {mean}");
        assert!((var.sqrt() * rate - 1.0).abs() < 0.03, "sd {}", var.sqrt());
    }

    #[test]
    fn wait_stays_within_bounds() {
        let w = Wait::new(0.1, 0.5).unwrap();
        let mut rng = Rng::new(5);
        let xs: Vec<f64> = (0..10_000)
            .map(|_| w.sample(&mut rng).as_secs_f64())
            .collect();
        assert!(xs.iter().all(|&x| (0.1..=0.5).contains(&x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.3).abs() < 0.006, "{mean}");
        assert_eq!(
            Wait::new(0.0, 0.0).unwrap().sample(&mut rng),
            Duration::ZERO
        );
        assert!(Wait::new(0.5, 0.1).is_err());
        assert!(Wait::new(-1.0, 0.1).is_err());
    }

    #[test]
    fn turns_give_each_host_its_slices_and_count_them() {
        let t = Turns {
            slice: Duration::from_secs(2),
            hosts: 2,
        };
        let at = |s: f64| t.host_at(Duration::from_secs_f64(s));
        assert_eq!(
            (at(0.0), at(1.99), at(2.0), at(3.9), at(4.0)),
            (0, 0, 1, 1, 0)
        );
        let loaded = |h: usize, s: f64| t.loaded(h, Duration::from_secs_f64(s)).as_secs_f64();
        assert_eq!((loaded(0, 60.0), loaded(1, 60.0)), (30.0, 30.0));
        // 5 s: host 0 had [0,2) and [4,5), host 1 had [2,4).
        assert!((loaded(0, 5.0) - 3.0).abs() < 1e-9);
        assert!((loaded(1, 5.0) - 2.0).abs() < 1e-9);
        assert_eq!(loaded(1, 1.0), 0.0);
    }

    #[test]
    fn delays_accumulate_from_the_slice_that_waited_on() {
        let ms = Duration::from_millis;
        let mut d = Delays::default();
        assert_eq!((d.of(0), d.total()), (ms(0), ms(0)));
        d.add(3, ms(250));
        d.add(7, ms(40));
        assert_eq!(
            (d.of(0), d.of(2), d.of(3), d.of(6), d.of(7), d.of(100)),
            (ms(0), ms(0), ms(250), ms(250), ms(290), ms(290))
        );
        assert_eq!(d.total(), ms(290));
    }

    #[test]
    fn bursts_alternate_within_their_ranges() {
        let ms = Duration::from_millis;
        let b = Bursts::new((ms(300), ms(2000)), (ms(200), ms(3000))).unwrap();
        let mut gate = b.gate(Rng::new(3));
        // Walk 120 s in 1 ms steps and measure every on and off period.
        let (mut on_periods, mut off_periods) = (Vec::new(), Vec::new());
        let (mut state, mut since) = (true, 0u64);
        for t in 0..120_000u64 {
            let on = gate.is_on(ms(t));
            if on != state {
                let len = t - since;
                if state {
                    on_periods.push(len)
                } else {
                    off_periods.push(len)
                }
                (state, since) = (on, t);
            }
        }
        assert!(on_periods.len() > 20 && off_periods.len() > 20);
        assert!(
            on_periods.iter().all(|&l| (300..=2001).contains(&l)),
            "{on_periods:?}"
        );
        assert!(
            off_periods.iter().all(|&l| (200..=3001).contains(&l)),
            "{off_periods:?}"
        );
        // The same seed draws the same schedule.
        let mut a = b.gate(Rng::new(3));
        let mut c = b.gate(Rng::new(3));
        assert!((0..5000).all(|t| a.is_on(ms(t * 7)) == c.is_on(ms(t * 7))));
        assert!(Bursts::new((ms(5), ms(1)), (ms(1), ms(2))).is_err());
        assert!(Bursts::new((ms(1), ms(2)), (ms(0), ms(0))).is_err());
    }

    #[test]
    fn spawn_offsets() {
        assert_eq!(spawn_offset(0, 10.0), Duration::ZERO);
        assert_eq!(spawn_offset(25, 10.0), Duration::from_millis(2500));
    }
}
