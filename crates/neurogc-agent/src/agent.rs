//! `NativeAgent`: the Python-facing handle. The Python package wraps it (`neurogc.Agent`) and
//! registers its `gc_callback`; users never see this class directly.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use neurogc_core::csv_sink::{csv_path_for_process, CsvSink};
use neurogc_core::gcstats::GcEvent;
use neurogc_core::policy::{Action, GcControl, PolicySpec};
use neurogc_core::process::ProcessReader;
use neurogc_core::prometheus::{Live, ProcessFigures};
use neurogc_core::sample::{Sample, Value};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::pygc::OriginalGc;
use crate::sampler::{capture_original, start_policy, Sampler};
use crate::shared::{lock, Shared, FAULT_REQUEST_PANIC, FAULT_SAMPLER_PANIC};
use crate::shield::shield;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunState {
    Created,
    Running,
    Stopped,
}

#[pyclass(module = "neurogc._native", frozen)]
pub struct NativeAgent {
    spec_text: String,
    spec: PolicySpec,
    interval: Duration,
    csv_template: Option<PathBuf>,
    gc_events_template: Option<PathBuf>,
    proc_root: PathBuf,
    /// Reads this process' CPU time and memory for a scrape.
    reader: ProcessReader,
    /// Replaced wholesale in a fork child: a lock a parent thread held at `fork()` stays held forever.
    current: Mutex<Arc<Shared>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    state: Mutex<RunState>,
    csv_path: Mutex<Option<PathBuf>>,
    gc_events_path: Mutex<Option<PathBuf>>,
    original: Mutex<Option<OriginalGc>>,
    /// The policy actually in force: the spec, or `default` after a fallback.
    effective_policy: Mutex<String>,
    /// The lock file a `stagger=on` policy shares with the service's other processes.
    stagger_lock: Mutex<Option<PathBuf>>,
}

impl NativeAgent {
    fn shared(&self) -> Arc<Shared> {
        lock(&self.current).clone()
    }

    /// This process's CSV paths: the templates, pid-suffixed in a fork child.
    fn paths(&self, forked: bool) -> (Option<PathBuf>, Option<PathBuf>) {
        let pid = std::process::id();
        let path = |t: &Option<PathBuf>| t.as_deref().map(|t| csv_path_for_process(t, pid, forked));
        (path(&self.csv_template), path(&self.gc_events_template))
    }

