//! Who may connect: the socket is mode 0600, and even through a socket
//! opened up to everyone only the daemon's own uid and root are served
//! (SO_PEERCRED, as the pool checks); the OpenAPI document lists every
//! route.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::common::serve::Daemon;
use crate::common::{is_root, tester_exists};

#[test]
fn the_socket_is_0600_and_other_users_are_not_served() {
    let d = Daemon::start(&[]);
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester");
    }
    // Open the socket and the way to it to everyone: the peer check alone refuses.
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(d.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Closed unread: the send fails (EPIPE) or the answer is empty.
    let script = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\n\
         try:\n    s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n    \
         print(repr(s.recv(100)))\n\
         except OSError as e:\n    print(\"b''\")",
        d.socket.display().to_string()
    );
    let out = Command::new("runuser")
        .args(["-u", "tester", "--", "python3", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "b''",
        "{out:?}"
    );
    // Our own uid is served.
    assert_eq!(d.http().get("/v1/health").status, 200);
}

#[test]
fn the_openapi_document_lists_the_routes() {
    let d = Daemon::start(&[]);
    let doc = d.http().get("/v1/openapi.json").json();
    assert_eq!(doc["openapi"], "3.0.3");
    for path in [
        "/v1/health",
        "/v1/executions",
        "/v1/executions/{id}",
        "/v1/openapi.json",
        "/v1/sessions",
        "/v1/templates",
        "/v1/templates/{name}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    assert!(doc.pointer("/components/schemas/ExecutionResult").is_some());
    // Every reference names a schema the document has.
    fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(|r| r.as_str()) {
                    out.push(r.to_string());
                }
                m.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.iter().any(|r| r.ends_with("/TemplateSpec")));
    for r in all {
        let pointer = r.trim_start_matches('#');
        assert!(doc.pointer(pointer).is_some(), "{r} names nothing");
    }
}
