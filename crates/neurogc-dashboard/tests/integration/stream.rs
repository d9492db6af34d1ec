//! `GET /ws`: history first, then live batches; resume after a reconnect; slow clients.

use crate::common::{post_json, sample, start, ws_connect, ws_hello_and_history, ws_next};
use futures_util::SinkExt;
use neurogc_dashboard::ingest::Incoming;
use neurogc_dashboard::store::StoreConfig;
use serde_json::{json, Map};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

fn seqs(msg: &serde_json::Value) -> Vec<u64> {
    msg["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn history_then_live_then_resume() {
    let srv = start(StoreConfig::default()).await;
    post_json(
        srv.addr,
        &format!("[{},{}]", sample("a", 1.0), sample("b", 1.0)),
    )
    .await;

    let mut ws = ws_connect(srv.addr, "").await;
    let (hello, history) = ws_hello_and_history(&mut ws).await;
    assert_eq!(hello["resumed"], false);
    assert_eq!(hello["last_seq"], 2);
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["server"], "b");

    post_json(srv.addr, &sample("a", 2.0)).await;
    let live = ws_next(&mut ws).await;
    assert_eq!(live["type"], "samples");
    assert_eq!(seqs(&live), vec![3]);
    assert_eq!(live["samples"][0]["cpu"], json!(12.5));
    ws.close(None).await.unwrap();

    // Reconnect with the instance from hello: only what came after seq 3.
    post_json(srv.addr, &sample("b", 2.0)).await;
    let instance = hello["instance"].as_str().unwrap();
    let mut ws = ws_connect(srv.addr, &format!("?resume={instance}&after=3")).await;
    let (hello2, history2) = ws_hello_and_history(&mut ws).await;
    assert_eq!(hello2["resumed"], true);
    assert_eq!(
        history2
            .iter()
            .map(|s| s["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![4]
    );

    // An unknown instance (a restarted dashboard) gets everything.
    let mut ws = ws_connect(srv.addr, "?resume=other&after=3").await;
    let (hello3, history3) = ws_hello_and_history(&mut ws).await;
    assert_eq!(hello3["resumed"], false);
    assert_eq!(history3.len(), 4);
}

#[tokio::test]
async fn many_clients_each_get_every_sample() {
    let srv = start(StoreConfig::default()).await;
    let mut clients = Vec::new();
    for _ in 0..5 {
        let mut ws = ws_connect(srv.addr, "").await;
        ws_hello_and_history(&mut ws).await;
        clients.push(ws);
    }
    for t in 0..20 {
        post_json(srv.addr, &sample(&format!("s{}", t % 4), f64::from(t))).await;
    }
    for ws in &mut clients {
        let mut got = Vec::new();
        while got.len() < 20 {
            got.extend(seqs(&ws_next(ws).await));
        }
        assert_eq!(got, (1..=20).collect::<Vec<u64>>());
    }
}

/// `n` batches of one sample each (server "a", `cpu` = its time), without yielding to the
/// clients' tasks.
fn ingest_one_by_one(store: &neurogc_dashboard::store::Store, n: u32) {
    for t in 0..n {
        let mut fields = Map::new();
        fields.insert("cpu".into(), json!(t));
        store
            .ingest(vec![Incoming {
                server: "a".into(),
                time: f64::from(t),
                fields,
            }])
            .unwrap();
    }
}

/// A client slower than the fan-out buffer is not dropped: it is caught up from the store.
#[tokio::test]
async fn lagging_client_skips_ahead_without_losing_samples() {
    let srv = start(StoreConfig {
        broadcast_capacity: 4,
        ..StoreConfig::default()
    })
    .await;
    let mut ws = ws_connect(srv.addr, "").await;
    ws_hello_and_history(&mut ws).await;
    // Ingest 200 batches without yielding: the client's task cannot run meanwhile, so the
    // fan-out buffer (4 batches) drops batches it has not taken.
    ingest_one_by_one(&srv.store, 200);
    let mut got = Vec::new();
    while got.len() < 200 {
        let m = ws_next(&mut ws).await;
        assert_eq!(
            m["type"], "samples",
            "nothing fell out of the window, so no `lagged`: {m}"
        );
        got.extend(seqs(&m));
    }
    assert_eq!(got, (1..=200).collect::<Vec<u64>>());
    assert!(srv.store.status().ws_lagged >= 1, "the client did lag");
    // And it keeps streaming afterwards.
    post_json(srv.addr, &sample("a", 999.0)).await;
    assert_eq!(seqs(&ws_next(&mut ws).await), vec![201]);
}

#[tokio::test]
async fn client_messages_and_pings_are_harmless() {
    let srv = start(StoreConfig::default()).await;
    let mut ws = ws_connect(srv.addr, "").await;
    ws_hello_and_history(&mut ws).await;
    ws.send(Message::Text("hello?".into())).await.unwrap();
    ws.send(Message::Ping(vec![1, 2].into())).await.unwrap();
    post_json(srv.addr, &sample("a", 1.0)).await;
    let m = ws_next(&mut ws).await;
    assert_eq!(seqs(&m), vec![1]);
    assert_eq!(srv.store.status().ws_clients, 1);
    drop(ws);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while srv.store.status().ws_clients != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a dropped client is noticed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue 14: a client behind a small fan-out buffer, whose samples also left the store, is told
/// how many it missed; `/api/status` counts the lag and the missed samples, and the client keeps
/// streaming afterwards.
#[tokio::test]
async fn a_lagging_client_is_told_what_it_missed() {
    let srv = start(StoreConfig {
        max_per_server: 50,
        broadcast_capacity: 4,
        ..StoreConfig::default()
    })
    .await;
    let mut ws = ws_connect(srv.addr, "").await;
    ws_hello_and_history(&mut ws).await;
    // 200 batches without yielding: the buffer keeps 4, the store 50.
    ingest_one_by_one(&srv.store, 200);
    let mut got = Vec::new();
    let mut missed = 0;
    while got.len() as u64 + missed < 200 {
        let m = ws_next(&mut ws).await;
        match m["type"].as_str() {
            Some("lagged") => missed += m["missed"].as_u64().unwrap(),
            Some("samples") => got.extend(seqs(&m)),
            _ => panic!("{m}"),
        }
    }
    assert_eq!(missed, 150);
    assert_eq!(got, (151..=200).collect::<Vec<u64>>());
    let status = srv.store.status();
    assert_eq!((status.ws_lagged, status.ws_missed), (1, 150));
    assert_eq!(status.ws_lagging_clients, 0, "caught up");
    post_json(srv.addr, &sample("a", 999.0)).await;
    assert_eq!(seqs(&ws_next(&mut ws).await), vec![201]);
}

/// A client that never reads does not hold up ingest or the other clients, and `/api/status`
/// says it is behind.
#[tokio::test]
async fn a_client_that_never_reads_holds_up_nobody() {
    let srv = start(StoreConfig {
        max_bytes: 2 << 20,
        ..StoreConfig::default()
    })
    .await;
    let stuck = ws_connect(srv.addr, "").await;
    let mut ws = ws_connect(srv.addr, "").await;
    ws_hello_and_history(&mut ws).await;
    let batch: Vec<String> = (0..5000).map(|t| sample("a", f64::from(t))).collect();
    let body = format!("[{}]", batch.join(","));
    let mut got = 0;
    for i in 1..=40 {
        let r = tokio::time::timeout(Duration::from_secs(10), post_json(srv.addr, &body))
            .await
            .expect("ingest never waits for a client");
        assert_eq!(r.status, 200);
        while got < i * 5000 {
            let m = ws_next(&mut ws).await;
            assert_eq!(m["type"], "samples", "the reading client keeps up");
            got += m["samples"].as_array().unwrap().len();
        }
    }
    let status = srv.store.status();
    assert_eq!(status.ws_clients, 2);
    assert_eq!(status.ws_lagging_clients, 1, "{status:?}");
    assert!(status.ws_lagged >= 1);
    // A quarter of --max-bytes, or the newest batch alone (about 600 kB) when that is more.
    assert!(
        status.ws_buffer_bytes <= status.ws_buffer_max_bytes.max(2 * body.len()),
        "{status:?}"
    );
    drop(stuck);
}