    /// Starts policy and sampler on `shared`; the caller holds the interpreter.
    fn launch(
        &self,
        py: Python<'_>,
        shared: Arc<Shared>,
        (csv_path, gc_events_path): (Option<PathBuf>, Option<PathBuf>),
    ) -> PyResult<()> {
        let csv = match &csv_path {
            Some(path) => Some(CsvSink::open(path).map_err(|e| {
                PyOSError::new_err(format!("cannot open sample CSV {}: {e}", path.display()))
            })?),
            None => None,
        };
        let gc_events = match &gc_events_path {
            Some(path) => Some(
                CsvSink::open_with_columns(path, &GcEvent::CSV_COLUMNS).map_err(|e| {
                    PyOSError::new_err(format!("cannot open GC events CSV {}: {e}", path.display()))
                })?,
            ),
            None => None,
        };
        let reader = ProcessReader::new(&self.proc_root);
        let original = {
            let mut slot = lock(&self.original);
            match *slot {
                Some(o) => o,
                None => {
                    let o = capture_original(py, &shared).map_err(PyRuntimeError::new_err)?;
                    *slot = Some(o);
                    o
                }
            }
        };
        // A model that cannot be used must not take the service down: fall back (the scheduler
        // without its model, else `default`) and say why, in the log and in the first sample.
        let (mut policy, actions) = match self.spec.build(&self.spec_text) {
            Ok(policy) => (policy, vec![]),
            Err(reason) => {
                let (spec, text) = self.spec.fallback(&self.spec_text);
                let (fallback, name) = match spec.build(&text) {
                    Ok(p) => (p, text),
                    Err(_) => {
                        let p: Box<dyn neurogc_core::policy::Policy> =
                            Box::new(neurogc_core::policy::DefaultPolicy::new("default"));
                        (p, "default".to_string())
                    }
                };
                let message = format!(
                    "policy {:?} cannot start ({reason}); falling back to {name:?}",
                    self.spec_text
                );
                crate::logging::warn(py, &message);
                (
                    fallback,
                    vec![Action::new(format!("fallback to {name}"), message)],
                )
            }
        };
        // Staggered unless it fell back to `default` (which runs no collection).
        if self.spec.stagger() && policy.spec() != "default" {
            policy = self.staggered(py, policy);
        }
        *lock(&self.effective_policy) = policy.spec().to_string();
        let started = match start_policy(py, &shared, policy.as_mut(), &reader) {
            Ok(actions) => actions,
            Err(e) => {
                let _ = original.restore_in(py, &shared);
                return Err(PyRuntimeError::new_err(format!(
                    "policy {:?} failed to start: {e}",
                    self.spec_text
                )));
            }
        };
        // A fallback is said last: a sample shows its interval's last action.
        let actions: Vec<Action> = started.into_iter().chain(actions).collect();
        shared
            .policy_actions
            .fetch_add(actions.len() as u64, Ordering::Relaxed);
        let now = Instant::now();
        let sampler = Sampler {
            shared: shared.clone(),
            policy,
            original,
            last_counters: reader.read(),
            rss: reader.rss_reader(),
            reader,
            csv,
            gc_events,
            events_dropped_unreported: 0,
            last_drop_warning: None,
            interval: self.interval,
            started: now,
            last_sample: now,
            actions,
            heap_free: neurogc_core::process::HeapFree::new(Duration::from_millis(200)),
            requests: Default::default(),
            arrivals: Vec::new(),
            stops: Default::default(),
        };
        let handle = std::thread::Builder::new()
            .name("neurogc-sampler".into())
            .spawn(move || sampler.run())
            .map_err(|e| {
                PyRuntimeError::new_err(format!("cannot start the sampler thread: {e}"))
            })?;
        *lock(&self.thread) = Some(handle);
        *lock(&self.csv_path) = csv_path;
        *lock(&self.gc_events_path) = gc_events_path;
        *lock(&self.current) = shared;
        *lock(&self.state) = RunState::Running;
        Ok(())
    }
}

impl NativeAgent {
    /// `policy` with its full collections behind the service's lock; without one (a lock file
    /// that cannot be opened) the policy runs unstaggered and the log says why.
    fn staggered(
        &self,
        py: Python<'_>,
        policy: Box<dyn neurogc_core::policy::Policy>,
    ) -> Box<dyn neurogc_core::policy::Policy> {
        use neurogc_core::policy::stagger::{default_lock_path, FileLock, Staggered};
        let env = std::env::var_os("NEUROGC_STAGGER_LOCK").map(PathBuf::from);
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() } as u32;
        let opened = default_lock_path(env, parent)
            .and_then(|path| FileLock::open(&path).map(|lock| (path, lock)));
        match opened {
            Ok((path, file)) => {
                *lock(&self.stagger_lock) = Some(path);
                Box::new(Staggered::new(policy, Box::new(file)))
            }
            Err(e) => {
                crate::logging::warn(
                    py,
                    &format!(
                        "stagger=on: no lock file to share with the service's other processes \
                         ({e}); full collections are not staggered"
                    ),
                );
                policy
            }
        }
    }
}

fn sample_to_dict<'py>(py: Python<'py>, sample: &Sample) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in sample.fields() {
        match value {
            Value::Float(v) => dict.set_item(name, v)?,
            Value::Int(v) => dict.set_item(name, v)?,
            Value::Bool(b) => dict.set_item(name, b)?,
            Value::Text(s) => dict.set_item(name, s)?,
        }
    }
    Ok(dict)
}

