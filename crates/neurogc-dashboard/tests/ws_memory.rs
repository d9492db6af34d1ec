//! Memory stays bounded with a WebSocket client that never reads (issue 14). A process of its
//! own: it counts the heap with a global allocator.
//!
//! Before the fan-out buffer was bounded in bytes, the broadcast channel kept every batch the
//! stuck client had not taken (up to 4096 of them, and their samples after the store had
//! dropped them): 30 posts of 3 MB with an 8 MiB budget grew the heap by 335 MiB.

#[path = "integration/common/mod.rs"]
mod common;

use common::{get, post_json, sample, start, ws_connect};
use neurogc_dashboard::store::StoreConfig;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MIB: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_that_never_reads_does_not_grow_the_heap() {
    let max_bytes = 8 * MIB;
    let srv = start(StoreConfig {
        max_bytes,
        ..StoreConfig::default()
    })
    .await;
    // Connects (the handshake completes), then is never polled again: it reads nothing, so
    // the kernel's buffers fill and the server's send to it blocks.
    let stuck = ws_connect(srv.addr, "").await;

    // About 3 MB per post, as in the audit.
    let post = |i: usize| {
        let samples: Vec<String> = (0..36_000)
            .map(|t| sample(&format!("s{}", t % 8), (i * 36_000 + t) as f64 / 1000.0))
            .collect();
        format!("[{}]", samples.join(","))
    };
    assert!(post(0).len() > 2_900_000, "{}", post(0).len());
    // Warm up: the store fills to its budget and the client gets stuck.
    for i in 0..6 {
        assert_eq!(post_json(srv.addr, &post(i)).await.status, 200);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE.load(Ordering::Relaxed);
    for i in 6..36 {
        assert_eq!(post_json(srv.addr, &post(i)).await.status, 200);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = LIVE.load(Ordering::Relaxed);
    let status = get(srv.addr, "/api/status").await.json();
    let growth = after.saturating_sub(before);
    eprintln!(
        "heap {} MiB before the 30 posts, {} MiB after (+{} MiB); status: bytes {}, \
         ws_buffer_bytes {}, ws_lagged {}, ws_lagging_clients {}",
        before / MIB,
        after / MIB,
        growth / MIB,
        status["bytes"],
        status["ws_buffer_bytes"],
        status["ws_lagged"],
        status["ws_lagging_clients"]
    );
    // 30 posts of 3 MB went through; what stayed is bounded by the budgets, not by the posts.
    assert!(
        growth < 16 * MIB,
        "the heap grew by {} MiB over 30 posts of 3 MB with one stuck client",
        growth / MIB
    );
    assert!(
        after < 64 * MIB,
        "the heap holds {} MiB with --max-bytes 8 MiB",
        after / MIB
    );
    // And /api/status says the client is behind, and what the buffer holds.
    assert_eq!(status["ws_clients"], 1);
    assert_eq!(status["ws_lagging_clients"], 1, "{status}");
    assert!(status["ws_lagged"].as_u64() >= Some(1), "{status}");
    assert!(
        status["ws_dropped_batches"].as_u64() >= Some(25),
        "{status}"
    );
    let buffered = status["ws_buffer_bytes"].as_u64().unwrap() as usize;
    assert!(buffered <= max_bytes / 4 + 4 * MIB, "{buffered}");
    assert!(status["bytes"].as_u64().unwrap() as usize <= max_bytes);
    drop(stuck);
}
