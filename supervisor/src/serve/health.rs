//! `GET /v1/health`: the daemon answers, with the executions running and
//! queued; and the OpenAPI fragment of `/v1/openapi.json` itself (served
//! by `app.rs`). Owns nothing else.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::app::Serve;

pub fn routes() -> Router<Arc<Serve>> {
    Router::new().route("/v1/health", get(health))
}

async fn health(State(serve): State<Arc<Serve>>) -> Json<Value> {
    let (running, queued) = serve.executions.admission.counts();
    Json(json!({ "status": "ok", "running": running, "queued": queued }))
}

pub fn openapi() -> Value {
    json!({
        "paths": { "/v1/health": { "get": {
            "summary": "The daemon answers",
            "operationId": "health",
            "responses": {
                "200": { "description": "Alive", "content": { "application/json": { "schema": {
                    "$ref": "#/components/schemas/Health" } } } },
                "401": super::openapi::error_response("No valid bearer token (TCP only)")
            }
        } },
        "/v1/openapi.json": { "get": {
            "summary": "This document",
            "operationId": "openapi",
            "responses": {
                "200": { "description": "The OpenAPI document", "content": { "application/json": {
                    "schema": { "type": "object" } } } },
                "401": super::openapi::error_response("No valid bearer token (TCP only)")
            }
        } } },
        "components": { "schemas": { "Health": {
            "type": "object",
            "required": ["status", "running", "queued"],
            "properties": {
                "status": { "type": "string", "enum": ["ok"] },
                "running": { "type": "integer", "minimum": 0 },
                "queued": { "type": "integer", "minimum": 0 }
            }
        } } }
    })
}
