//! The page, its embedded assets, and binding.

use crate::common;

use crate::common::{get, start, start_with};
use neurogc_dashboard::store::StoreConfig;
use neurogc_dashboard::Config;

#[tokio::test]
async fn page_and_assets_are_embedded_and_offline() {
    let srv = start(StoreConfig::default()).await;
    let page = get(srv.addr, "/").await;
    assert_eq!(page.status, 200);
    assert!(page.headers.contains("text/html"));
    for asset in [
        "/app.js",
        "/style.css",
        "/vendor/uPlot.iife.min.js",
        "/vendor/uPlot.min.css",
        "/favicon.svg",
    ] {
        assert!(page.body.contains(asset), "the page links {asset}");
        let r = get(srv.addr, asset).await;
        assert_eq!(r.status, 200, "{asset}");
        assert!(r.body.len() > 100, "{asset} has content");
    }
    assert!(get(srv.addr, "/vendor/uPlot.iife.min.js")
        .await
        .body
        .contains("uPlot"));
    // No CDN: nothing the page loads points off the machine.
    for asset in ["/", "/app.js", "/style.css"] {
        let body = get(srv.addr, asset).await.body;
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{asset} loads nothing remote"
        );
    }
    assert_eq!(get(srv.addr, "/nope").await.status, 404);
}

#[tokio::test]
async fn binds_loopback_by_default_and_names_a_taken_port() {
    assert!(Config::default().bind.is_loopback());
    assert_eq!(Config::default().port, 8003);
    let srv = start(StoreConfig::default()).await;
    assert!(srv.addr.ip().is_loopback());
    let taken = Config {
        port: srv.addr.port(),
        ..Config::default()
    };
    let err = neurogc_dashboard::Dashboard::bind(&taken)
        .await
        .err()
        .expect("port is taken");
    let msg = format!("{err:#}");
    assert!(msg.contains(&format!("port {}", srv.addr.port())), "{msg}");
    assert!(msg.contains("in use"), "{msg}");
    drop(
        start_with(Config {
            port: 0,
            ..Config::default()
        })
        .await,
    );
}

/// What `collect --dashboard` / `bench --dashboard` use: a dashboard on its own thread.
#[test]
fn background_dashboard_serves_until_dropped() {
    let bg = neurogc_dashboard::Background::start(Config {
        port: 0,
        ..Config::default()
    })
    .unwrap();
    let addr = bg.addr();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(common::post_json(addr, &common::sample("a", 1.0)));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(bg.store().status().ingested, 1);
    drop(bg);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "stopped listening"
    );
}
