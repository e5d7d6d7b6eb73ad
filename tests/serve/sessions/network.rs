//! A session's network: a published port reaches a listener inside.

use std::time::Duration;

use crate::common::engine::poll_until;
use crate::sessions_daemon::Daemon;

#[test]
fn a_published_port_reaches_a_listener_inside() {
    if !crate::common::have("python3") {
        skip!("python3 is not installed (.ci/run installs it)");
    }
    let port = crate::common::free_port();
    let d = Daemon::start();
    let id = d.create(&format!(r#"{{"publish": ["127.0.0.1:{port}:8000"]}}"#));
    d.exec(&id, &["sh", "-c", "echo hello-from-inside > /tmp/index.html; cd /tmp && python3 -m http.server 8000 >/dev/null 2>&1 &"]);
    let fetch = || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Some(text)
    };
    assert!(
        poll_until(Duration::from_secs(30), || fetch()
            .is_some_and(|t| t.contains("hello-from-inside"))),
        "the listener inside was not reached"
    );
}
