//! The sandbox's socket layer: the guest's TCP and UDP sockets are host
//! `AF_UNIX` sockets in the sandbox's own network namespace (made by the
//! [`sockets`] source a run plugs in), named by the TCP/UDP address they
//! stand for.
//!
//! Owns: the naming scheme ([`name`]), guest socket addresses ([`addr`]),
//! the per-socket metadata the kernel cannot hold ([`table`]), the bound
//! names as the kernel lists them ([`bound`]), emulated socket options
//! ([`options`]) and where a local connection's TCP_NODELAY is kept
//! ([`nodelay`]), control messages of UDP sockets ([`ancillary`]), the egress seam and the denial log ([`egress`]), the
//! state one sandbox shares ([`stack::Stack`]); and the edge: `--allow-net`
//! rules and special ranges ([`rules`]), the DNS stub ([`dns`]), relays
//! ([`relay`]) and published ports ([`publish`]); the unix sockets'
//! queue lengths as the kernel's `unix_diag` reports them ([`queues`]); the
//! host calls nix does not wrap (`sys`). Does not own: guest
//! memory or the trap (the handlers in `syscalls/` drive this crate).

pub mod addr;
pub mod ancillary;
pub mod bound;
pub mod dns;
pub mod egress;
pub mod icmp;
pub mod mark;
pub mod name;
pub mod nodelay;
pub mod options;
pub mod outbound;
pub mod publish;
pub mod queues;
pub mod refused;
pub mod relay;
pub mod reuseport;
pub mod rules;
pub mod sockets;
pub mod stack;
mod sys;
pub mod table;

pub use egress::{DenialLog, Denied, DeniedConnection, Egress, HostOption, NoEgress, Refusal};
pub use name::{Namer, Proto};
pub use sockets::{LocalSockets, UnixSockets};
pub use stack::Stack;
pub use table::{Meta, Refusals, Table};
