//! The Linux ABI of the sandbox.
//!
//! Owns: the syscall policy table (every x86_64 syscall number is pass,
//! service, deny or kill), the BPF filter generated from it, and the
//! handlers that implement serviced calls against `vfs` and `netstack`.
//!
//! Does not own: seccomp itself. Handlers reach the guest only through the
//! [`guest::Guest`] trait, which the `supervisor` binary implements over
//! seccomp user notification and tests implement over a fake guest.

pub mod guest;
pub mod handlers;
pub mod policy;
pub mod trace;

pub use guest::{Guest, Reply, SyscallArgs};
pub use handlers::{dispatch, Context, GuestLimits};
