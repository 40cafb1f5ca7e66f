//! The HTTP surface: routes, who may call them, and the OTG error bodies every refusal carries.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

use super::capture::get_capture;
use super::config::{get_config, set_config};
use super::control::{get_version, set_control_state, update_config};
use super::hosts::get_states;
use super::metrics::{get_metrics, get_prometheus};
use super::ui::get_ui;
use axum::response::IntoResponse;

use super::state::{App, BODY_WAIT, Fail};

pub(super) fn router(app: Arc<App>) -> Router {
    let router = Router::new()
        .route(
            "/config",
            post(set_config).get(get_config).patch(update_config),
        )
        .route("/control/state", post(set_control_state))
        .route("/monitor/metrics", post(get_metrics))
        .route("/monitor/capture", post(get_capture))
        .route("/monitor/states", post(get_states))
        .route("/capabilities/version", get(get_version))
        .route("/metrics", get(get_prometheus))
        .route("/ui", get(get_ui));
    let router = router.route(
        "/linerate/controller/v1/agents",
        get(|State(app): State<Arc<App>>| async move {
            let counting = Arc::clone(&app.lock().counting);
            match counting.counts.agents() {
                Some(a) => axum::Json(serde_json::to_value(a.describe()).unwrap_or_default()),
                None => axum::Json(serde_json::json!({"agents": []})),
            }
        }),
    );
    let router = if app.agent.is_some() {
        super::agent::routes(router)
    } else {
        router
    };
    router
        .fallback(|| async {
            Fail(
                StatusCode::NOT_FOUND,
                vec!["no such OTG endpoint here (docs/otg.md lists what linerate serves)".into()],
            )
        })
        .method_not_allowed_fallback(|| async {
            Fail(
                StatusCode::METHOD_NOT_ALLOWED,
                vec![
                    "not served here: append_config and delete_config are not supported (set \
                     the whole config again with POST /config)"
                        .into(),
                ],
            )
        })
        // Outermost runs first: who may ask is settled before a byte of the body is read.
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            read_body,
        ))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), auth))
        .layer(DefaultBodyLimit::max(app.args.max_body))
        .with_state(app)
}

/// What a connection from another local user meets on a loopback listen without a token:
/// every request refused, its body never read.
pub(super) fn forbidden(owner: u32) -> Router {
    Router::new().fallback(move || async move {
        Fail(
            StatusCode::FORBIDDEN,
            vec![format!(
                "this linerate serve is driven only by the user who started it (uid {owner}) \
                 and root: ask them, or have it started with --token T and send \
                 'Authorization: Bearer T'"
            )],
        )
    })
}

/// Reads the whole body, within [`BODY_WAIT`] and `--max-body`, before any handler runs: a
/// client that stalls mid-body loses its request (408), not a task and the bytes it sent so far
/// for as long as it likes; one over the limit gets the OTG error body of a 413.
async fn read_body(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(BODY_WAIT, axum::body::to_bytes(body, app.args.max_body));
    match read.await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, bytes.into())).await,
        Ok(Err(e)) if is_transport(&e) => {
            Fail::bad(format!("the body could not be read: {e}")).into_response()
        }
        Ok(Err(_)) => Fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            vec![format!(
                "body: over the {} bytes this server takes (--max-body)",
                app.args.max_body
            )],
        )
        .into_response(),
        Err(_) => Fail(
            StatusCode::REQUEST_TIMEOUT,
            vec![format!(
                "body: not all of it arrived within {} s",
                BODY_WAIT.as_secs()
            )],
        )
        .into_response(),
    }
}

/// Whether reading a body failed in HTTP itself (a broken chunk, a closed connection) rather
/// than on the length limit.
fn is_transport(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<hyper::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Every request carries the bearer token when the server was given one; compared in constant
/// time so the answer's timing tells nothing about the token.
pub(super) async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    use subtle::ConstantTimeEq;
    // The dashboard's page holds no data (its calls carry the token): served to anyone, it
    // lets no connection in.
    if req.method() == axum::http::Method::GET && req.uri().path() == "/ui" {
        return next.run(req).await;
    }
    if let Some(token) = &app.args.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            // The scheme's name is case-insensitive (RFC 7235).
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, token)| token.trim_start_matches(' '));
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            let why = "missing or wrong bearer token (Authorization: Bearer …)";
            return Fail(StatusCode::UNAUTHORIZED, vec![why.into()]).into_response();
        }
    }
    // Taken: the connection leaves the unproven ones for a slot of its own.
    if let Some(pass) = req.extensions().get::<linerate_listener::Pass>().cloned() {
        pass.let_in().await;
    }
    next.run(req).await
}
