//! The page and its files, embedded at compile time: the binary serves them with no internet and
//! no files beside it. uPlot comes from `web/node_modules` (npm, pinned by the lock file).

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

macro_rules! web {
    ($file:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $file))
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// (path, content type, body).
const ASSETS: &[(&str, &str, &[u8])] = &[
    ("/", HTML, web!("src/index.html")),
    ("/app.js", JS, web!("src/app.js")),
    ("/style.css", CSS, web!("src/style.css")),
    ("/favicon.svg", SVG, web!("src/favicon.svg")),
    (
        "/vendor/uPlot.iife.min.js",
        JS,
        web!("node_modules/uplot/dist/uPlot.iife.min.js"),
    ),
    (
        "/vendor/uPlot.min.css",
        CSS,
        web!("node_modules/uplot/dist/uPlot.min.css"),
    ),
];

/// Serves an embedded file by path (`/index.html` is `/`), or 404.
pub async fn handler(uri: Uri) -> Response {
    let path = match uri.path() {
        "/index.html" => "/",
        p => p,
    };
    match ASSETS.iter().find(|(p, _, _)| *p == path) {
        Some((_, content_type, body)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                // Embedded files change only with the binary; revalidate so an upgrade shows.
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, format!("no such page: {path}\n")).into_response(),
    }
}
