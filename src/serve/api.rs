//! The HTTP surface: routes, who may call them, and the OTG error bodies every refusal carries.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use linerate_otg as otg;

use super::App;
use super::capture::get_capture;
use super::config::{get_config, set_config};
use super::control::{get_version, set_control_state};
use super::metrics::get_metrics;

pub(super) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/config", post(set_config).get(get_config))
        .route("/control/state", post(set_control_state))
        .route("/monitor/metrics", post(get_metrics))
        .route("/monitor/capture", post(get_capture))
        .route("/capabilities/version", get(get_version))
        .fallback(|| async {
            otg_error(
                StatusCode::NOT_FOUND,
                "validation",
                vec!["no such OTG endpoint here (docs/otg.md lists what linerate serves)".into()],
            )
        })
        .method_not_allowed_fallback(|| async {
            otg_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "validation",
                vec![
                    "not served here: update_config, append_config and delete_config are not \
                     supported (set the whole config again with POST /config)"
                        .into(),
                ],
            )
        })
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), auth))
        .layer(DefaultBodyLimit::max(app.args.max_body))
        .with_state(app)
}

/// Every request carries the bearer token when the server was given one; compared in constant
/// time so the answer's timing tells nothing about the token.
pub(super) async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    use subtle::ConstantTimeEq;
    if let Some(token) = &app.args.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            return otg_error(
                StatusCode::UNAUTHORIZED,
                "validation",
                vec!["missing or wrong bearer token (Authorization: Bearer …)".into()],
            );
        }
    }
    next.run(req).await
}

pub(super) fn otg_error(status: StatusCode, kind: &str, errors: Vec<String>) -> Response {
    let body = otg::ErrorBody {
        code: i32::from(status.as_u16()),
        kind: kind.into(),
        errors,
    };
    (status, axum::Json(body)).into_response()
}

/// An answer that is not a success: a 4xx for what the client asked, a 5xx for the system.
#[derive(Debug)]
pub(super) struct Fail(pub(super) StatusCode, pub(super) Vec<String>);

impl Fail {
    pub(super) fn bad(why: impl Into<String>) -> Self {
        Fail(StatusCode::BAD_REQUEST, vec![why.into()])
    }
    pub(super) fn conflict(why: impl Into<String>) -> Self {
        Fail(StatusCode::CONFLICT, vec![why.into()])
    }
}

impl From<otg::Refusals> for Fail {
    fn from(r: otg::Refusals) -> Self {
        Fail(
            StatusCode::BAD_REQUEST,
            r.0.iter().map(ToString::to_string).collect(),
        )
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        let kind = if self.0.is_server_error() {
            "internal"
        } else {
            "validation"
        };
        otg_error(self.0, kind, self.1)
    }
}

pub(super) fn warnings() -> Response {
    axum::Json(otg::Warning::default()).into_response()
}
