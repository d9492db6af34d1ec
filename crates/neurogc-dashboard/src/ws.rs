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
//! `resumed: false`, and should drop what it had. A client too slow for the broadcast is not
//! disconnected: it skips ahead to the store, which still holds what it missed.

use crate::server::AppState;
use crate::store::{render_message, HistoryQuery, Store, Stored};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Samples per history message: keeps single messages small enough for any client.
const CHUNK: usize = 5_000;

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

/// Counts connected clients for `/api/status`, also when a task ends by error.
struct ClientGuard(Arc<Store>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0.ws_clients.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve_client(mut socket: WebSocket, app: AppState, q: WsQuery) -> Result<(), axum::Error> {
    let store = app.store.clone();
    store.ws_clients.fetch_add(1, Ordering::Relaxed);
    let _guard = ClientGuard(store.clone());
    let mut shutdown = app.shutdown.clone();

    let (mut rx, mut history) = store.subscribe();
    let resume_after = match (&q.resume, q.after) {
        (Some(instance), Some(after)) if instance == store.instance() => Some(after),
        _ => None,
    };
    if let Some(after) = resume_after {
        history.retain(|s| s.seq > after);
    }
    let snapshot_seq = history.last().map(|s| s.seq);
    let mut last_sent = snapshot_seq.or(resume_after).unwrap_or(0);
    let hello = serde_json::json!({
        "type": "hello",
        "instance": store.instance(),
        "resumed": resume_after.is_some(),
        "last_seq": last_sent,
        "window_s": store.config().window_s,
        "max_per_server": store.config().max_per_server,
        "replay": store.replay(),
    });
    socket.send(Message::Text(hello.to_string().into())).await?;
    send_chunks(&mut socket, "history", &history).await?;
    drop(history);

    loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                Ok(batch) => {
                    if batch.last_seq() <= last_sent {
                        continue;
                    }
                    let text = if batch.samples[0].seq > last_sent {
                        batch.message.to_string()
                    } else {
                        let fresh: Vec<_> =
                            batch.samples.iter().filter(|s| s.seq > last_sent).cloned().collect();
                        render_message("samples", &fresh, "")
                    };
                    socket.send(Message::Text(text.into())).await?;
                    last_sent = batch.last_seq();
                }
                Err(RecvError::Lagged(_)) => {
                    store.ws_lagged.fetch_add(1, Ordering::Relaxed);
                    last_sent = catch_up(&mut socket, &store, last_sent).await?;
                }
                Err(RecvError::Closed) => break,
            },
            incoming = socket.recv() => match incoming {
                // Pings are answered by the library; anything else from the client is ignored.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Ok(()),
                Some(Ok(_)) => {}
            },
            _ = shutdown.changed() => break,
        }
    }
    let bye = CloseFrame {
        code: axum::extract::ws::close_code::AWAY,
        reason: "dashboard shutting down".into(),
    };
    socket.send(Message::Close(Some(bye))).await
}

/// After a lag: sends what the store still holds after `last_sent`, says how many samples fell
/// out of the window meanwhile, and returns the new `last_sent`.
async fn catch_up(
    socket: &mut WebSocket,
    store: &Store,
    last_sent: u64,
) -> Result<u64, axum::Error> {
    let (missed, newest) = store.history_and_last_seq(&HistoryQuery {
        after_seq: Some(last_sent),
        ..HistoryQuery::default()
    });
    // Everything up to `newest` is either in `missed` or already evicted from the window.
    let lost = newest.saturating_sub(last_sent) - missed.len() as u64;
    if lost > 0 {
        let msg = format!("{{\"type\":\"lagged\",\"missed\":{lost}}}");
        socket.send(Message::Text(msg.into())).await?;
    }
    for chunk in missed.chunks(CHUNK) {
        let text = render_message("samples", chunk, "");
        socket.send(Message::Text(text.into())).await?;
    }
    Ok(newest.max(last_sent))
}

async fn send_chunks(
    socket: &mut WebSocket,
    kind: &str,
    samples: &[Arc<Stored>],
) -> Result<(), axum::Error> {
    let chunks: Vec<&[Arc<Stored>]> = if samples.is_empty() {
        vec![&[]]
    } else {
        samples.chunks(CHUNK).collect()
    };
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let extra = format!("\"done\":{},", i + 1 == n);
        let text = render_message(kind, chunk, &extra);
        socket.send(Message::Text(text.into())).await?;
    }
    Ok(())
}
