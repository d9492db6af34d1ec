//! Messages go through Python's `logging` (logger `neurogc`), so they land wherever the host service
//! sends its logs; Python's logging also re-initialises its locks after `fork()`, unlike Rust's stderr.

use pyo3::prelude::*;

pub fn warn(py: Python<'_>, message: &str) {
    let logged = py
        .import("logging")
        .and_then(|logging| logging.call_method1("getLogger", ("neurogc",)))
        .and_then(|logger| logger.call_method1("warning", (message,)));
    if logged.is_err() {
        eprintln!("neurogc: {message}");
    }
}

/// Logs from a thread that may not be attached; if the interpreter is gone, falls back to stderr.
pub fn warn_detached(message: &str) {
    if Python::try_attach(|py| warn(py, message)).is_none() {
        eprintln!("neurogc: {message}");
    }
}
