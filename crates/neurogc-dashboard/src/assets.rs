//! The page and its files, embedded at compile time: the binary serves them with no internet and
//! no files beside it. uPlot comes from `web/node_modules` (npm, pinned by the lock file).

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! web {
    ($file:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $file))
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: web!("src/index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: JS,
        body: web!("src/app.js"),
    },
    Asset {
        path: "/style.css",
        content_type: CSS,
        body: web!("src/style.css"),
    },
    Asset {
        path: "/favicon.svg",
        content_type: "image/svg+xml",
        body: web!("src/favicon.svg"),
    },
    Asset {
        path: "/vendor/uPlot.iife.min.js",
        content_type: JS,
        body: web!("node_modules/uplot/dist/uPlot.iife.min.js"),
    },
    Asset {
        path: "/vendor/uPlot.min.css",
        content_type: CSS,
        body: web!("node_modules/uplot/dist/uPlot.min.css"),
    },
];

/// Serves an embedded file by path (`/index.html` is `/`), or 404.
pub async fn handler(uri: Uri) -> Response {
    let path = match uri.path() {
        "/index.html" => "/",
        p => p,
    };
    match ASSETS.iter().find(|a| a.path == path) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                // Embedded files change only with the binary; revalidate so an upgrade shows.
                (header::CACHE_CONTROL, "no-cache"),
            ],
            a.body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, format!("no such page: {path}\n")).into_response(),
    }
}
