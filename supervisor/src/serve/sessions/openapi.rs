//! The session API's OpenAPI fragment (merged by `serve/openapi.rs`).
//! Owns the paths and schemas of `/v1/sessions`; keep it true to
//! `mod.rs`'s routes and `crate::sessions::spec`'s types.

use serde_json::{json, Value};

use crate::serve::openapi::error_response;

fn ok_json(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": {
        "$ref": format!("#/components/schemas/{schema}") } } } })
}

fn id_param() -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } })
}

fn path_param() -> Value {
    json!({ "name": "path", "in": "path", "required": true,
        "description": "Relative to the session's working directory; no '.', '..' or empty components",
        "schema": { "type": "string" } })
}

pub fn openapi() -> Value {
    let e400 = error_response("Bad request (unknown field, bad limit, bad path, bad metadata)");
    let e404 = error_response("No such session (or file)");
    let e409 = error_response("The session has ended (or is busy for this request)");
    let e422 =
        error_response("The session cannot be hibernated, or its saved state cannot be restored");
    let e507 = error_response("The disk cannot take the session's state; it keeps running");
    let e401 = error_response("No valid bearer token (TCP only)");
    let e413 = error_response("The body is larger than --max-body");
    json!({
        "paths": {
            "/v1/sessions": {
                "post": {
                    "summary": "Create a session (a long-lived sandbox)",
                    "operationId": "createSession",
                    "requestBody": { "required": true, "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/SessionSpec" } } } },
                    "responses": {
                        "201": ok_json("Created and running", "Session"),
                        "400": e400, "401": e401, "413": e413,
                        "404": error_response("No such template"),
                        "422": error_response("The sandbox would not start with what was asked"),
                        "429": error_response("--max-sessions sessions are running")
                    }
                },
                "get": {
                    "summary": "Every session (running and ended), or those with given metadata",
                    "description": "Query parameters `metadata.KEY=VALUE` (percent-encoded, repeatable) narrow the list to sessions whose metadata holds every pair, e.g. `?metadata.user=u_42&metadata.kind=kernel`; any other parameter is a 400.",
                    "operationId": "listSessions",
                    "responses": { "200": ok_json("The sessions", "SessionList"),
                        "400": error_response("A query parameter other than metadata.KEY, or a bad key"),
                        "401": e401 }
                }
            },
            "/v1/sessions/{id}": {
                "parameters": [id_param()],
                "get": {
                    "summary": "A session's state",
                    "operationId": "getSession",
                    "responses": { "200": ok_json("Its state", "Session"), "401": e401, "404": e404 }
                },
                "delete": {
                    "summary": "End a session (its volume stays)",
                    "operationId": "deleteSession",
                    "responses": { "200": ok_json("Ended", "Session"), "401": e401, "404": e404 }
                }
            },
            "/v1/sessions/{id}/exec": {
                "parameters": [id_param()],
                "post": {
                    "summary": "Run a command in the session",
                    "description": "With `Accept: application/x-ndjson` the output streams as JSON lines (`{\"type\":\"stdout\"|\"stderr\",\"data\",\"encoding\"}`) and the last line is the result with `\"type\":\"result\"` (or `\"type\":\"error\"`). Processes the command leaves running stay.",
                    "operationId": "execInSession",
                    "requestBody": { "required": true, "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/ExecSpec" } } } },
                    "responses": {
                        "200": { "description": "The command's end", "content": {
                            "application/json": { "schema": { "$ref": "#/components/schemas/ExecResult" } },
                            "application/x-ndjson": { "schema": { "type": "string" } } } },
                        "400": e400, "401": e401, "404": e404, "409": e409, "413": e413
                    }
                }
            },
            "/v1/sessions/{id}/hibernate": {
                "parameters": [id_param()],
                "post": {
                    "summary": "Hibernate the session: its processes saved under the data directory, its sandbox ended",
                    "description": "409 while a command runs or a process is inside a call the sandbox serves; 422 when a process holds what cannot be saved (threads, pipes, sockets); 507 when the disk cannot take the state (the session keeps running).",
                    "operationId": "hibernateSession",
                    "responses": { "200": ok_json("Hibernated", "Session"), "401": e401, "404": e404,
                        "409": e409, "422": e422, "507": e507 }
                }
            },
            "/v1/sessions/{id}/wake": {
                "parameters": [id_param()],
                "post": {
                    "summary": "Wake a hibernated session (its next exec or file request does too)",
                    "description": "422 when the saved state does not match its manifest (truncated, altered) or cannot be restored; the session then stays hibernated.",
                    "operationId": "wakeSession",
                    "responses": { "200": ok_json("Awake", "Session"), "401": e401, "404": e404,
                        "409": e409, "422": e422 }
                }
            },
            "/v1/sessions/{id}/files/{path}": {
                "parameters": [id_param(), path_param()],
                "get": {
                    "summary": "A file of the session",
                    "operationId": "getSessionFile",
                    "responses": {
                        "200": { "description": "Its contents", "content": {
                            "application/octet-stream": { "schema": { "type": "string", "format": "binary" } } } },
                        "400": e400, "401": e401, "404": e404, "409": e409
                    }
                },
                "put": {
                    "summary": "Write a file in the session (parents made)",
                    "operationId": "putSessionFile",
                    "requestBody": { "required": true, "content": { "application/octet-stream": {
                        "schema": { "type": "string", "format": "binary" } } } },
                    "responses": {
                        "200": { "description": "Written", "content": { "application/json": { "schema": {
                            "type": "object", "required": ["size"],
                            "properties": { "size": { "type": "integer", "minimum": 0 } } } } } },
                        "400": e400, "401": e401, "404": e404, "409": e409, "413": e413
                    }
                }
            }
        },
        "components": { "schemas": {
            "SessionSpec": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "limits": { "type": "object", "additionalProperties": false, "properties": {
                        "memory_bytes": { "type": "integer", "minimum": 1 },
                        "cpus": { "type": "number", "minimum": 0.01, "maximum": 4096 },
                        "pids": { "type": "integer", "minimum": 1 },
                        "disk_bytes": { "type": "integer", "minimum": 1, "default": 1073741824 } } },
                    "egress": { "type": "array", "items": { "type": "string" },
                        "description": "supervisor run --allow-net's rules; none: no egress" },
                    "publish": { "type": "array", "items": { "type": "string" },
                        "description": "[HOSTIP:]HOSTPORT:GUESTPORT[/udp]" },
                    "env": { "type": "object", "additionalProperties": { "type": "string" } },
                    "volume": { "type": "object", "additionalProperties": false, "required": ["name"],
                        "properties": {
                            "name": { "type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$" },
                            "path": { "type": "string", "default": "/data" } } },
                    "idle_ttl_s": { "type": "integer", "minimum": 1, "maximum": 2592000, "default": 900 },
                    "max_lifetime_s": { "type": "integer", "minimum": 1, "maximum": 2592000, "default": 86400 },
                    "idle_hibernate_s": { "type": "integer", "minimum": 1, "maximum": 2592000,
                        "description": "idle seconds before the session hibernates; none: only when asked" },
                    "template": { "type": "string",
                        "description": "Make the session from this template (/v1/templates): its limits, egress and env, its setup's processes already running; only idle_ttl_s, max_lifetime_s, idle_hibernate_s and metadata may be given besides" },
                    "metadata": { "$ref": "#/components/schemas/Metadata" }
                }
            },
            "Metadata": {
                "type": "object",
                "description": "The operator's tags (tenant, notebook...): kept with the session, shown by its state and the list, filtered on by the list; never passed into the guest. At most 64 keys of 1 to 128 bytes, values of at most 1024 bytes, 16384 bytes of keys and values in all, no control characters.",
                "maxProperties": 64,
                "additionalProperties": { "type": "string", "maxLength": 1024 }
            },
            "Session": {
                "type": "object",
                "required": ["id", "state", "created_at", "idle_s", "idle_ttl_s", "max_lifetime_s",
                    "memory_bytes", "processes", "workdir", "publish", "metadata"],
                "properties": {
                    "id": { "type": "string" },
                    "state": { "type": "string", "enum": ["running", "hibernated", "ended"] },
                    "reason": { "type": "string", "nullable": true,
                        "description": "deleted, idle_ttl, max_lifetime, sandbox_exited, daemon_stopped, daemon_restarted" },
                    "message": { "type": "string", "nullable": true,
                        "description": "with sandbox_exited: the sandbox's own line, which limit killed it (killed: memory limit 256 MiB reached (peak 256 MiB))" },
                    "created_at": { "type": "integer" },
                    "ended_at": { "type": "integer", "nullable": true },
                    "idle_s": { "type": "number" },
                    "idle_ttl_s": { "type": "integer" },
                    "max_lifetime_s": { "type": "integer" },
                    "memory_bytes": { "type": "integer" },
                    "processes": { "type": "array", "items": { "type": "object",
                        "required": ["pid", "command"],
                        "properties": { "pid": { "type": "integer" }, "command": { "type": "string" } } } },
                    "workdir": { "type": "string" },
                    "volume": { "type": "object", "nullable": true, "properties": {
                        "name": { "type": "string" }, "path": { "type": "string" } } },
                    "publish": { "type": "array", "items": { "type": "string" } },
                    "template": { "type": "string", "nullable": true },
                    "idle_hibernate_s": { "type": "integer", "nullable": true },
                    "hibernated": { "type": "object", "nullable": true,
                        "description": "while hibernated: the processes and bytes of memory saved",
                        "properties": { "processes": { "type": "integer" }, "memory_bytes": { "type": "integer" } } },
                    "hibernate_error": { "type": "string", "nullable": true,
                        "description": "why the last automatic hibernation failed" },
                    "metadata": { "$ref": "#/components/schemas/Metadata" }
                }
            },
            "SessionList": {
                "type": "object", "required": ["sessions"],
                "properties": { "sessions": { "type": "array", "items": { "$ref": "#/components/schemas/Session" } } }
            },
            "ExecSpec": {
                "type": "object",
                "additionalProperties": false,
                "required": ["command"],
                "properties": {
                    "command": { "type": "array", "minItems": 1, "items": { "type": "string" } },
                    "stdin": { "type": "string" },
                    "env": { "type": "object", "additionalProperties": { "type": "string" } },
                    "cwd": { "type": "string", "pattern": "^/" },
                    "timeout_s": { "type": "number", "exclusiveMinimum": true, "minimum": 0, "maximum": 86400, "default": 60 }
                }
            },
            "ExecResult": {
                "type": "object",
                "required": ["reason", "stdout", "stderr", "stdout_encoding", "stderr_encoding",
                    "stdout_truncated", "stderr_truncated", "wall_ms"],
                "properties": {
                    "exit_code": { "type": "integer", "nullable": true },
                    "signal": { "type": "integer", "nullable": true },
                    "reason": { "type": "string", "enum": ["exited", "signaled", "timeout", "exec_failed", "memory", "pids", "sandbox_exited"],
                        "description": "memory, pids, sandbox_exited: a limit killed the session's sandbox, the command with it, and the session has ended (message says which)" },
                    "message": { "type": "string", "nullable": true },
                    "stdout": { "type": "string" },
                    "stdout_encoding": { "type": "string", "enum": ["utf-8", "base64"] },
                    "stdout_truncated": { "type": "boolean" },
                    "stderr": { "type": "string" },
                    "stderr_encoding": { "type": "string", "enum": ["utf-8", "base64"] },
                    "stderr_truncated": { "type": "boolean" },
                    "wall_ms": { "type": "number" }
                }
            }
        } }
    })
}
