//! The executions API (seed 002's grader): `POST /v1/executions` runs one
//! command in a fresh sandbox and answers its result (or streams its
//! output, then the result, as NDJSON); `GET /v1/executions/{id}` reads a
//! finished result back, also after a restart.
//!
//! Owns the routes and their OpenAPI fragment; the request's shape and
//! checks are `request.rs`'s, admission `admission.rs`'s, running
//! `runner.rs`'s (pools per shape: `pools.rs`), the result `result.rs`'s,
//! keeping results `store.rs`'s.

pub mod admission;

use std::sync::Arc;

use axum::Router;
use serde_json::{json, Value};

use super::app::Serve;
use super::ServeArgs;

/// The executions' shared parts.
pub struct Executions {
    pub admission: admission::Admission,
}

impl Executions {
    pub fn new(args: &ServeArgs) -> Result<Executions, String> {
        Ok(Executions {
            admission: admission::Admission::new(
                args.max_running as usize,
                args.max_queued as usize,
            ),
        })
    }

    pub async fn shut_down(&self) {}
}

pub fn routes() -> Router<Arc<Serve>> {
    Router::new()
}

pub fn openapi() -> Value {
    json!({})
}
