//! The stylesheet and the live-update script, served from the binary under URLs that carry
//! a content hash, so browsers may cache them forever.

use std::sync::LazyLock;

use axum::extract::Query;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

/// A file compiled into the binary.
pub(super) struct Asset {
    path: &'static str,
    body: &'static str,
    content_type: &'static str,
    version: LazyLock<String>,
}

/// A short FNV-1a hash of the content, so the URL changes when the file does.
fn version_of(body: &str) -> String {
    let hash = body.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{:012x}", hash & 0xffff_ffff_ffff)
}

pub(super) static STYLESHEET: Asset = Asset {
    path: "/style/lookout.css",
    body: include_str!("../../../style/lookout.css"),
    content_type: "text/css; charset=utf-8",
    version: LazyLock::new(|| version_of(STYLESHEET.body)),
};

pub(super) static LIVE_SCRIPT: Asset = Asset {
    path: "/assets/live.js",
    body: include_str!("../../assets/live.js"),
    content_type: "text/javascript; charset=utf-8",
    version: LazyLock::new(|| version_of(LIVE_SCRIPT.body)),
};

/// The icon browsers show in the tab (served at `/favicon.ico` too, as SVG).
pub(super) static FAVICON: Asset = Asset {
    path: "/favicon.svg",
    body: include_str!("../../assets/favicon.svg"),
    content_type: "image/svg+xml",
    version: LazyLock::new(|| version_of(FAVICON.body)),
};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VersionQuery {
    v: Option<String>,
}

impl Asset {
    /// The URL with its version.
    pub(super) fn href(&self) -> String {
        format!("{}?v={}", self.path, *self.version)
    }

    /// The route this asset is served on.
    pub(super) fn path(&self) -> &'static str {
        self.path
    }

    /// The response: forever-cacheable under its versioned URL, revalidated otherwise.
    pub(super) fn respond(&self, Query(q): Query<VersionQuery>) -> Response {
        let cache = if q.v.as_deref() == Some(self.version.as_str()) {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(self.content_type),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
                (
                    header::ETAG,
                    HeaderValue::from_str(&format!("\"{}\"", *self.version))
                        .expect("hex is a valid header"),
                ),
            ],
            self.body,
        )
            .into_response()
    }
}
