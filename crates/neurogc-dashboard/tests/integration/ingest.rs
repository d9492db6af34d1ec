//! `POST /api/metrics` and `GET /api/history` over real HTTP.

use crate::common::{get, post_json, request, sample, start};
use neurogc_dashboard::store::StoreConfig;
use serde_json::json;

#[tokio::test]
async fn single_batch_and_wrapped_batch_are_stored_in_order() {
    let srv = start(StoreConfig::default()).await;
    let r = post_json(srv.addr, &sample("with_gc", 100.0)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"accepted": 1, "first_seq": 1}));

    let batch = format!(
        "[{},{}]",
        sample("with_gc", 101.0),
        sample("without_gc", 101.0)
    );
    assert_eq!(post_json(srv.addr, &batch).await.json()["accepted"], 2);
    let wrapped = format!(r#"{{"samples":[{}]}}"#, sample("without_gc", 102.0));
    assert_eq!(post_json(srv.addr, &wrapped).await.json()["first_seq"], 4);

    let h = get(srv.addr, "/api/history").await;
    assert_eq!(h.status, 200);
    assert!(h
        .headers
        .to_ascii_lowercase()
        .contains("content-type: application/json"));
    let h = h.json();
    assert_eq!(h["last_seq"], 4);
    let samples = h["samples"].as_array().unwrap();
    let seqs: Vec<_> = samples.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
    // The seed's "False" is stored as a boolean; ingest time is stamped.
    assert_eq!(samples[0]["gc_triggered"], json!(false));
    assert!(samples[0]["ingest_ms"].as_f64().unwrap() > 1.6e12);

    let only = get(srv.addr, "/api/history?server=without_gc&since=101.5")
        .await
        .json();
    let times: Vec<_> = only["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["time"].clone())
        .collect();
    assert_eq!(times, vec![json!(102.0)]);
    let after = get(srv.addr, "/api/history?after_seq=3").await.json();
    assert_eq!(after["samples"].as_array().unwrap().len(), 1);
    assert_eq!(get(srv.addr, "/api/history?since=abc").await.status, 400);
}

#[tokio::test]
async fn full_agent_sample_with_nulls_and_extras() {
    let srv = start(StoreConfig::default()).await;
    let body = json!({
        "server": "default", "time": 1795318060.89, "cpu": 3.99, "mem": 0.19, "disk_read": null,
        "disk_write": 1052312.4, "net_sent": 1341.5, "net_recv": 1446.5, "rps": 15.0,
        "p95": 4.4, "p99": 4.4, "gc_triggered": true, "interval_s": 1.0, "pid": 18940,
        "rss_bytes": 50462720, "gc0_collections": 22, "gc0_pause_ms_max": 0.19,
        "gc2_collections": 0, "gc_enabled": "True", "policy": "default", "policy_action": "",
        "queue_depth": 7, "hostname": "box"
    });
    let r = post_json(srv.addr, &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = &get(srv.addr, "/api/history").await.json()["samples"][0];
    assert_eq!(s["disk_read"], json!(null));
    assert_eq!(s["gc_enabled"], json!(true));
    assert_eq!(
        s["queue_depth"],
        json!(7),
        "unknown numeric fields are kept"
    );
    assert!(
        s.get("hostname").is_none(),
        "unknown text fields are dropped"
    );
    assert_eq!(s["policy"], json!("default"));
}

#[tokio::test]
async fn bad_ingest_gets_a_4xx_with_a_reason_and_loses_nothing_else() {
    let srv = start(StoreConfig::default()).await;
    assert_eq!(post_json(srv.addr, &sample("a", 1.0)).await.status, 200);

    let malformed = post_json(srv.addr, r#"{"server": "a", "time": 1,"#).await;
    assert_eq!(malformed.status, 400);
    assert!(
        malformed.reason().starts_with("malformed JSON"),
        "{}",
        malformed.reason()
    );

    let wrong_type = post_json(srv.addr, r#"{"server":"a","time":2,"cpu":"high"}"#).await;
    assert_eq!(wrong_type.status, 422);
    assert!(
        wrong_type.reason().contains("`cpu`"),
        "{}",
        wrong_type.reason()
    );

    let missing_server = post_json(srv.addr, r#"{"time":2,"cpu":1}"#).await;
    assert_eq!(missing_server.status, 422);
    assert!(
        missing_server.reason().contains("`server`"),
        "{}",
        missing_server.reason()
    );

    let missing_time = post_json(srv.addr, r#"{"server":"a","cpu":1}"#).await;
    assert_eq!(missing_time.status, 422);
    assert!(missing_time.reason().contains("`time`"));

    // One bad sample rejects the whole batch, naming its index.
    let batch = format!(
        r#"[{},{},{{"server":"b","time":3,"p99":[1]}}]"#,
        sample("a", 2.0),
        sample("a", 3.0)
    );
    let r = post_json(srv.addr, &batch).await;
    assert_eq!(r.status, 422);
    assert!(
        r.reason().starts_with("sample 2: field `p99`"),
        "{}",
        r.reason()
    );

    let not_sample = post_json(srv.addr, "\"hello\"").await;
    assert_eq!(not_sample.status, 422);

    let form = request(
        srv.addr,
        "POST",
        "/api/metrics",
        Some("text/plain"),
        sample("a", 4.0).as_bytes(),
    )
    .await;
    assert_eq!(form.status, 415);
    assert!(form.reason().contains("application/json"));

    // 4 MiB is the default limit; a 5 MiB batch of valid samples is refused.
    let one = sample("a", 5.0);
    let n = (5 << 20) / one.len();
    let huge = format!("[{}]", vec![one.as_str(); n].join(","));
    let r = post_json(srv.addr, &huge).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.reason().contains("too large"));

    let wrong_method = get(srv.addr, "/api/metrics").await;
    assert_eq!(wrong_method.status, 405);

    // The server is still up, and only the good samples are stored.
    assert_eq!(post_json(srv.addr, &sample("a", 6.0)).await.status, 200);
    let status = get(srv.addr, "/api/status").await.json();
    assert_eq!(status["ingested"], 2);
    assert_eq!(status["rejected_requests"], 8);
    let times: Vec<_> = get(srv.addr, "/api/history").await.json()["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["time"].as_f64().unwrap())
        .collect();
    assert_eq!(times, vec![1.0, 6.0]);
}

#[tokio::test]
async fn history_window_is_bounded_per_server() {
    let srv = start(StoreConfig {
        window_s: 10.0,
        max_per_server: 1000,
        ..StoreConfig::default()
    })
    .await;
    let batch: Vec<String> = (0..30)
        .flat_map(|t| [sample("a", f64::from(t)), sample("b", f64::from(t) / 2.0)])
        .collect();
    assert_eq!(
        post_json(srv.addr, &format!("[{}]", batch.join(",")))
            .await
            .status,
        200
    );
    let status = get(srv.addr, "/api/status").await.json();
    let kept: Vec<_> = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].clone(), s["kept"].clone(), s["received"].clone()))
        .collect();
    // a: times 19..=29 (newest 29, window 10 s); b: 4.5..=14.5 in steps of 0.5.
    assert_eq!(
        kept,
        vec![
            (json!("a"), json!(11), json!(30)),
            (json!("b"), json!(21), json!(30))
        ]
    );
}

/// Issue 14: past `--max-servers`, a new server evicts the least recently updated one instead of
/// getting 507 until a restart; the reply and `/api/status` say so.
#[tokio::test]
async fn new_servers_past_the_limit_evict_the_least_recently_updated() {
    let srv = start(StoreConfig {
        max_servers: 4,
        ..StoreConfig::default()
    })
    .await;
    for i in 0..40 {
        let r = post_json(srv.addr, &sample(&format!("run{i}"), f64::from(i))).await;
        assert_eq!(r.status, 200, "server {i}: {}", r.body);
        let warnings = &r.json()["warnings"];
        if i < 4 {
            assert!(warnings.is_null(), "{}", r.body);
        } else {
            let evicted = format!("server \"run{}\"", i - 4);
            assert!(
                warnings[0].as_str().unwrap().contains(&evicted),
                "{}",
                r.body
            );
        }
    }
    let status = get(srv.addr, "/api/status").await.json();
    let names: Vec<_> = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["run36", "run37", "run38", "run39"]);
    assert_eq!(status["evicted_servers"], 36);
    assert_eq!(status["dropped_with_servers"], 36);
    assert_eq!(status["ingested"], 40);
    // Only a batch naming more servers than the table holds is refused: nothing could make room.
    let five: Vec<String> = (0..5).map(|i| sample(&format!("x{i}"), 1.0)).collect();
    let r = post_json(srv.addr, &format!("[{}]", five.join(","))).await;
    assert_eq!(r.status, 507, "{}", r.body);
    assert!(r.reason().contains("5 servers in one batch"), "{}", r.body);
}

/// Issue 14: text cut to 1024 characters is said, in the reply and in `/api/status`.
#[tokio::test]
async fn text_cut_short_is_reported() {
    let srv = start(StoreConfig::default()).await;
    let long = "why ".repeat(300);
    let body = json!([
        {"server": "a", "time": 1, "policy": "default"},
        {"server": "a", "time": 2, "policy": "default", "policy_reason": long},
    ]);
    let r = post_json(srv.addr, &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["warnings"],
        json!(["sample 1: field `policy_reason`: 1200 characters, cut to the first 1024"])
    );
    let status = get(srv.addr, "/api/status").await.json();
    assert_eq!(status["truncated_fields"], 1);
    let h = get(srv.addr, "/api/history").await.json();
    assert_eq!(
        h["samples"][1]["policy_reason"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        1024
    );
    // A reply with nothing to say has no `warnings`.
    let r = post_json(srv.addr, &sample("a", 3.0)).await;
    assert_eq!(r.json(), json!({"accepted": 1, "first_seq": 3}));
}
