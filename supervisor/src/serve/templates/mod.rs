//! The template API (`/v1/templates`): make a template (its setup run
//! once before the answer: a setup that fails is a 422 with the failing
//! command's last line), list them, show one (its warm sessions ready,
//! the last refill's error), delete one (sessions made from it stay).
//! Sessions are made from a template by `POST /v1/sessions {"template"}`
//! (`serve/sessions/`). The templates and their warm sessions are
//! `crate::sessions::templates`'; this module maps HTTP onto them.
//!
//! Owns the routes; the OpenAPI fragment is `openapi.rs`'s.

mod openapi;

pub use openapi::openapi;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use super::app::Serve;
use super::body::Strict;
use super::error::ApiError;
use super::sessions::api_error;
use crate::sessions::template::TemplateSpec;
use crate::sessions::SessionError;

pub fn routes() -> Router<Arc<Serve>> {
    Router::new()
        .route("/v1/templates", post(create).get(list))
        .route("/v1/templates/{name}", get(show).delete(delete))
}

/// Runs `f` on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SessionError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("a template task: {e}")))?
        .map_err(api_error)
}

async fn create(
    State(serve): State<Arc<Serve>>,
    Strict(spec): Strict<TemplateSpec>,
) -> Result<Response, ApiError> {
    let templates = serve.sessions.templates.clone();
    let info = blocking(move || templates.create(spec)).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

async fn list(State(serve): State<Arc<Serve>>) -> Result<Json<Value>, ApiError> {
    let templates = serve.sessions.templates.clone();
    let all = blocking(move || {
        Ok(templates
            .list()
            .iter()
            .map(|t| serde_json::to_value(t.info()).unwrap_or(Value::Null))
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(serde_json::json!({ "templates": all })))
}

async fn show(
    State(serve): State<Arc<Serve>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let templates = serve.sessions.templates.clone();
    let info = blocking(move || templates.get(&name).map(|t| t.info())).await?;
    Ok(Json(info).into_response())
}

async fn delete(
    State(serve): State<Arc<Serve>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let templates = serve.sessions.templates.clone();
    let info = blocking(move || {
        let info = templates.get(&name)?.info();
        templates.delete(&name)?;
        Ok(info)
    })
    .await?;
    Ok(Json(info).into_response())
}
