//! Staggering (`stagger=on`): the workers of one service never run a full collection at the same
//! moment. Each full collection a policy runs takes a lock the service's processes share first
//! (a `flock` on one file, [`FileLock`]); when another process holds it, the collection is
//! postponed, never waited for: the policy goes on, and the sampler thread retries every
//! [`RETRY`] (checking the lock without the interpreter, attaching only once it is free). A
//! `freeze()` that follows a postponed collection in the same tick is postponed with it, so the
//! heap is frozen only after it was collected.
//!
//! Only full collections the policy runs are staggered: CPython's automatic ones are not the
//! agent's to delay, so the policies that take `stagger=on` are those that own the old
//! generation (`periodic`, `neurogc`, `neurogc-seed`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Action, Collector, Decision, GcControl, GcError, Intent, Observation, Policy};

/// How often a postponed collection checks the lock again (a flock without the interpreter):
/// often, because the others take the lock at their own moments, and a process that checks
/// rarely can miss every free window between them (seen: a worker with no full collection in
/// 4 s while two others held the lock in turns at 50 ms).
pub const RETRY: Duration = Duration::from_millis(10);

/// A lock that at most one process of the service holds, taken without waiting.
pub trait FullCollectionLock: Send {
    /// Takes the lock if it is free; `Ok(false)` when another process holds it.
    fn try_lock(&mut self) -> std::io::Result<bool>;
    fn unlock(&mut self);
    /// Whether it is free now (taken and released at once), without the interpreter.
    fn is_free(&mut self) -> bool {
        match self.try_lock() {
            Ok(true) => {
                self.unlock();
                true
            }
            Ok(false) => false,
            Err(_) => true,
        }
    }
}

