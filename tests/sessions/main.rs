//! Sessions of `supervisor serve` (`/v1/sessions`) and the `supervisor
//! sessions` CLI (`sessions.rs`); the daemon each test starts, and a raw
//! HTTP client of its socket, are `sessions_daemon.rs`'s.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod sessions;
mod sessions_daemon;
