//! Containment: a panic or internal error inside the agent must never reach the host service.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::shared::Shared;

/// Runs `f`; on panic, marks the agent failed (logged once by the sampler) and returns `fallback`.
pub fn shield<R>(shared: &Shared, what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            shared.fail(format!(
                "internal error in {what}: {}",
                panic_text(&payload)
            ));
            fallback
        }
    }
}

pub fn panic_text(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}
