//! The pool (`supervisor pool`, `supervisor run --pool`): a command
//! run through a pool's sandbox behaves as under a cold `supervisor run`
//! (`commands`), the daemon's refusals, stop and users (`daemon`), the
//! client's fast path before the C library starts
//! (`fast_client`), the priority of set-ups and commands, a static
//! program started through the static loader (`static_reads`), the
//! client's stdio given back before its answer (`stdio_release`), and a
//! client on a terminal. The daemon each test starts is `common::pool::Pool`.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod commands;
mod daemon;
mod fast_client;
mod priority;
mod static_reads;
mod stdio_release;
mod terminal;
