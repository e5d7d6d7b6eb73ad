//! The session API (`/v1/sessions`): create a session, run commands in
//! it (a JSON result, or with `Accept: application/x-ndjson` the output
//! streamed as it is written, then the result), put and get its files,
//! its state, the list (narrowed by metadata: `?metadata.KEY=VALUE`),
//! delete. The sessions themselves, their sandboxes, volumes and reaper
//! are `crate::sessions`'; this module only maps HTTP
//! onto them (blocking work on tokio's blocking threads) and their
//! errors onto statuses: unknown id 404, bad request 400, ended session
//! or one busy for the request 409, a template name taken 409, a
//! sandbox that would not start with what was asked (or a template's
//! setup that failed) or a session that cannot hibernate or wake 422,
//! past `--max-sessions` 429, a disk too full to hibernate 507. A
//! session made from a template (`{"template": NAME}`) is handed one of
//! its warm sessions (`crate::sessions::templates`).
//!
//! Owns the routes and the wire form of results (`result.rs`); the
//! OpenAPI fragment is `openapi.rs`'s.

pub mod cli;
mod openapi;
mod result;

pub use openapi::openapi;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use super::app::Serve;
use super::body::Strict;
use super::error::ApiError;
use crate::sessions::exec::Stream;
use crate::sessions::metadata::Filter;
use crate::sessions::spec::{ExecSpec, SessionSpec};
use crate::sessions::SessionError;

pub fn routes() -> Router<Arc<Serve>> {
    Router::new()
        .route("/v1/sessions", post(create).get(list))
        .route("/v1/sessions/{id}", get(show).delete(delete))
        .route("/v1/sessions/{id}/exec", post(exec))
        .route("/v1/sessions/{id}/hibernate", post(hibernate))
        .route("/v1/sessions/{id}/wake", post(wake))
        .route(
            "/v1/sessions/{id}/files/{*path}",
            get(get_file).put(put_file),
        )
}

/// The status of a sessions' (or templates') error.
pub fn api_error(e: SessionError) -> ApiError {
    let status = match &e {
        SessionError::NotFound(_) => StatusCode::NOT_FOUND,
        SessionError::BadRequest(_) => StatusCode::BAD_REQUEST,
        SessionError::Ended(_) | SessionError::Conflict(_) | SessionError::Busy(_) => {
            StatusCode::CONFLICT
        }
        SessionError::StartFailed(_) | SessionError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
        SessionError::Storage(_) => StatusCode::INSUFFICIENT_STORAGE,
        SessionError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        SessionError::Full(_) => return ApiError::too_many(e.to_string(), 5),
    };
    ApiError::new(status, e.to_string())
}

/// Runs `f` on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SessionError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("a session task: {e}")))?
        .map_err(api_error)
}

async fn create(
    State(serve): State<Arc<Serve>>,
    Strict(spec): Strict<SessionSpec>,
) -> Result<Response, ApiError> {
    let sessions = serve.sessions.clone();
    let info = blocking(move || sessions.create(spec).map(|s| s.info())).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

/// Every session, or with `?metadata.KEY=VALUE...` those whose metadata
/// holds every pair.
async fn list(
    State(serve): State<Arc<Serve>>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad_request(format!("the query: {e}")))?;
    let filter = Filter::from_query(pairs).map_err(ApiError::bad_request)?;
    let sessions = serve.sessions.clone();
    let all = blocking(move || {
        Ok(sessions
            .list()
            .iter()
            .filter(|s| s.matches(&filter))
            .map(|s| serde_json::to_value(s.info()).unwrap_or(Value::Null))
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(serde_json::json!({ "sessions": all })))
}

async fn show(
    State(serve): State<Arc<Serve>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sessions = serve.sessions.clone();
    let info = blocking(move || sessions.get(&id).map(|s| s.info())).await?;
    Ok(Json(info).into_response())
}

async fn delete(
    State(serve): State<Arc<Serve>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sessions = serve.sessions.clone();
    let info = blocking(move || {
        sessions.delete(&id)?;
        sessions.get(&id).map(|s| s.info())
    })
    .await?;
    Ok(Json(info).into_response())
}

/// Hibernates the session: its processes saved, its sandbox ended; the
/// answer is its state (`hibernated`, what was saved).
async fn hibernate(
    State(serve): State<Arc<Serve>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session = serve.sessions.get(&id).map_err(api_error)?;
    let info = blocking(move || session.hibernate().map(|_| session.info())).await?;
    Ok(Json(info).into_response())
}

/// Wakes the session (a new sandbox, its processes restored); the answer
/// is its state.
async fn wake(
    State(serve): State<Arc<Serve>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session = serve.sessions.get(&id).map_err(api_error)?;
    let info = blocking(move || session.wake().map(|()| session.info())).await?;
    Ok(Json(info).into_response())
}

/// The client asked for the output streamed.
fn wants_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/x-ndjson"))
}

async fn exec(
    State(serve): State<Arc<Serve>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Strict(spec): Strict<ExecSpec>,
) -> Result<Response, ApiError> {
    let session = serve.sessions.get(&id).map_err(api_error)?;
    spec.check().map_err(ApiError::bad_request)?;
    if !wants_ndjson(&headers) {
        let outcome = blocking(move || session.exec(&spec, &mut |_, _| {})).await?;
        return Ok(Json(result::json(&outcome)).into_response());
    }
    // Streamed: one JSON line per chunk as it is read, then the result
    // (or an error line). A client that goes away stops nothing: the
    // command runs to its end or timeout, as without streaming. The
    // channel is bounded: a slow reader slows the command (its pipe
    // fills), the daemon's memory does not grow.
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::task::spawn_blocking(move || {
        let line = |v: Value| {
            let mut text = v.to_string();
            text.push('\n');
            Bytes::from(text)
        };
        let mut sink = |stream: Stream, data: &[u8]| {
            let _ = tx.blocking_send(line(result::chunk(stream, data)));
        };
        let last = match session.exec(&spec, &mut sink) {
            Ok(outcome) => {
                let mut v = result::json(&outcome);
                v["type"] = "result".into();
                v
            }
            Err(e) => serde_json::json!({"type": "error", "error": e.to_string()}),
        };
        let _ = tx.blocking_send(line(last));
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(stream),
    )
        .into_response())
}

async fn put_file(
    State(serve): State<Arc<Serve>>,
    Path((id, path)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let session = serve.sessions.get(&id).map_err(api_error)?;
    let size = body.len();
    blocking(move || session.put_file(&path, body.to_vec())).await?;
    Ok(Json(serde_json::json!({ "size": size })).into_response())
}

async fn get_file(
    State(serve): State<Arc<Serve>>,
    Path((id, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let session = serve.sessions.get(&id).map_err(api_error)?;
    let data = blocking(move || session.get_file(&path)).await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], data).into_response())
}

/// The daemon's sessions under `--data-dir` (those a previous daemon left
/// running are reported ended), with their reaper started, and its
/// templates, with the filler that warms them up started.
pub fn open(args: &super::ServeArgs) -> Result<Arc<crate::sessions::Sessions>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the supervisor binary: {e}"))?;
    let sessions = Arc::new(crate::sessions::Sessions::open(
        &args.data_dir,
        &exe,
        args.max_sessions as usize,
        args.max_warm as usize,
    )?);
    sessions
        .start_reaper(std::time::Duration::from_millis(500))
        .map_err(|e| format!("starting the session reaper: {e}"))?;
    sessions
        .templates
        .start_filler()
        .map_err(|e| format!("starting the templates' filler: {e}"))?;
    Ok(sessions)
}
