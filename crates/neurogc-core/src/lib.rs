//! NeuroGC's pure-Rust core: everything the in-process agent needs that does not touch Python.
//!
//! - [`sample`]: the one-row-per-interval schema (the seed's eleven columns first, then ours).
//! - [`process`]: per-process CPU, RSS and storage I/O read from `/proc/<pid>`.
//! - [`latency`]: an HDR-histogram window of request latencies (no sorting of raw samples).
//! - [`gcstats`]: per-generation collection counts, objects collected and pause times; the events.
//! - [`overlap`]: which requests were in flight while a collection ran (two atomic epochs).
//! - [`policy`]: the GC policies, their spec strings, and the memory guard.
//! - [`csv_sink`]: the append-only, flushed CSV writer (samples, GC events).
//! - [`prometheus`]: the text exposition of the agent's counters.
//! - [`traffic`]: request arrivals and the chance of a quiet window, for the scheduler.
//!
//! Python lives elsewhere: the agent crate implements [`policy::GcControl`] over CPython's `gc`
//! module, and this crate stays testable with plain `cargo test`.

pub mod csv_sink;
pub mod gcstats;
pub mod latency;
pub mod overlap;
pub mod policy;
pub mod process;
pub mod prometheus;
pub mod sample;
pub mod traffic;
