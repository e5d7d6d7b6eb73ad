//! The network: the netstack's loopback TCP and UDP, ping sockets,
//! ancillary data, queues and waits as natively, where TCP and the host's
//! `AF_UNIX` sockets part; sockets crossing processes (SCM_RIGHTS, fork,
//! exec, dup) and what /proc, `ss` and the peer options show of them;
//! egress by `--allow-net` and its DNS stub, `--publish`, the network
//! flags on the command line; the socket factory's confinement and the
//! sandbox's own network namespace; a Jupyter kernel as a whole-program
//! check; sends that take a msghdr (`sendpath.rs`).
//!
//! The guest scripts and host-side drivers the modules run are the
//! `*.py` files beside them.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod ancillary;
mod crossing;
mod egress;
mod egress_crossing;
mod factory;
mod flags;
mod gaps;
mod jupyter;
mod loopback;
mod netns;
mod pending;
mod ping;
mod publish;
mod queues;
mod reuseport;
mod sendpath;
mod udp;
mod waits;
