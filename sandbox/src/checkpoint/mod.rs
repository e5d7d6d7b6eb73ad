//! Checkpoint and restore of a sandbox's guest processes by the
//! supervisor itself (no CRIU): a process is stopped with ptrace, its
//! registers, signal state, memory map and contents, descriptors and
//! working directory written to an image (`dump`); later a stub process
//! in a fresh sandbox of the same configuration is turned into it by
//! injected system calls, which pass the stub's seccomp filter like any
//! call of the guest's (`restore`). A directory of images carries a
//! manifest with each image's BLAKE3, checked in full before any
//! restored process runs (`manifest`; the restore may proceed beside the
//! check with its stubs held stopped until it passes).
//!
//! Scope: single-threaded processes; anonymous and file-backed private
//! maps (private file pages the process changed are saved, the rest is
//! mapped from the file again); regular-file and character-device
//! descriptors, reopened by path at their offset; the working directory;
//! signal handlers, mask and the rseq and robust-futex registrations. Not
//! in scope (the dump refuses with a reason): threads, pipes, sockets,
//! other anonymous inodes (eventfd, epoll, timerfd...), deleted or shared
//! anonymous maps. A restored process has a new pid.
//!
//! Owns the image format and both directions; not which processes a
//! session has nor where their images live (the front-end's), and none
//! of the `unsafe` (`crate::sys::ptrace`).

mod dump;
mod image;
mod inject;
pub mod manifest;
mod maps;
mod restore;

pub use dump::{dump, DumpError, Dumped};
pub use image::Image;
pub use maps::alive;
pub use restore::{release, restore};
