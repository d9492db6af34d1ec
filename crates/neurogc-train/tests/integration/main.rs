//! The crate's integration tests, one module per concern, in one test binary: each binary
//! is linked (and link-time optimised) on its own, so one per file cost minutes of `make test`.
//! A test that needs a process to itself (a global allocator, environment variables) stays a
//! file of its own beside this folder.

mod bad_input;
mod common;
mod fuzz_dataset;
mod import_torch;
mod seed_policy;
mod training;
