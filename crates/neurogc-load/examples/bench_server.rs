//! A minimal keep-alive HTTP/1.1 server for the load-generator benchmark (bench/load/run.sh):
//! answers every request with 200 "ok", on one thread, so it can be pinned to one core.
//!
//! Usage: `bench_server [ADDR]` (default 127.0.0.1:18080).
use std::convert::Infallible;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18080".into());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        eprintln!("bench_server listening on http://{addr}");
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|_req| async {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(
                        b"ok\n",
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    })
}
