//! Test helpers: an in-process dashboard on a free port, a minimal HTTP/1.1 client (independent
//! of the server's stack), and a WebSocket client.
#![allow(dead_code)]

use futures_util::StreamExt;
use neurogc_dashboard::store::{Store, StoreConfig};
use neurogc_dashboard::{Config, Dashboard};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

pub struct TestServer {
    pub addr: SocketAddr,
    pub store: Arc<Store>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        drop(self.stop.take());
    }
}

pub async fn start(store: StoreConfig) -> TestServer {
    start_with(Config {
        port: 0,
        store,
        ..Config::default()
    })
    .await
}

pub async fn start_with(config: Config) -> TestServer {
    let dashboard = Dashboard::bind(&config).await.expect("bind");
    let (addr, store) = (dashboard.addr(), dashboard.store());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(dashboard.serve(async move {
        let _ = stopped.await;
    }));
    TestServer {
        addr,
        store,
        stop: Some(stop),
    }
}

pub struct Response {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `error` reason of a rejection.
    pub fn reason(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// One request on a fresh connection (`Connection: close`), bounded in time.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Response {
    let host = addr.to_string();
    let mut headers = vec![("Host", host.as_str())];
    headers.extend(content_type.map(|ct| ("Content-Type", ct)));
    request_with(addr, method, path, &headers, body).await
}

/// [`request`] with exactly these headers (besides `Connection` and `Content-Length`).
pub async fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    tokio::time::timeout(Duration::from_secs(20), async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write head");
        // A server may answer (413) and stop reading before the body ends: that is fine.
        let _ = stream.write_all(body).await;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (headers, body) = text.split_once("\r\n\r\n").expect("a response");
        let status = headers
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        Response {
            status,
            headers: headers.to_string(),
            body: body.to_string(),
        }
    })
    .await
    .expect("request timed out")
}

pub async fn post_json(addr: SocketAddr, body: &str) -> Response {
    request(
        addr,
        "POST",
        "/api/metrics",
        Some("application/json"),
        body.as_bytes(),
    )
    .await
}

pub async fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, None, b"").await
}

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

pub async fn ws_connect(addr: SocketAddr, query: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws{query}"))
        .await
        .expect("ws connect");
    ws
}

/// The next JSON text message, within 10 s.
pub async fn ws_next(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("ws message timed out")
            .expect("ws closed")
            .expect("ws error");
        if let Message::Text(t) = msg {
            return serde_json::from_str(&t).expect("ws JSON");
        }
    }
}

/// Reads the hello and all history chunks; returns (hello, history samples).
pub async fn ws_hello_and_history(ws: &mut Ws) -> (Value, Vec<Value>) {
    let hello = ws_next(ws).await;
    assert_eq!(hello["type"], "hello", "{hello}");
    let mut samples = Vec::new();
    loop {
        let m = ws_next(ws).await;
        assert_eq!(m["type"], "history", "{m}");
        samples.extend(m["samples"].as_array().unwrap().iter().cloned());
        if m["done"] == true {
            return (hello, samples);
        }
    }
}

/// The seed's published datasets, committed under `data/seed-neurogc/`.
pub fn seed_data(file: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/seed-neurogc"
    ))
    .join(file)
}

pub fn sample(server: &str, time: f64) -> String {
    format!(
        r#"{{"server":"{server}","time":{time},"cpu":12.5,"mem":3.0,"p99":4.5,"gc_triggered":"False"}}"#
    )
}