#[pymethods]
impl NativeAgent {
    #[new]
    #[pyo3(signature = (policy, interval, csv=None, proc_root=PathBuf::from("/proc"), gc_events_csv=None))]
    fn new(
        policy: &str,
        interval: f64,
        csv: Option<PathBuf>,
        proc_root: PathBuf,
        gc_events_csv: Option<PathBuf>,
    ) -> PyResult<Self> {
        let spec: PolicySpec = policy
            .parse()
            .map_err(|e: neurogc_core::policy::SpecError| PyValueError::new_err(e.to_string()))?;
        if !interval.is_finite() || !(0.001..=3600.0).contains(&interval) {
            return Err(PyValueError::new_err(format!(
                "interval must be between 0.001 and 3600 seconds, got {interval}"
            )));
        }
        if csv.is_some() && csv == gc_events_csv {
            return Err(PyValueError::new_err(
                "the samples CSV and the GC events CSV must be different files",
            ));
        }
        Ok(NativeAgent {
            spec_text: policy.trim().to_string(),
            spec,
            interval: Duration::from_secs_f64(interval),
            csv_template: csv,
            gc_events_template: gc_events_csv,
            reader: ProcessReader::new(&proc_root),
            proc_root,
            current: Mutex::new(Arc::new(Shared::default())),
            thread: Mutex::new(None),
            state: Mutex::new(RunState::Created),
            csv_path: Mutex::new(None),
            gc_events_path: Mutex::new(None),
            original: Mutex::new(None),
            effective_policy: Mutex::new(policy.trim().to_string()),
            stagger_lock: Mutex::new(None),
        })
    }

