//! `neurogc._native`: the part of NeuroGC that lives inside the host Python process.
//!
//! One [`NativeAgent`] per process owns exactly one sampler thread. Request statistics arrive from
//! the Python middleware, GC pauses from `gc.callbacks`, process metrics from `/proc`; every interval
//! the sampler assembles a [`neurogc_core::sample::Sample`], lets the policy act, and appends the row
//! to the CSV sink.
//!
//! Rules this crate keeps, because it runs inside other people's services:
//! - no panic reaches Python: every entry point is shielded, and a failure turns the agent into a
//!   no-op that has restored the collector's original settings ([`shield`]);
//! - no Python object is created while an agent lock is held (an allocation can start a collection,
//!   whose callback takes the GC lock);
//! - no agent lock is held across a call into `gc` (the callback runs on the calling thread);
//! - a fork child starts from fresh state: locks a parent thread held at `fork()` are never touched;
//! - a fork waits for a collection another thread is in to end ([`fork`]).

mod agent;
mod fork;
mod logging;
mod pygc;
mod sampler;
mod shared;
mod shield;

use pyo3::prelude::*;

/// Checks a policy spec without starting anything; raises `ValueError` naming the problem.
#[pyfunction]
fn validate_policy(spec: &str) -> PyResult<()> {
    spec.parse::<neurogc_core::policy::PolicySpec>()
        .map(|_| ())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// Seconds in a duration of the one grammar every flag and spec takes (`30`, `1.5`, `500ms`,
/// `1m30s`); raises `ValueError` quoting the text.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<f64> {
    neurogc_units::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(pyo3::exceptions::PyValueError::new_err)
}

/// The sample's column names, in CSV order.
#[pyfunction]
fn columns() -> Vec<String> {
    neurogc_core::sample::Sample::columns()
}

/// The CSV path template the other processes of a service get (`samples.csv` →
/// `samples-{pid}.csv`): `neurogc run` hands it to the processes the command starts.
#[pyfunction]
fn child_csv_template(path: std::path::PathBuf) -> std::path::PathBuf {
    neurogc_core::csv_sink::child_template(&path)
}

// gil_used: the agent's invariants rely on the GIL serialising Python-side callers.
#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<agent::NativeAgent>()?;
    m.add_function(wrap_pyfunction!(validate_policy, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(child_csv_template, m)?)?;
    m.add("POLICIES", neurogc_core::policy::spec::KNOWN_POLICIES)?;
    Ok(())
}
