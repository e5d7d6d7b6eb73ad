//! The OpenAPI document served at `/v1/openapi.json`, assembled from
//! fragments: each API module has a `fn openapi() -> serde_json::Value`
//! returning `{"paths": {...}, "components": {"schemas": {...}}}` (plain
//! JSON written beside its routes, no generator), and [`document`] merges
//! them over the common parts (info, the error schema, the bearer
//! scheme). A module adding routes adds its fragment to `app.rs`'s list.
//!
//! Does not own any API's schema.

use serde_json::{json, Map, Value};

/// An API module's contribution.
pub type Fragment = fn() -> Value;

/// The whole document (OpenAPI 3.0.3).
pub fn document(fragments: &[Fragment]) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert("Error".into(), super::error::schema());
    for fragment in fragments {
        let part = fragment();
        if let Some(p) = part.get("paths").and_then(Value::as_object) {
            paths.extend(p.clone());
        }
        if let Some(s) = part
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        {
            schemas.extend(s.clone());
        }
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "supervisor serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sandboxed executions over HTTP (docs/serve.md). On the Unix socket the peer's uid is checked; on TCP every request needs a bearer token."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        },
        "security": [ {}, { "bearer": [] } ]
    })
}

/// A response that is the error body with `description`.
pub fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_merge() {
        fn a() -> Value {
            json!({"paths": {"/a": {}}, "components": {"schemas": {"A": {}}}})
        }
        fn b() -> Value {
            json!({"paths": {"/b": {}}})
        }
        let doc = document(&[a, b]);
        assert!(doc.pointer("/paths/~1a").is_some());
        assert!(doc.pointer("/paths/~1b").is_some());
        assert!(doc.pointer("/components/schemas/A").is_some());
        assert!(doc.pointer("/components/schemas/Error").is_some());
    }
}
