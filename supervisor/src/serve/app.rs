//! The daemon's state ([`Serve`]) and its routes: [`router`] is the ONE
//! place every API's `routes()` joins (and [`OPENAPI`] the one list of
//! their OpenAPI fragments), under the layers every request passes: the
//! tenant (`auth.rs`), the body limit (413), and JSON answers for unknown
//! paths (404) and methods (405).
//!
//! Does not own any API's handlers.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use axum::{Json, Router};

use super::auth::{self, Tokens};
use super::error::ApiError;
use super::{executions, health, openapi, sessions, templates, ServeArgs};

/// What every handler shares.
pub struct Serve {
    pub executions: executions::Executions,
    pub sessions: Arc<crate::sessions::Sessions>,
}

impl Serve {
    pub fn new(args: &ServeArgs) -> Result<Serve, String> {
        std::fs::create_dir_all(&args.data_dir)
            .map_err(|e| format!("--data-dir {}: {e}", args.data_dir.display()))?;
        Ok(Serve {
            executions: executions::Executions::new(args)?,
            sessions: sessions::open(args)?,
        })
    }

    /// Ends what the daemon started (pools, running executions, sessions, warm sessions).
    pub async fn shut_down(&self) {
        self.executions.shut_down().await;
        let sessions = self.sessions.clone();
        let _ = tokio::task::spawn_blocking(move || sessions.shutdown()).await;
    }
}

/// Every API's OpenAPI fragment.
pub const OPENAPI: &[openapi::Fragment] = &[
    health::openapi,
    executions::openapi,
    sessions::openapi,
    templates::openapi,
];

/// The routes; `tokens`: the listener's bearer tokens (TCP), `None` on
/// the Unix socket.
pub fn router(serve: Arc<Serve>, tokens: Option<Arc<Tokens>>, max_body: usize) -> Router {
    Router::new()
        .merge(health::routes())
        .merge(executions::routes())
        .merge(sessions::routes())
        .merge(templates::routes())
        .route(
            "/v1/openapi.json",
            get(|| async { Json(openapi::document(OPENAPI)) }),
        )
        .fallback(|| async { ApiError::not_found("no such path") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this path",
            )
        })
        .layer(from_fn_with_state(tokens, auth::tenant))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(serve)
}
