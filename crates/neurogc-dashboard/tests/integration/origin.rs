//! What a web page in the user's browser must not be able to do to a dashboard on their machine:
//! post to it, open its WebSocket, or read it under a hostile name (DNS rebinding).

use crate::common::{post_json, request, request_with, sample, start, ws_connect};
use neurogc_dashboard::store::StoreConfig;

#[tokio::test]
async fn answers_only_under_an_address_and_only_its_own_origin() {
    let srv = start(StoreConfig::default()).await;
    let port = srv.addr.port();
    let status = |host: String| async move {
        request_with(srv.addr, "GET", "/api/status", &[("Host", &host)], b"").await
    };
    for host in [
        srv.addr.to_string(),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".to_string(),
    ] {
        assert_eq!(status(host.clone()).await.status, 200, "{host}");
    }
    // A name that resolves to 127.0.0.1 for the attacker's page.
    let rebound = status(format!("evil.example:{port}")).await;
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert!(
        rebound.reason().contains("evil.example"),
        "{}",
        rebound.body
    );

    let body = sample("a", 1.0);
    let host = srv.addr.to_string();
    let post = |origin: String| {
        let (host, body) = (host.clone(), body.clone());
        async move {
            let headers = [
                ("Host", host.as_str()),
                ("Content-Type", "application/json"),
                ("Origin", origin.as_str()),
            ];
            request_with(srv.addr, "POST", "/api/metrics", &headers, body.as_bytes()).await
        }
    };
    let cross = post("http://evil.example".into()).await;
    assert_eq!(cross.status, 403, "{}", cross.body);
    assert!(cross.reason().contains("evil.example"), "{}", cross.body);
    assert_eq!(post("null".into()).await.status, 403);
    // The dashboard's own page may post (and the agent, which sends no Origin).
    assert_eq!(post(format!("http://{host}")).await.status, 200);
    assert_eq!(post_json(srv.addr, &sample("a", 2.0)).await.status, 200);

    // No Content-Type: not taken (a form post could send that without a preflight).
    let bare = request(srv.addr, "POST", "/api/metrics", None, body.as_bytes()).await;
    assert_eq!(bare.status, 415, "{}", bare.body);
    assert!(bare.reason().contains("none"), "{}", bare.body);

    // A WebSocket from another site is refused before the upgrade; its own page's is not.
    let upgrade = |origin: &'static str| {
        let host = host.clone();
        async move {
            let headers = [
                ("Host", host.as_str()),
                ("Upgrade", "websocket"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Origin", origin),
            ];
            request_with(srv.addr, "GET", "/ws", &headers, b"").await
        }
    };
    assert_eq!(upgrade("http://evil.example").await.status, 403);
    let _ws = ws_connect(srv.addr, "").await;
}
