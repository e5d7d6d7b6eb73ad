//! `supervisor serve` (docs/serve.md): executions run as the same
//! program runs natively (`executions`), output streamed as written
//! (`streaming`), admission under load and a client that disconnects
//! (`admission`), results kept across a restart (`durability`), bad
//! input answered with the right status and one line, without leaks
//! (`bad_input`), and who may connect (`access`); sessions (`/v1/sessions`
//! and `supervisor sessions`: `sessions`, with the session conveniences
//! over the common daemon in `sessions_daemon`); templates, sessions born warm (`templates`).
//! Each test starts its
//! own daemon (`common::serve::Daemon`) on a temp socket.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod access;
mod admission;
mod bad_input;
mod durability;
mod executions;
mod hibernate;
mod sessions;
mod sessions_daemon;
mod streaming;
mod templates;
