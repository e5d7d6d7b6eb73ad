//! The Linux ABI of the sandbox.
//!
//! Owns: the syscall policy table (every x86_64 syscall number is pass,
//! service, deny or kill, and each serviced one names its handler), the
//! BPF filter generated from it, the handlers that implement serviced
//! calls against `vfs` and `netstack` ([`handlers`]), and the state they
//! share ([`Context`]). The sandbox's /proc and the limits the guest is
//! told of are the `procfs` crate's; the handlers of the calls that reach
//! them (open, lseek's rewind, sysinfo, sched_getaffinity) call its
//! public interface.
//!
//! Does not own: seccomp itself. Handlers reach the guest only through the
//! [`guest::Guest`] trait, which the `supervisor` binary implements over
//! seccomp user notification and tests implement over a fake guest.

mod context;
pub mod guest;
mod handed;
pub mod handlers;
pub mod policy;
pub mod trace;

pub use context::Context;
pub use guest::{Guest, Reply, SyscallArgs};
pub use handed::Handed;
pub use handlers::dispatch;
pub use handlers::mknod::{DeviceNodes, Node};
pub use procfs::GuestLimits;
