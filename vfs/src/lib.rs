//! The sandbox's filesystem.
//!
//! Owns: resolution of guest paths confined to the view ([`Resolver`]:
//! `openat2` fast paths, the component walk for magic links and for the
//! directories a caller searches by a capability, the `/proc/self`
//! family; a cache of resolved directories for parent lookups, and the
//! paths known to name a plain object, for read opens),
//! lexical path utilities ([`path`]), the id mapping of chown
//! ([`IdMap`]), the host calls the file handlers make ([`sys`]), and the
//! mount specs of the view ([`mounts`]).
//!
//! Does not own: seccomp, guest memory or the syscall ABI (the `syscalls`
//! crate), nor doing the mounts (the supervisor's launch module).

mod cache;
pub mod idmap;
pub mod mounts;
pub mod path;
mod plain;
pub mod resolve;
pub mod sys;
#[cfg(test)]
mod tests;
mod walk;

pub use cache::CachePolicy;
pub use idmap::IdMap;
pub use plain::{Known, Probe};
pub use resolve::{At, Caller, Dir, Parent, Resolver};
pub use walk::searched;
