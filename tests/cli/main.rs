//! The `supervisor run` command as a user meets it: its command line
//! (bad input and its exit codes, `--help`, exit status and signal
//! passthrough, stdio, the clean environment, the report), `--trace`,
//! stdio on a terminal, signals forwarded to the guest and the guest's end
//! with the supervisor, and nothing of the guest left running once it has
//! exited.
//!
//! Not here: what the guest sees of the file system (`tests/fs/`), the
//! limits (`tests/limits/`), the pool's client (`tests/pool/`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod command_line;
mod lifecycle;
mod teardown;
mod terminal;
mod trace;
