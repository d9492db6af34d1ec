//! [`GcControl`] over CPython's `gc` module. Thresholds, counts and freeze are not in the C API,
//! so everything goes through the module for uniformity; every call needs the thread attached.

use std::sync::atomic::Ordering;

use neurogc_core::policy::{Collector, GcControl, GcError, Intent};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

use crate::shared::{lock, Applied, Shared};

pub struct PyGc<'py, 'a> {
    gc: Bound<'py, PyModule>,
    shared: &'a Shared,
}

fn rendered(e: PyErr) -> GcError {
    e.to_string()
}

impl<'py, 'a> PyGc<'py, 'a> {
    pub fn new(py: Python<'py>, shared: &'a Shared) -> Result<Self, GcError> {
        // Imported once: an import of a loaded module still costs a lookup and a spec check, at
        // every tick the scheduler acts on.
        static GC: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        let gc = GC
            .get_or_try_init(py, || py.import("gc").map(Bound::unbind))
            .map_err(rendered)?;
        Ok(PyGc {
            gc: gc.bind(py).clone(),
            shared,
        })
    }

    pub fn py(&self) -> Python<'py> {
        self.gc.py()
    }

    pub fn count(&self) -> Result<[i64; 3], GcError> {
        let counts: Vec<i64> = self
            .gc
            .call_method0("get_count")
            .and_then(|c| c.extract())
            .map_err(rendered)?;
        let mut out = [0; 3];
        for (slot, c) in out.iter_mut().zip(counts) {
            *slot = c;
        }
        Ok(out)
    }
}

impl GcControl for PyGc<'_, '_> {
    fn collect(&mut self, generation: u8, intent: Intent) -> Result<u64, GcError> {
        // Not while a fork is under way: the child would inherit the collection (see `fork`).
        self.shared.fork_gate.wait_for_fork(self.py());
        // Attribute the callback's events to the policy; no lock is held during the collection.
        *lock(&self.shared.policy_intent) = Some(intent);
        self.shared.policy_collecting.store(true, Ordering::Relaxed);
        let result = self.gc.call_method1("collect", (generation,));
        self.shared
            .policy_collecting
            .store(false, Ordering::Relaxed);
        result.and_then(|n| n.extract()).map_err(rendered)
    }

    fn is_enabled(&mut self) -> Result<bool, GcError> {
        self.gc
            .call_method0("isenabled")
            .and_then(|b| b.extract())
            .map_err(rendered)
    }

    fn set_enabled(&mut self, enabled: bool) -> Result<(), GcError> {
        let method = if enabled { "enable" } else { "disable" };
        self.gc.call_method0(method).map(|_| ()).map_err(rendered)?;
        self.shared.applied.set_enabled(enabled);
        Ok(())
    }

    fn threshold(&mut self) -> Result<[u64; 3], GcError> {
        let t: Vec<u64> = self
            .gc
            .call_method0("get_threshold")
            .and_then(|t| t.extract())
            .map_err(rendered)?;
        // 3.14.0–3.14.4 report two meaningful values; pad what is missing.
        let mut out = [0; 3];
        for (slot, v) in out.iter_mut().zip(t) {
            *slot = v;
        }
        Ok(out)
    }

    fn set_threshold(&mut self, t: [u64; 3]) -> Result<(), GcError> {
        self.gc
            .call_method1("set_threshold", (t[0], t[1], t[2]))
            .map_err(rendered)?;
        // As it reads back (an interpreter may keep fewer values than were set).
        let now = self.threshold()?;
        self.shared.applied.set_threshold(now);
        Ok(())
    }

    fn freeze(&mut self) -> Result<(), GcError> {
        self.gc.call_method0("freeze").map(|_| ()).map_err(rendered)
    }

    fn unfreeze(&mut self) -> Result<(), GcError> {
        self.gc
            .call_method0("unfreeze")
            .map(|_| ())
            .map_err(rendered)
    }

    fn freeze_count(&mut self) -> Option<u64> {
        self.gc
            .call_method0("get_freeze_count")
            .and_then(|n| n.extract())
            .ok()
    }

    fn rss_bytes(&mut self) -> Option<u64> {
        neurogc_core::process::read_rss_bytes(std::path::Path::new("/proc/self"))
    }

    fn release_free_memory(&mut self) {
        // SAFETY: malloc_trim only walks the allocator's own free lists (under its own lock).
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        unsafe {
            libc::malloc_trim(0);
        }
    }

    fn collector(&mut self) -> Result<Collector, GcError> {
        let py = self.gc.py();
        let sys = py.import("sys").map_err(rendered)?;
        // Free-threaded: sys._is_gil_enabled() exists (3.13+) and says False.
        if let Ok(f) = sys.getattr("_is_gil_enabled") {
            if !f.call0().and_then(|v| v.extract::<bool>()).unwrap_or(true) {
                return Ok(Collector::FreeThreaded);
            }
        }
        let v: (u32, u32, u32) = sys
            .getattr("version_info")
            .and_then(|v| {
                v.get_item(0)
                    .and_then(|a| Ok((a, v.get_item(1)?, v.get_item(2)?)))
            })
            .and_then(|(a, b, c)| Ok((a.extract()?, b.extract()?, c.extract()?)))
            .map_err(rendered)?;
        Ok(match v {
            (3, 14, micro) if micro <= 4 => Collector::Incremental,
            _ => Collector::Generational,
        })
    }
}

/// The collector's settings before the agent touched them; restored at stop and on failure, each
/// only if the policy changed it and it still reads as the policy left it: what the application
/// set in between is its own (`default`, which changes nothing, restores nothing).
#[derive(Clone, Copy, Debug)]
pub struct OriginalGc {
    enabled: bool,
    threshold: [u64; 3],
}

impl OriginalGc {
    pub fn capture(gc: &mut dyn GcControl) -> Result<Self, GcError> {
        Ok(OriginalGc {
            enabled: gc.is_enabled()?,
            threshold: gc.threshold()?,
        })
    }

    /// Puts them back in `shared`'s interpreter, where the policy changed them (see `restore`).
    pub fn restore_in(&self, py: Python<'_>, shared: &Shared) -> Result<(), GcError> {
        PyGc::new(py, shared).and_then(|mut gc| self.restore(&mut gc, &shared.applied))
    }

    pub fn restore(&self, gc: &mut dyn GcControl, applied: &Applied) -> Result<(), GcError> {
        if let Some(set) = applied.threshold() {
            if gc.threshold()? == set {
                gc.set_threshold(self.threshold)?;
            }
        }
        if let Some(set) = applied.enabled() {
            if gc.is_enabled()? == set {
                gc.set_enabled(self.enabled)?;
            }
        }
        Ok(())
    }
}
