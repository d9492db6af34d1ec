//! Keeping `fork()` out of collections.
//!
//! CPython marks a collection under way with one flag in the interpreter, and `gc.collect()`
//! returns 0 without collecting while it is set. A collection can hand the interpreter to another
//! thread half-way (a finalizer or weakref callback runs bytecode); if that thread forks then, the
//! child gets the flag set and no thread there will ever clear it: the child never collects
//! again, neither automatically nor on request. Plain CPython does this to any program that
//! collects in one thread and forks in another; the agent collects in its own thread, so it must
//! not make a forking service (gunicorn's master, a `multiprocessing` pool) do it. So, at a fork:
//! - before it, the forking thread waits (detached) for a collection another thread is in to end,
//!   at most [`MAX_WAIT`], and the agent starts no collection of its own until the fork is done
//!   (waiting at most as long);
//! - in the child, a collection that was still under way elsewhere is said.
//!
//! What is left is narrower, not closed: collections are seen through the `gc.callbacks`
//! callback (another callback that runs bytecode before the agent's at the start, or after it at
//! the end, leaves a window); the at-fork hooks registered before the agent's run after it, and
//! an automatic collection another thread starts while they run is CPython's own case.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pyo3::Python;

/// The longest a fork waits for a collection, and a collection for a fork: past it something is
/// wrong (a finalizer waiting for a lock the forking thread holds), and going on beats hanging.
pub const MAX_WAIT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_micros(200);

/// This thread, as `pthread_self` (never 0 on Linux); the same value in a fork child.
fn this_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

fn wait_until(deadline: Instant, done: impl Fn() -> bool) {
    while !done() && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
}

#[derive(Debug, Default)]
pub struct ForkGate {
    /// The thread in a collection (0: none), set by the `gc.callbacks` callback.
    collecting: AtomicU64,
    /// Forks about to happen (threads may fork at once): start no collection.
    forks_pending: AtomicU64,
}

impl ForkGate {
    pub fn collection_started(&self) {
        self.collecting.store(this_thread(), Ordering::Release);
    }

    pub fn collection_stopped(&self) {
        self.collecting.store(0, Ordering::Release);
    }

    /// A collection under way in another thread than this one.
    fn elsewhere(&self) -> bool {
        let thread = self.collecting.load(Ordering::Acquire);
        thread != 0 && thread != this_thread()
    }

    /// Before `fork()`, in the forking thread: holds new collections back and waits for one
    /// under way in another thread to end. False when it had not ended within [`MAX_WAIT`].
    /// (A collection in this thread, a fork from a finalizer, ends in the child too.)
    pub fn before_fork(&self, py: Python<'_>) -> bool {
        self.forks_pending.fetch_add(1, Ordering::AcqRel);
        let deadline = Instant::now() + MAX_WAIT;
        // Checked again with the interpreter back: another thread may have started a
        // collection while this one waited detached.
        while self.elsewhere() {
            if Instant::now() >= deadline {
                return false;
            }
            py.detach(|| wait_until(deadline, || !self.elsewhere()));
        }
        true
    }

    /// After `fork()`, in the parent (also when it failed).
    pub fn after_fork_in_parent(&self) {
        let _ = self
            .forks_pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// In a fork child, on the parent's gate: a collection was under way in another thread at
    /// the fork, so this process' collector can no longer run.
    pub fn forked_mid_collection(&self) -> bool {
        self.elsewhere()
    }

    /// Before the agent's own collection: waits, detached, for a fork under way to be done.
    pub fn wait_for_fork(&self, py: Python<'_>) {
        let pending = || self.forks_pending.load(Ordering::Acquire) > 0;
        if pending() {
            let deadline = Instant::now() + MAX_WAIT;
            py.detach(|| wait_until(deadline, || !pending()));
        }
    }
}
