//! `GET /ws`: history first, then every new batch, as JSON text messages.
//!
//! Protocol (server to client; the client sends nothing but control frames):
//! - `{"type":"hello","instance":…,"resumed":bool,"last_seq":…,"window_s":…,"max_per_server":…,
//!   "replay":null|{"source":…,"speed":…,"done":bool}}`
//! - `{"type":"history","done":bool,"samples":[…]}`, in chunks, the last with `done: true`
//! - `{"type":"samples","samples":[…]}` for each ingest, in `seq` order
//! - `{"type":"lagged","missed":N}` when samples fell out of the window before a slow client
//!   could be sent them
//!
//! A client that reconnects with `?resume=INSTANCE&after=SEQ` (the instance from its last hello)
//! gets only the samples after `SEQ`; with any other instance it gets the whole history and
//! `resumed: false`, and should drop what it had.
//!
//! A client too slow for the fan-out buffer (bounded in bytes, see [`crate::store`]) is not
//! disconnected: it skips ahead to the store, which still holds what it missed, in chunks. Each
//! client holds at most the one message it is sending; one that takes none for 60 s (it is not
//! reading) is disconnected. Ingest never waits for a client.

use crate::server::AppState;
use crate::store::{render_message, Cursor, Next, Store};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Samples per history or catch-up message: keeps single messages small enough for any client.
const CHUNK: usize = 5_000;
/// Bytes of samples per history or catch-up message, about: what a slow client holds at most.
const CHUNK_BYTES: usize = 1 << 20;
/// A client that takes longer than this to take one message is disconnected: its TCP window has
/// been shut for that long, so it is not reading (a page that reconnects resumes where it was).
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Default, Deserialize)]
pub struct WsQuery {
    resume: Option<String>,
    after: Option<u64>,
}

pub async fn handler(
    ws: WebSocketUpgrade,
    Query(q): Query<WsQuery>,
    State(app): State<AppState>,
) -> Response {
    ws.on_upgrade(move |socket| async move {
        let _ = serve_client(socket, app, q).await;
    })
}

/// Registers a client for `/api/status` and the fan-out buffer's lag accounting, and unregisters
/// it also when its task ends by error.
struct ClientGuard(Arc<Store>, Arc<Cursor>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0.unregister(&self.1);
        self.0.ws_clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a client's task ended early.
enum Stop {
    /// The connection failed or the client went away.
    Gone,
    /// One message took longer than [`SEND_TIMEOUT`].
    TooSlow,
}

/// Sends one message, waiting at most [`SEND_TIMEOUT`] for the client to take it.
async fn send(socket: &mut WebSocket, text: Utf8Bytes) -> Result<(), Stop> {
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(text))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(Stop::Gone),
        Err(_) => Err(Stop::TooSlow),
    }
}

async fn serve_client(socket: WebSocket, app: AppState, q: WsQuery) -> Result<(), axum::Error> {
    let store = app.store.clone();
    store.ws_clients.fetch_add(1, Ordering::Relaxed);
    let (cursor, newest) = store.register();
    let _guard = ClientGuard(store.clone(), cursor.clone());
    let mut socket = socket;
    match stream(&mut socket, &app, &store, &cursor, newest, q).await {
        Ok(()) => {
            let bye = CloseFrame {
                code: axum::extract::ws::close_code::AWAY,
                reason: "dashboard shutting down".into(),
            };
            socket.send(Message::Close(Some(bye))).await
        }
        Err(Stop::Gone) => Ok(()),
        Err(Stop::TooSlow) => {
            store.ws_disconnected_slow.fetch_add(1, Ordering::Relaxed);
            // Its TCP window is shut: a close frame would not get through either.
            Ok(())
        }
    }
}

/// Hello, history, then live batches until shutdown (`Ok`) or the client leaves (`Err`).
async fn stream(
    socket: &mut WebSocket,
    app: &AppState,
    store: &Store,
    cursor: &Cursor,
    mut newest: tokio::sync::watch::Receiver<u64>,
    q: WsQuery,
) -> Result<(), Stop> {
    let mut shutdown = app.shutdown.clone();
    // The history is everything stored up to the newest `seq` at registration; live batches
    // follow it, so a client sees every sample once.
    let end = cursor.taken();
    let resume_after = match (&q.resume, q.after) {
        (Some(instance), Some(after)) if instance == store.instance() => Some(after),
        _ => None,
    };
    let start = resume_after.unwrap_or(0);
    let end = end.max(start);
    let hello = serde_json::json!({
        "type": "hello",
        "instance": store.instance(),
        "resumed": resume_after.is_some(),
        "last_seq": end,
        "window_s": store.config().window_s,
        "max_per_server": store.config().max_per_server,
        "replay": store.replay(),
    });
    send(socket, hello.to_string().into()).await?;
    // Page the history out of the store, so a client that does not read holds one chunk, not
    // a copy of the window. (Samples that leave the window meanwhile are not history any more.)
    let mut at = start;
    loop {
        let page = store.page(at, end, CHUNK, CHUNK_BYTES);
        let done = page.end >= end;
        let extra = format!("\"done\":{done},");
        send(
            socket,
            render_message("history", &page.samples, &extra).into(),
        )
        .await?;
        at = page.end;
        if done {
            break;
        }
    }
    cursor.set_taken(end);

    loop {
        // Marks the newest `seq` seen before looking, so an ingest after the look wakes us.
        newest.borrow_and_update();
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            match store.next_after(cursor) {
                Next::Idle => break,
                Next::Batch(batch) => send(socket, batch.message.clone()).await?,
                Next::Behind => catch_up(socket, store, cursor).await?,
            }
        }
        tokio::select! {
            changed = newest.changed() => if changed.is_err() { return Ok(()) },
            incoming = socket.recv() => match incoming {
                // Pings are answered by the library; anything else from the client is ignored.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Err(Stop::Gone),
                Some(Ok(_)) => {}
            },
            _ = shutdown.changed() => return Ok(()),
        }
    }
}

/// A client behind the fan-out buffer: sends one chunk of what the store still holds after its
/// cursor (said first, if samples fell out of the window meanwhile) and moves the cursor past it.
async fn catch_up(socket: &mut WebSocket, store: &Store, cursor: &Cursor) -> Result<(), Stop> {
    let page = store.page(cursor.taken(), u64::MAX, CHUNK, CHUNK_BYTES);
    cursor.set_taken(page.end);
    if page.lost > 0 {
        store.ws_missed.fetch_add(page.lost, Ordering::Relaxed);
        let msg = format!("{{\"type\":\"lagged\",\"missed\":{}}}", page.lost);
        send(socket, msg.into()).await?;
    }
    if !page.samples.is_empty() {
        send(socket, render_message("samples", &page.samples, "").into()).await?;
    }
    Ok(())
}
