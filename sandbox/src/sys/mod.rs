//! Small wrappers around host calls that nix does not wrap (or wraps only
//! as `unsafe fn`): raw `clone` into new namespaces, `sigwaitinfo`,
//! `close_range`, `openat2` returning an owned fd, descriptor passing,
//! capabilities and securebits, `seccomp(SET_MODE_FILTER)`, bringing a
//! network link up, terminal ioctls, pidfds, prlimit, Landlock's
//! abstract-socket scope, per-thread ids, a detached writable copy of
//! a mount, nice values; the ptrace requests of a checkpoint and the
//! read-only map of its images.
//!
//! Owns: every `unsafe` block the launch code needs, each with a
//! `// SAFETY:` comment. Does not own: policy; callers decide what to call
//! and when.

pub mod caps;
pub mod fd;
pub mod holder;
pub mod landlock;
pub mod mapped;
pub mod mount_tree;
pub mod net;
pub mod new_mount;
pub mod pidfd;
pub mod priority;
pub mod process;
pub mod ptrace;
pub mod seccomp;
pub mod term;
pub mod thread_ids;