/// `flock` on a file the service's processes share. Each process opens its own (a lock belongs
/// to an open file description: a fork child must not use its parent's).
pub struct FileLock {
    file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    /// Opens (creating, mode 0600) the lock file `path`; a symlink is refused.
    pub fn open(path: &Path) -> std::io::Result<FileLock> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        Ok(FileLock {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl FullCollectionLock for FileLock {
    fn try_lock(&mut self) -> std::io::Result<bool> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this struct owns; no memory is passed.
        let r = unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => Ok(false),
            Some(libc::EINTR) => Ok(false),
            _ => Err(e),
        }
    }

    fn unlock(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// A full collection waiting for the lock: why, whether a freeze follows it, and since when.
#[derive(Clone, Debug)]
struct Pending {
    intent: Intent,
    freeze: bool,
    since: Duration,
}

/// Wraps a policy so its full collections take the service's lock (see the module's doc).
pub struct Staggered {
    inner: Box<dyn Policy>,
    lock: Box<dyn FullCollectionLock>,
    pending: Option<Pending>,
    /// The policy's clock at the last tick.
    now: Duration,
}

impl Staggered {
    pub fn new(inner: Box<dyn Policy>, lock: Box<dyn FullCollectionLock>) -> Staggered {
        Staggered {
            inner,
            lock,
            pending: None,
            now: Duration::ZERO,
        }
    }

    /// Runs the postponed collection if the lock is free now.
    fn retry(&mut self, gc: &mut dyn GcControl) -> Result<Vec<Action>, GcError> {
        let Some(p) = self.pending.clone() else {
            return Ok(vec![]);
        };
        let mut gate = Gate {
            gc,
            lock: self.lock.as_mut(),
            pending: &mut self.pending,
            now: self.now,
        };
        gate.pending.take();
        let collected = gate.collect(2, p.intent.clone())?;
        if gate.pending.is_some() {
            // Still held by another process: keep the original wait's start.
            if let Some(q) = gate.pending.as_mut() {
                q.since = p.since;
                q.freeze |= p.freeze;
            }
            return Ok(vec![]);
        }
        if p.freeze {
            gate.gc.freeze()?;
        }
        let waited = self.now.saturating_sub(p.since);
        Ok(vec![Action::new(
            format!(
                "collect(2) -> {collected}{}",
                if p.freeze { ", freeze" } else { "" }
            ),
            format!(
                "stagger: {} collection postponed {} ms while another process of the service \
                 was in a full collection",
                p.intent.trigger.as_str(),
                waited.as_millis()
            ),
        )])
    }

    fn run_inner(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
        start: bool,
    ) -> Result<Vec<Action>, GcError> {
        let before = self.pending.is_some();
        let mut gate = Gate {
            gc,
            lock: self.lock.as_mut(),
            pending: &mut self.pending,
            now: self.now,
        };
        let mut actions = if start {
            self.inner.start(&mut gate, obs)?
        } else {
            self.inner.tick(&mut gate, obs)?
        };
        if !before {
            if let Some(p) = &self.pending {
                actions.push(Action::new(
                    "postpone collect(2)",
                    format!(
                        "stagger: another process of the service is in a full collection; the \
                         {} collection waits for it (retried every {} ms)",
                        p.intent.trigger.as_str(),
                        RETRY.as_millis()
                    ),
                ));
            }
        }
        Ok(actions)
    }
}

impl Policy for Staggered {
    fn spec(&self) -> &str {
        self.inner.spec()
    }

    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.now = obs.elapsed;
        self.run_inner(gc, obs, true)
    }

    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.now = obs.elapsed;
        let mut actions = self.retry(gc)?;
        actions.extend(self.run_inner(gc, obs, false)?);
        Ok(actions)
    }

    fn next_tick(&self) -> Option<Duration> {
        let retry = self.pending.as_ref().map(|_| self.now + RETRY);
        match (self.inner.next_tick(), retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn observe(&mut self, sample: &crate::sample::Sample) {
        self.inner.observe(sample);
    }

    fn last_decision(&self) -> Option<Decision> {
        self.inner.last_decision()
    }

    fn ready(&mut self, obs: &Observation) -> bool {
        self.now = obs.elapsed;
        // A postponed collection attaches only once the lock is free.
        let retry = self.pending.is_some() && self.lock.is_free();
        self.inner.ready(obs) || retry
    }
}

/// The collector as a staggered policy sees it: full collections go through the lock.
struct Gate<'a> {
    gc: &'a mut dyn GcControl,
    lock: &'a mut dyn FullCollectionLock,
    pending: &'a mut Option<Pending>,
    now: Duration,
}

impl GcControl for Gate<'_> {
    fn collect(&mut self, generation: u8, intent: Intent) -> Result<u64, GcError> {
        if generation < 2 {
            return self.gc.collect(generation, intent);
        }
        if self.pending.is_some() {
            return Ok(0); // one postponed full collection stands for both
        }
        match self.lock.try_lock() {
            Ok(true) => {
                let result = self.gc.collect(2, intent);
                self.lock.unlock();
                result
            }
            Ok(false) => {
                *self.pending = Some(Pending {
                    intent,
                    freeze: false,
                    since: self.now,
                });
                Ok(0)
            }
            // A lock that cannot be taken must not stop collection (memory comes first).
            Err(_) => self.gc.collect(2, intent),
        }
    }
    fn is_enabled(&mut self) -> Result<bool, GcError> {
        self.gc.is_enabled()
    }
    fn set_enabled(&mut self, enabled: bool) -> Result<(), GcError> {
        self.gc.set_enabled(enabled)
    }
    fn threshold(&mut self) -> Result<[u64; 3], GcError> {
        self.gc.threshold()
    }
    fn set_threshold(&mut self, threshold: [u64; 3]) -> Result<(), GcError> {
        self.gc.set_threshold(threshold)
    }
    fn freeze(&mut self) -> Result<(), GcError> {
        match self.pending.as_mut() {
            // Frozen once collected, not before.
            Some(p) => {
                p.freeze = true;
                Ok(())
            }
            None => self.gc.freeze(),
        }
    }
    fn unfreeze(&mut self) -> Result<(), GcError> {
        self.gc.unfreeze()
    }
    fn freeze_count(&mut self) -> Option<u64> {
        self.gc.freeze_count()
    }
    fn collector(&mut self) -> Result<Collector, GcError> {
        self.gc.collector()
    }
}

/// Where the service's processes share their lock: `$NEUROGC_STAGGER_LOCK` when set (the first
/// process that starts an agent sets it for the processes it starts), else one file per parent
/// process (siblings that each start an agent share it) in a folder of the user's own under
/// the temporary directory, refused when another user owns it or could write into it.
pub fn default_lock_path(env: Option<PathBuf>, parent_pid: u32) -> std::io::Result<PathBuf> {
    if let Some(path) = env.filter(|p| !p.as_os_str().is_empty()) {
        return Ok(path);
    }
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("neurogc-stagger-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private folder of this user; set NEUROGC_STAGGER_LOCK to a lock \
                 file the service's processes share",
                dir.display()
            ),
        ));
    }
    Ok(dir.join(format!("{parent_pid}.lock")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{at, RecordingGc};
    use crate::policy::{PeriodicPolicy, Trigger};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A lock another process holds while `held` is set.
    struct Shared(Arc<AtomicBool>);
    impl FullCollectionLock for Shared {
        fn try_lock(&mut self) -> std::io::Result<bool> {
            Ok(!self.0.load(Ordering::SeqCst))
        }
        fn unlock(&mut self) {}
    }

    /// Collects every second, then freezes: as the scheduler's stale re-freeze does.
    struct CollectThenFreeze;
    impl Policy for CollectThenFreeze {
        fn spec(&self) -> &str {
            "t"
        }
        fn start(
            &mut self,
            _: &mut dyn GcControl,
            _: &Observation,
        ) -> Result<Vec<Action>, GcError> {
            Ok(vec![])
        }
        fn tick(
            &mut self,
            gc: &mut dyn GcControl,
            _: &Observation,
        ) -> Result<Vec<Action>, GcError> {
            gc.collect(0, Trigger::Guard.into())?;
            gc.collect(2, Trigger::Stale.into())?;
            gc.freeze()?;
            Ok(vec![])
        }
        fn ready(&mut self, _: &Observation) -> bool {
            false // acts at sample ticks only
        }
    }

    #[test]
    fn a_held_lock_postpones_the_full_collection_and_its_freeze() {
        let held = Arc::new(AtomicBool::new(true));
        let mut p = Staggered::new(Box::new(CollectThenFreeze), Box::new(Shared(held.clone())));
        let mut gc = RecordingGc::default();
        let actions = p.tick(&mut gc, &at(1.0)).unwrap();
        // The young collection goes on; the full one and the freeze wait.
        assert_eq!(gc.calls, vec!["collect(0)"]);
        assert_eq!(actions.last().unwrap().action, "postpone collect(2)");
        assert_eq!(p.next_tick(), Some(Duration::from_secs(1) + RETRY));
        // Not ready while it is held: no attaching to the interpreter for nothing.
        assert!(!p.ready(&at(1.05)));
        held.store(false, Ordering::SeqCst);
        assert!(p.ready(&at(1.1)));
        gc.calls.clear();
        let actions = p.tick(&mut gc, &at(1.1)).unwrap();
        assert_eq!(gc.calls[..2], ["collect(2)", "freeze"]);
        assert!(
            actions[0].reason.contains("postponed 100 ms"),
            "{actions:?}"
        );
        assert_eq!(p.next_tick(), None);
    }

    #[test]
    fn a_free_lock_changes_nothing() {
        let held = Arc::new(AtomicBool::new(false));
        let inner = PeriodicPolicy::new("periodic:1", Duration::from_secs(1));
        let mut p = Staggered::new(Box::new(inner), Box::new(Shared(held)));
        let mut gc = RecordingGc::default();
        p.start(&mut gc, &at(0.0)).unwrap();
        p.tick(&mut gc, &at(1.0)).unwrap();
        assert!(
            gc.calls.contains(&"collect(2)".to_string()),
            "{:?}",
            gc.calls
        );
        assert_eq!(p.next_tick(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn two_file_locks_exclude_each_other_and_a_fork_child_reopens() {
        let dir = std::env::temp_dir().join(format!("neurogc-stagger-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.lock");
        let mut a = FileLock::open(&path).unwrap();
        let mut b = FileLock::open(&path).unwrap();
        assert!(a.try_lock().unwrap());
        assert!(!b.try_lock().unwrap());
        assert!(!b.is_free());
        a.unlock();
        assert!(b.is_free());
        assert!(b.try_lock().unwrap());
        b.unlock();
        // A symlink is not followed.
        let link = dir.join("link.lock");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(FileLock::open(&link).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_lock_path_is_the_environments_or_a_private_one_per_parent() {
        let given = PathBuf::from("/run/x.lock");
        assert_eq!(default_lock_path(Some(given.clone()), 1).unwrap(), given);
        let p = default_lock_path(None, 4242).unwrap();
        assert!(p.ends_with("4242.lock"), "{}", p.display());
        assert_eq!(p, default_lock_path(Some(PathBuf::new()), 4242).unwrap());
    }
}
