//! The crate's integration tests, one module per concern, in one test binary: each binary
//! is linked (and link-time optimised) on its own, so one per file cost minutes of `make test`.
//! A test that needs a process to itself (a global allocator, environment variables) stays a
//! file of its own beside this folder.

mod closed_loop;
mod common;
mod errors;
mod open_loop;
mod stop_idle;
