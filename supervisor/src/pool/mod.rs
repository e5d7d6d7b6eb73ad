//! The pool (`supervisor pool`, `supervisor run --pool`): sandboxes set up
//! before anyone asks for one and torn down after the answer, so a
//! client's command waits for neither.
//!
//! The daemon (`daemon.rs`, its sandboxes in `daemon/sandboxes.rs`, its
//! socket in `socket.rs`) keeps `--size` sandboxes ready, each its own
//! process (`slot.rs`: a `run` embedded whose guest execs late,
//! `launch/late.rs`), and gets each client's connection to one of them
//! (lending one ready sandbox the listening socket, or passing it a
//! connection it accepted itself); the client (`client.rs`) sends its
//! command, environment and stdio, passes signals on, and exits with
//! the answer. The messages are
//! in `protocol.rs` (their names and sizes that `src/fast_client.c`
//! shares in `wire.rs`); `warm.rs` looks up `--warm`'s paths in an idle
//! sandbox. Freshness is `run`'s: every sandbox serves one
//! command and is destroyed.

pub mod client;
pub mod daemon;
pub mod protocol;
pub mod slot;
pub mod socket;
mod warm;
pub mod wire;

use std::ffi::OsString;

/// The command line after the `pool` subcommand (the daemon's flags,
/// which every sandbox parses again).
pub fn flags_after_subcommand() -> Vec<OsString> {
    std::env::args_os()
        .skip(1)
        .skip_while(|a| a != "pool")
        .skip(1)
        .collect()
}
