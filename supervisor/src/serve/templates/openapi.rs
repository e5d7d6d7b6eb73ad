//! The template API's OpenAPI fragment (merged by `serve/openapi.rs`).
//! Owns the paths and schemas of `/v1/templates`; keep it true to
//! `mod.rs`'s routes and `crate::sessions::template`'s types.

use serde_json::{json, Value};

use crate::serve::openapi::error_response;

fn ok_json(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": {
        "$ref": format!("#/components/schemas/{schema}") } } } })
}

fn name_param() -> Value {
    json!({ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } })
}

fn spec_properties() -> Value {
    json!({
        "name": { "type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$" },
        "limits": { "type": "object", "additionalProperties": false, "properties": {
            "memory_bytes": { "type": "integer", "minimum": 1 },
            "cpus": { "type": "number", "minimum": 0.01, "maximum": 4096 },
            "pids": { "type": "integer", "minimum": 1 },
            "disk_bytes": { "type": "integer", "minimum": 1, "default": 1073741824 } } },
        "egress": { "type": "array", "items": { "type": "string" },
            "description": "supervisor run --allow-net's rules; none: no egress" },
        "env": { "type": "object", "additionalProperties": { "type": "string" } },
        "idle_ttl_s": { "type": "integer", "minimum": 1, "maximum": 2592000 },
        "max_lifetime_s": { "type": "integer", "minimum": 1, "maximum": 2592000 },
        "setup": { "type": "array", "maxItems": 64,
            "description": "Commands run in order in each of its sessions before it is handed out; each must exit 0. Processes they leave running are the warm state.",
            "items": { "$ref": "#/components/schemas/ExecSpec" } },
        "warm": { "type": "integer", "minimum": 0, "maximum": 16, "default": 1,
            "description": "Sessions kept set up and ready (within the daemon's --max-warm)" }
    })
}

pub fn openapi() -> Value {
    let e400 =
        error_response("Bad request (unknown field, bad name, bad limit, bad setup command)");
    let e404 = error_response("No such template");
    let e401 = error_response("No valid bearer token (TCP only)");
    let e413 = error_response("The body is larger than --max-body");
    let mut template = json!({
        "type": "object",
        "required": ["name", "limits", "egress", "env", "setup", "warm", "ready",
            "taken_warm", "taken_cold"],
        "properties": spec_properties()
    });
    template["properties"]["ready"] = json!({ "type": "integer", "minimum": 0,
        "description": "Warm sessions ready now" });
    template["properties"]["last_error"] = json!({ "type": "string", "nullable": true,
        "description": "Why the last refill failed, if it did" });
    template["properties"]["taken_warm"] = json!({ "type": "integer", "minimum": 0 });
    template["properties"]["taken_cold"] = json!({ "type": "integer", "minimum": 0 });
    json!({
        "paths": {
            "/v1/templates": {
                "post": {
                    "summary": "Make a template: its setup runs once before the answer, then its warm sessions are kept ready",
                    "operationId": "createTemplate",
                    "requestBody": { "required": true, "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/TemplateSpec" } } } },
                    "responses": {
                        "201": ok_json("Made, its first warm session ready", "Template"),
                        "400": e400, "401": e401, "413": e413,
                        "409": error_response("A template of that name exists"),
                        "422": error_response("Its setup failed (the failing command and its last line) or its sandbox would not start")
                    }
                },
                "get": {
                    "summary": "Every template",
                    "operationId": "listTemplates",
                    "responses": { "200": ok_json("The templates", "TemplateList"), "401": e401 }
                }
            },
            "/v1/templates/{name}": {
                "parameters": [name_param()],
                "get": {
                    "summary": "A template and its warm sessions",
                    "operationId": "getTemplate",
                    "responses": { "200": ok_json("It", "Template"), "401": e401, "404": e404 }
                },
                "delete": {
                    "summary": "Delete a template (its warm sessions end; sessions made from it stay)",
                    "operationId": "deleteTemplate",
                    "responses": { "200": ok_json("Deleted", "Template"), "401": e401, "404": e404 }
                }
            }
        },
        "components": { "schemas": {
            "TemplateSpec": {
                "type": "object",
                "additionalProperties": false,
                "required": ["name"],
                "properties": spec_properties()
            },
            "Template": template,
            "TemplateList": {
                "type": "object", "required": ["templates"],
                "properties": { "templates": { "type": "array", "items": { "$ref": "#/components/schemas/Template" } } }
            }
        } }
    })
}
