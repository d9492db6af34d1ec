//! A sub-millisecond sleep for the open-loop scheduler.
//!
//! tokio's timer wheel has 1 ms resolution and rounds every deadline up to the next tick. An
//! open-loop request measured from its intended send time would then carry up to 1 ms of the
//! generator's own delay (0.5 ms on average) — a bias as large as the service time of a fast
//! endpoint. A `timerfd` (a kernel hrtimer) watched by tokio's reactor wakes within tens of µs.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::time::Instant;

pub enum Sleeper {
    Precise(AsyncFd<OwnedFd>),
    /// Where a timerfd cannot be had, tokio's timer (1 ms resolution).
    Coarse,
}

impl Sleeper {
    pub fn new() -> Sleeper {
        // SAFETY: timerfd_create returns a new descriptor or -1; we own it from here on.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Sleeper::Coarse;
        }
        // SAFETY: `fd` is a valid descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the OwnedFd keeps the descriptor open, unchanged, for the AsyncFd's lifetime.
        unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }
            .map(Sleeper::Precise)
            .unwrap_or(Sleeper::Coarse)
    }

    pub async fn sleep_until(&self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match self {
            Sleeper::Coarse => tokio::time::sleep_until(deadline).await,
            Sleeper::Precise(fd) => {
                if precise_sleep(fd, left).await.is_err() {
                    tokio::time::sleep_until(deadline).await;
                }
            }
        }
    }
}

async fn precise_sleep(fd: &AsyncFd<OwnedFd>, left: Duration) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: valid descriptor and a fully initialised itimerspec; the old value is not wanted.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        let mut guard = fd.readable().await?;
        let read = guard.try_io(|inner| {
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64, as timerfd requires.
            let n =
                unsafe { libc::read(inner.as_raw_fd(), (&mut expirations as *mut u64).cast(), 8) };
            if n == 8 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
        match read {
            Ok(result) => return result,
            Err(_would_block) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_on_time_with_sub_millisecond_precision() {
        let s = Sleeper::new();
        assert!(matches!(s, Sleeper::Precise(_)));
        let mut late = Vec::new();
        for i in 0..50u64 {
            let deadline = Instant::now() + Duration::from_micros(300 + 37 * i);
            s.sleep_until(deadline).await;
            let now = Instant::now();
            assert!(now >= deadline);
            late.push(now - deadline);
        }
        // tokio's own timer rounds up to the next millisecond: its median lateness here would be
        // ~500 µs. The median (not the max) keeps the test stable on a busy machine.
        late.sort();
        assert!(
            late[25] < Duration::from_micros(250),
            "median lateness {:?}",
            late[25]
        );
    }
}