    /// Applies the policy and starts the sampler thread.
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        if *lock(&self.state) != RunState::Created {
            return Err(PyRuntimeError::new_err("this agent was already started"));
        }
        self.launch(py, Arc::new(Shared::default()), self.paths(false))
    }

    /// Stops the sampler (writing the partial last interval) and restores the collector's settings.
    /// Idempotent. The interpreter is released while joining, so the sampler can finish its work.
    fn stop(&self, py: Python<'_>) {
        {
            let mut state = lock(&self.state);
            if *state != RunState::Running {
                *state = RunState::Stopped;
                return;
            }
            *state = RunState::Stopped;
        }
        let shared = self.shared();
        shared.request_stop();
        let handle = lock(&self.thread).take();
        if let Some(handle) = handle {
            let _ = py.detach(move || handle.join());
        }
    }

    /// Called before `fork()` in the forking thread: holds the agent's collections back and
    /// waits for a collection under way in another thread to end (see `fork`). False when it
    /// had not ended in time.
    fn before_fork(&self, py: Python<'_>) -> bool {
        self.shared().fork_gate.before_fork(py)
    }

    /// Called after `fork()` in the parent.
    fn after_fork_parent(&self) {
        self.shared().fork_gate.after_fork_in_parent();
    }

    /// Called in a fork child: the sampler thread did not survive `fork()`; start a fresh one.
    fn after_fork_child(&self, py: Python<'_>) -> PyResult<()> {
        if *lock(&self.state) != RunState::Running {
            return Ok(());
        }
        // The parent's thread does not exist here: forget its handle rather than detach a stale id.
        if let Some(stale) = lock(&self.thread).take() {
            std::mem::forget(stale);
        }
        // What the parent's policy set is still set here; atomics, read without a lock.
        let parent = self.shared();
        if parent.fork_gate.forked_mid_collection() {
            crate::logging::warn(
                py,
                &format!(
                    "fork child {}: the fork came while another thread of the parent was in a \
                     garbage collection; CPython's collector cannot run in this process (its \
                     collection flag was copied set)",
                    std::process::id(),
                ),
            );
        }
        let fresh = Arc::new(Shared::default());
        fresh.applied.copy_from(&parent.applied);
        let launched = self.launch(py, fresh.clone(), self.paths(true));
        if launched.is_err() {
            // No sampler here: put back the collector's settings, or a policy that turned
            // automatic collection off in the parent would leave this process never collecting.
            let original = *lock(&self.original);
            if let Some(original) = original {
                let _ = original.restore_in(py, &fresh);
            }
            *lock(&self.state) = RunState::Stopped;
        }
        launched
    }

    /// Counts a request in flight; returns the token `request_finished` takes to tell whether
    /// the request overlapped a collection (0 once the agent has failed).
    fn request_started(&self) -> u64 {
        let shared = self.shared();
        if shared.is_failed() {
            return 0;
        }
        if !shared.serves_requests.load(Ordering::Relaxed) {
            shared.serves_requests.store(true, Ordering::Relaxed);
        }
        shared.arrivals.record(shared.origin.ns());
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        shared.epochs.token()
    }

    /// Says a middleware feeds this agent requests, so its samples report request rates (0 in a
    /// quiet interval) instead of leaving them unmeasured.
    fn serve_requests(&self) {
        self.shared().serves_requests.store(true, Ordering::Relaxed);
    }

    /// Records a finished request. `token`: what `request_started` returned (without it the
    /// request counts as not overlapping a collection).
    #[pyo3(signature = (latency_ns, bytes_in, bytes_out, error=false, token=None))]
    fn request_finished(
        &self,
        latency_ns: u64,
        bytes_in: u64,
        bytes_out: u64,
        error: bool,
        token: Option<u64>,
    ) {
        let shared = self.shared();
        if shared.is_failed() {
            return;
        }
        shield(&shared, "request_finished", (), || {
            if shared.fault.load(Ordering::Relaxed) == FAULT_REQUEST_PANIC {
                panic!("injected request fault");
            }
            shared.in_flight.fetch_sub(1, Ordering::Relaxed);
            shared.record_request(latency_ns, bytes_in, bytes_out, error, token);
        });
    }

    /// Registered in `gc.callbacks`. Never raises and never calls back into `gc`. It runs twice
    /// per collection, gen0 included, so it avoids allocating: keys are interned, `phase` is
    /// compared as a Python string.
    fn gc_callback(&self, py: Python<'_>, phase: &Bound<'_, PyAny>, info: &Bound<'_, PyAny>) {
        let shared = self.shared();
        if shared.is_failed() {
            return;
        }
        let field = |key: &Bound<'_, PyString>| {
            info.get_item(key)
                .and_then(|v| v.extract::<u64>())
                .unwrap_or(0)
        };
        let generation = u8::try_from(field(intern!(py, "generation"))).unwrap_or(2);
        if phase.eq(intern!(py, "start")).unwrap_or(false) {
            shield(&shared, "gc_callback", (), || shared.gc_started(generation));
        } else {
            let collected = field(intern!(py, "collected"));
            let uncollectable = field(intern!(py, "uncollectable"));
            shield(&shared, "gc_callback", (), || {
                shared.gc_stopped(generation, collected, uncollectable)
            });
        }
    }

    /// The newest sample as a dict, or None before the first interval has passed.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let latest = lock(&self.shared().latest).clone();
        latest.map(|s| sample_to_dict(py, &s)).transpose()
    }

    /// Totals since start, as they are now: requests, bytes, collections and pauses per generation.
    fn totals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        // Copied out before any Python object is made (no agent lock is held while allocating).
        let totals = self.shared().totals();
        let dict = PyDict::new(py);
        let r = &totals.requests;
        dict.set_item("requests", r.requests)?;
        dict.set_item("errors", r.errors)?;
        dict.set_item("bytes_in", r.bytes_in)?;
        dict.set_item("bytes_out", r.bytes_out)?;
        dict.set_item("policy_actions", totals.policy_actions)?;
        dict.set_item("policy_collections", totals.gc.policy_collections)?;
        dict.set_item("samples", totals.samples)?;
        dict.set_item("requests_gc_overlap", r.gc_overlap)?;
        dict.set_item("requests_gc2_overlap", r.gc2_overlap)?;
        dict.set_item("gc_events_dropped", totals.gc.events_dropped)?;
        for (g, gen) in totals.gc.generations.iter().enumerate() {
            dict.set_item(format!("gc{g}_collections"), gen.collections)?;
            dict.set_item(format!("gc{g}_collected"), gen.collected)?;
            dict.set_item(format!("gc{g}_uncollectable"), gen.uncollectable)?;
            dict.set_item(format!("gc{g}_pause_ms_sum"), gen.pause_ms_sum)?;
            dict.set_item(format!("gc{g}_pause_ms_max"), gen.pause_ms_max)?;
        }
        Ok(dict)
    }

    /// Prometheus text exposition, read at this moment. `process`: include this process' CPU
    /// time and memory under prometheus_client's `process_*` names (not where a registry's
    /// process collector reports them).
    #[pyo3(signature = (process=true))]
    fn prometheus(&self, py: Python<'_>, process: bool) -> String {
        let shared = self.shared();
        // The collector's state first: no agent lock is held across a call into `gc`.
        let (gc_enabled, gc_count, gc_threshold) = match crate::pygc::PyGc::new(py, &shared) {
            Ok(mut gc) => (gc.is_enabled().ok(), gc.count().ok(), gc.threshold().ok()),
            Err(_) => (None, None, None),
        };
        let policy = lock(&self.effective_policy).clone();
        py.detach(|| {
            let figures = process.then(|| {
                let counters = self.reader.read();
                ProcessFigures {
                    cpu_seconds: self.reader.cpu_seconds(&counters),
                    resident_memory_bytes: counters.rss_bytes,
                }
            });
            let live = Live {
                pid: std::process::id(),
                policy,
                in_flight: shared.in_flight.load(Ordering::Relaxed),
                gc_enabled,
                gc_count,
                gc_threshold,
                process: figures,
            };
            neurogc_core::prometheus::render(&shared.totals(), &live)
        })
    }

    /// The policy in force (`default` if the requested one fell back).
    #[getter]
    fn policy(&self) -> String {
        lock(&self.effective_policy).clone()
    }

    /// The policy spec as requested.
    #[getter]
    fn requested_policy(&self) -> &str {
        &self.spec_text
    }

    #[getter]
    fn interval(&self) -> f64 {
        self.interval.as_secs_f64()
    }

    #[getter]
    fn csv_path(&self) -> Option<PathBuf> {
        lock(&self.csv_path).clone()
    }

    /// The lock file a `stagger=on` policy shares with the service's other processes, if any.
    #[getter]
    fn stagger_lock(&self) -> Option<PathBuf> {
        lock(&self.stagger_lock).clone()
    }

    /// The GC events CSV this process writes (pid-suffixed in a fork child), if any.
    #[getter]
    fn gc_events_csv_path(&self) -> Option<PathBuf> {
        lock(&self.gc_events_path).clone()
    }

    /// True while the sampler runs and the agent has not failed.
    #[getter]
    fn running(&self) -> bool {
        *lock(&self.state) == RunState::Running && !self.shared().is_failed()
    }

    /// Why the agent turned itself off, if it did.
    #[getter]
    fn failure(&self) -> Option<String> {
        self.shared().failure()
    }

    /// Test hook: make the next sampler tick or request record panic, to exercise containment.
    fn _inject_fault(&self, kind: &str) -> PyResult<()> {
        let code = match kind {
            "sampler_panic" => FAULT_SAMPLER_PANIC,
            "request_panic" => FAULT_REQUEST_PANIC,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown fault {other:?}; known: sampler_panic, request_panic"
                )))
            }
        };
        self.shared().fault.store(code, Ordering::Relaxed);
        Ok(())
    }
}
