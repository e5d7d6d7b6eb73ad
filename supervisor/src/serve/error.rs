//! The API's error: a status and one line, answered as
//! `{"error": "one line"}` (429 with `Retry-After`). Every handler's
//! failure is one of these; nothing else reaches the client.
//!
//! Does not own which status a failure gets: the handlers choose.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub retry_after_s: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        // One line, whatever the source said.
        let message = message.into().replace(['\n', '\r'], " ");
        ApiError {
            status,
            message,
            retry_after_s: None,
        }
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
    pub fn too_many(message: impl Into<String>, retry_after_s: u64) -> ApiError {
        ApiError {
            retry_after_s: Some(retry_after_s),
            ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        if let Some(s) = self.retry_after_s {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// The JSON schema of the error body, for the OpenAPI document.
pub fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["error"],
        "properties": { "error": { "type": "string" } }
    })
}
