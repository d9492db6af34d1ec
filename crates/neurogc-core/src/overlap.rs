//! Which requests were in flight while a collection ran, at the cost of two atomic loads per end.
//!
//! Two epoch counters are bumped at every collection's start and again at its stop: one for any
//! collection, one for full (oldest-generation) collections, so an odd epoch means a collection is
//! in progress. A request takes a [`GcEpochs::token`] (both epochs, packed) when it starts; when it
//! finishes, it overlapped a collection if the epoch has moved since, or was odd at its start (a
//! request that starts during a collection: only possible on a free-threaded build, or from a
//! finalizer the collection runs).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::gcstats::GENERATIONS;

/// Whether one request overlapped a collection, and a full one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcOverlap {
    pub any: bool,
    pub full: bool,
}

/// The collection epochs. `started`/`stopped` are called from the `gc.callbacks` callback, which
/// the interpreter serializes (collections never run concurrently).
#[derive(Debug, Default)]
pub struct GcEpochs {
    any: AtomicU64,
    full: AtomicU64,
}

/// Makes `epoch` odd and different from what it was: +1 from even, +2 from odd (a stop that was
/// never seen; the new collection still counts as one in progress).
fn open(epoch: &AtomicU64) {
    let step = if epoch.load(Ordering::Acquire) & 1 == 1 {
        2
    } else {
        1
    };
    epoch.fetch_add(step, Ordering::AcqRel);
}

/// Makes an odd `epoch` even; leaves an even one alone (a stop whose start was not seen, e.g. the
/// agent started mid-collection, must not leave the epoch odd for ever).
fn close(epoch: &AtomicU64) {
    if epoch.load(Ordering::Acquire) & 1 == 1 {
        epoch.fetch_add(1, Ordering::AcqRel);
    }
}

impl GcEpochs {
    /// A collection of `generation` starts (the oldest generation is a full collection).
    pub fn started(&self, generation: u8) {
        open(&self.any);
        if usize::from(generation) >= GENERATIONS - 1 {
            open(&self.full);
        }
    }

    /// The collection in progress stopped.
    pub fn stopped(&self) {
        close(&self.any);
        close(&self.full);
    }

    /// Both epochs, packed: any in the low 32 bits, full in the high 32 (truncation keeps parity;
    /// a wrap would need 2^32 collection starts and stops during one request).
    pub fn token(&self) -> u64 {
        let any = self.any.load(Ordering::Acquire) as u32;
        let full = self.full.load(Ordering::Acquire) as u32;
        u64::from(any) | (u64::from(full) << 32)
    }

    /// Whether a request that took `token` at its start overlapped a collection by now.
    pub fn overlap(&self, token: u64) -> GcOverlap {
        let now = self.token();
        let moved_or_odd = |shift: u32| {
            let then = (token >> shift) as u32;
            then & 1 == 1 || then != (now >> shift) as u32
        };
        GcOverlap {
            any: moved_or_odd(0),
            full: moved_or_odd(32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: GcOverlap = GcOverlap {
        any: false,
        full: false,
    };
    const YOUNG: GcOverlap = GcOverlap {
        any: true,
        full: false,
    };
    const FULL: GcOverlap = GcOverlap {
        any: true,
        full: true,
    };

    #[test]
    fn no_collection_no_overlap() {
        let e = GcEpochs::default();
        let t = e.token();
        assert_eq!(e.overlap(t), NONE);
        // Collections that finished before the request started do not count.
        e.started(2);
        e.stopped();
        let t = e.token();
        assert_eq!(e.overlap(t), NONE);
    }

    #[test]
    fn young_and_full_collections_during_a_request() {
        let e = GcEpochs::default();
        let t = e.token();
        e.started(0);
        e.stopped();
        assert_eq!(e.overlap(t), YOUNG);
        e.started(1);
        e.stopped();
        assert_eq!(e.overlap(t), YOUNG);
        e.started(2);
        e.stopped();
        assert_eq!(e.overlap(t), FULL);
        // Still in progress when the request finishes.
        let t = e.token();
        e.started(2);
        assert_eq!(e.overlap(t), FULL);
    }

    #[test]
    fn a_request_starting_mid_collection_overlaps_it() {
        let e = GcEpochs::default();
        e.started(0);
        let t = e.token();
        assert_eq!(e.overlap(t), YOUNG);
        e.stopped();
        assert_eq!(e.overlap(t), YOUNG);
        e.started(2);
        let t = e.token();
        e.stopped();
        assert_eq!(e.overlap(t), FULL);
    }

    #[test]
    fn unpaired_callbacks_never_leave_an_epoch_odd() {
        let e = GcEpochs::default();
        // A stop without its start (the agent was registered mid-collection).
        e.stopped();
        assert_eq!(e.overlap(e.token()), NONE);
        // A start whose stop was never seen, then a full collection: odd, and moved.
        e.started(0);
        let t = e.token();
        e.started(2);
        assert_eq!(e.overlap(t), FULL);
        e.stopped();
        let t = e.token();
        assert_eq!(e.overlap(t), NONE);
    }

    #[test]
    fn the_token_survives_the_32_bit_wrap() {
        let e = GcEpochs {
            any: AtomicU64::new(u64::from(u32::MAX) - 1),
            full: AtomicU64::new(u64::from(u32::MAX) - 1),
        };
        let t = e.token();
        e.started(2);
        e.stopped();
        e.started(0);
        e.stopped();
        assert_eq!(e.overlap(t), FULL);
        assert_eq!(e.overlap(e.token()), NONE);
    }
}
