//! The executions API (seed 002's grader): `POST /v1/executions` runs one
//! command in a fresh sandbox and answers its result, or, with `Accept:
//! application/x-ndjson`, streams its output as written (one JSON object
//! a line) and then the result; `GET /v1/executions/{id}` reads a
//! finished result back, also after a restart.
//!
//! Owns the routes and their OpenAPI fragment; the request's shape and
//! checks are `request.rs`'s, admission `admission.rs`'s, running
//! `runner.rs`'s (pools per shape: `pools.rs`), the result `result.rs`'s,
//! keeping results `store.rs`'s, the NDJSON body `ndjson.rs`'s.

pub mod admission;
pub mod ndjson;
pub mod pools;
pub mod request;
pub mod result;
pub mod runner;
pub mod store;

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::app::Serve;
use super::auth::Tenant;
use super::body::Strict;
use super::error::ApiError;
use super::openapi::error_response;
use super::ServeArgs;
use request::ExecutionRequest;
use runner::{Event, Runner};

/// The executions' shared parts.
pub struct Executions {
    pub admission: admission::Admission,
    pub pools: pools::Pools,
    pub runner: Runner,
    pub store: store::Store,
    /// `--max-timeout`.
    pub max_timeout_s: f64,
}

/// Seconds a refused client is told to wait.
const RETRY_AFTER_S: u64 = 1;

impl Executions {
    pub fn new(args: &ServeArgs) -> Result<Executions, String> {
        let exe = std::env::current_exe().map_err(|e| format!("the supervisor binary: {e}"))?;
        let work = args.data_dir.join("work");
        // Report files and staged files of a previous daemon's runs.
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        Ok(Executions {
            admission: admission::Admission::new(
                args.max_running as usize,
                args.max_queued as usize,
            ),
            pools: pools::Pools::new(&args.data_dir, exe.clone(), args.pool_size, args.max_pools)?,
            runner: Runner { exe, work },
            store: store::Store::new(&args.data_dir)?,
            max_timeout_s: args.max_timeout,
        })
    }

    /// Starts the pool of executions without limits, the common case.
    pub async fn warm_up(&self) {
        let _ = self.pools.socket_for(&request::Shape::default()).await;
    }

    pub async fn shut_down(&self) {
        self.pools.shut_down().await;
    }
}

pub fn routes() -> Router<Arc<Serve>> {
    Router::new()
        .route("/v1/executions", post(create))
        .route("/v1/executions/{id}", get(read))
}

async fn create(
    State(serve): State<Arc<Serve>>,
    Extension(tenant): Extension<Tenant>,
    headers: HeaderMap,
    Strict(body): Strict<ExecutionRequest>,
) -> Result<Response, ApiError> {
    let plan = body
        .plan(serve.executions.max_timeout_s)
        .map_err(ApiError::bad_request)?;
    let permit = serve
        .executions
        .admission
        .enter(&tenant)
        .await
        .map_err(|_| {
            ApiError::too_many(
                "too many executions running and queued; retry later",
                RETRY_AFTER_S,
            )
        })?;
    let id = store::new_id();
    let streaming = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/x-ndjson"));
    if !streaming {
        // Dropped with the request (the client went away): the runner's
        // future, and with it the sandbox, ends.
        let ex = &serve.executions;
        let socket = ex.pools.socket_for(&plan.shape).await;
        let result = ex.runner.run(&id, &plan, socket.as_deref(), None).await;
        drop(permit);
        ex.store.put(&result).await.map_err(ApiError::internal)?;
        return Ok(Json(result).into_response());
    }
    let (lines, body) = ndjson::channel();
    tokio::spawn(async move {
        let (tx, mut rx) = mpsc::channel::<Event>(64);
        let ex = &serve.executions;
        let run = async {
            let socket = ex.pools.socket_for(&plan.shape).await;
            ex.runner.run(&id, &plan, socket.as_deref(), Some(tx)).await
        };
        let forward = async {
            while let Some(event) = rx.recv().await {
                let (stream, bytes) = match event {
                    Event::Stdout(b) => ("stdout", b),
                    Event::Stderr(b) => ("stderr", b),
                };
                let (data, encoding) = result::encode(&bytes);
                let line = json!({"type": stream, "data": data, "encoding": encoding});
                if !lines.send(&line).await {
                    return;
                }
            }
        };
        tokio::select! {
            (result, ()) = async { tokio::join!(run, forward) } => {
                drop(permit);
                let line = match ex.store.put(&result).await {
                    Ok(()) => json!({"type": "result", "result": result}),
                    Err(e) => json!({"type": "error", "error": e}),
                };
                lines.send(&line).await;
            }
            // The client went away: the run (dropped here) ends.
            () = lines.closed() => {}
        }
    });
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}

