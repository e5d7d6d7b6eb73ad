//! The strict JSON body: [`Strict<T>`] reads the whole body (past
//! `--max-body`: 413) and parses it with serde, whose types here refuse
//! unknown fields; malformed JSON, a wrong type or an unknown field is a
//! 400 with serde's one line.
//!
//! Does not own the types' validation beyond their shape.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct Strict<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Strict<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Strict<T>, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            let status = r.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "the request body is larger than --max-body")
            } else {
                ApiError::bad_request(format!("the request body: {}", r.body_text()))
            }
        })?;
        serde_json::from_slice(&bytes)
            .map(Strict)
            .map_err(|e| ApiError::bad_request(format!("the request body: {e}")))
    }
}
