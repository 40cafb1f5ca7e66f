//! `GET /ui`: the dashboard, one page embedded in the binary (a test bed has no internet). The
//! page holds no data: its script asks the OTG API of the server that served it, every call
//! with the token given in the page's address (`#token=…`, which the browser never sends), so
//! the page itself is the one thing served without the token.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The page, as shipped.
const PAGE: &str = include_str!("ui.html");

/// What the page may do: run its own script and styles, and call back to this server only.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                      connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
                      frame-ancestors 'none'";

pub(super) async fn get_ui() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        PAGE,
    )
        .into_response()
}