async fn read(
    State(serve): State<Arc<Serve>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<result::ExecutionResult>, ApiError> {
    // An id that does not even decode names no execution either.
    let Ok(Path(id)) = id else {
        return Err(ApiError::not_found("no such execution"));
    };
    match serve.executions.store.get(&id).await {
        Ok(Some(r)) => Ok(Json(r)),
        Ok(None) => Err(ApiError::not_found(format!("no execution {id:?}"))),
        Err(e) => Err(ApiError::internal(e)),
    }
}

pub fn openapi() -> Value {
    // `--max-timeout` may be lower: the daemon then answers 400.
    let max_timeout = 86400;
    let limits = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "memory_bytes": { "type": "integer", "minimum": 1048576, "maximum": 1099511627776u64 },
            "cpus": { "type": "number", "minimum": 0.01, "maximum": 1024 },
            "pids": { "type": "integer", "minimum": 1, "maximum": 4194304 },
            "timeout_s": { "type": "number", "exclusiveMinimum": true, "minimum": 0, "maximum": max_timeout },
            "output_bytes": { "type": "integer", "minimum": 1, "maximum": 1073741824 },
            "disk_bytes": { "type": "integer", "minimum": 1048576, "maximum": 1099511627776u64 }
        }
    });
    let encoding = json!({ "type": "string", "enum": ["utf-8", "base64"] });
    json!({
        "paths": {
            "/v1/executions": { "post": {
                "summary": "Run a command in a fresh sandbox",
                "operationId": "createExecution",
                "requestBody": { "required": true, "content": { "application/json": {
                    "schema": { "$ref": "#/components/schemas/ExecutionRequest" } } } },
                "responses": {
                    "200": { "description": "The result (with Accept: application/x-ndjson: output lines, then {\"type\": \"result\", \"result\": ...})",
                        "content": {
                            "application/json": { "schema": { "$ref": "#/components/schemas/ExecutionResult" } },
                            "application/x-ndjson": { "schema": { "type": "string" } } } },
                    "400": error_response("A malformed body, an unknown field or a bad value"),
                    "401": error_response("No valid bearer token (TCP only)"),
                    "413": error_response("The body is larger than --max-body"),
                    "429": {
                        "description": "Too many executions running and queued",
                        "headers": { "Retry-After": { "schema": { "type": "integer" } } },
                        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
                    }
                }
            } },
            "/v1/executions/{id}": { "get": {
                "summary": "A finished execution's result",
                "operationId": "getExecution",
                "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } } ],
                "responses": {
                    "200": { "description": "The result", "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/ExecutionResult" } } } },
                    "401": error_response("No valid bearer token (TCP only)"),
                    "404": error_response("No such execution")
                }
            } }
        },
        "components": { "schemas": {
            "ExecutionRequest": {
                "type": "object",
                "additionalProperties": false,
                "description": "Either command, or language and code.",
                "properties": {
                    "command": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                    "language": { "type": "string", "enum": ["python3", "python", "sh", "bash"] },
                    "code": { "type": "string" },
                    "files": { "type": "array", "items": {
                        "type": "object", "additionalProperties": false,
                        "required": ["path", "content"],
                        "properties": {
                            "path": { "type": "string" },
                            "content": { "type": "string" },
                            "encoding": encoding
                        } } },
                    "stdin": { "type": "string" },
                    "stdin_encoding": encoding,
                    "env": { "type": "object", "additionalProperties": { "type": "string" } },
                    "limits": limits,
                    "egress": { "type": "array", "items": { "type": "string" } }
                }
            },
            "ExecutionResult": result::schema()
        } }
    })
}
