//! The run record: the directory `neurogc collect`, `bench` and `suite` write and `neurogc report`
//! and `neurogc dashboard --replay` read (`docs/runs.md`), and the suite's `suite.json` that
//! lists one such run per workload.
//!
//! ```text
//! runs/<UTC stamp>-<name>/
//!   run.json               RunInfo: what ran, how, on which machine; its trials
//!   rate-search.json       RateSearch (with --rate auto)
//!   trials/NN-<label>-rR/  one server lifetime
//!     trial.json           TrialInfo
//!     samples.csv          the agent's samples   (neurogc-core writes and reads them)
//!     gc-events.csv        one row a collection  (neurogc-core)
//!     samples-<pid>.csv    the same, for each other process of the service (its workers)
//!     gc-events-<pid>.csv
//!     load.jsonl           per-second load rows  (neurogc-load writes and reads them)
//!     latency.hlog         HDR interval log      (neurogc-load)
//!     server.log           the server's output
//! ```
//!
//! [`record`] holds the types (serde, enums for every closed set of values), [`write`] creates
//! and updates a run directory (JSON replaced atomically, so a crash or Ctrl-C keeps what was
//! measured), [`read`] opens one as it is: complete, interrupted or partial, never following a
//! trial path out of the run directory. Adding a field is one change here, which the writer and
//! every reader see at compile time. [`steps`] reads a training run's `steps.csv` and
//! `steps.json` (written by the Python step hook, read by `neurogc sweep`).

pub mod read;
pub mod record;
pub mod steps;
pub mod write;

pub use read::{trial_dir, ProcessFile, RunRecord, TrialEntry};
pub use record::*;
pub use write::{write_json_atomic, RunDir, Trial};

/// File names inside a trial's folder.
pub mod files {
    pub const RUN: &str = "run.json";
    pub const SUITE: &str = "suite.json";
    pub const RATE_SEARCH: &str = "rate-search.json";
    pub const TRIAL: &str = "trial.json";
    pub const SAMPLES: &str = "samples.csv";
    pub const GC_EVENTS: &str = "gc-events.csv";
    pub const LOAD: &str = "load.jsonl";
    pub const LATENCY: &str = "latency.hlog";
    /// Every request of the measured window (`neurogc_load::requests`).
    pub const REQUESTS: &str = "requests.csv";
    pub const SERVER_LOG: &str = "server.log";
    /// A training run's step record (`neurogc.training`, read by `neurogc sweep`).
    pub const STEPS_CSV: &str = "steps.csv";
    pub const STEPS_JSON: &str = "steps.json";
}
