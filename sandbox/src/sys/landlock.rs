//! The guest's Landlock domain (made by init before the guest exists;
//! the guest already has no_new_privs).
//!
//! Two restrictions, each where the kernel has it:
//!
//! - the fence (Landlock ABI 1, Linux 5.13): the domain handles
//!   `LANDLOCK_ACCESS_FS_READ_FILE` and grants it beneath the descriptors
//!   init passes (`procfs::fence_grants`: the view's top-level entries
//!   but `/proc`, and the roots of the mounts beneath them and the
//!   directories just below a root with few entries, which end the
//!   kernel's rule walk early). A native open of another file of the
//!   kernel's procfs for reading fails with EACCES, whatever path race
//!   the guest ran; the supervisor serves what it means to give
//!   (`procfs/src/fence.rs`). Writes, directories and
//!   execution (which needs READ_FILE too) are not otherwise handled.
//! - the abstract-unix-socket scope (ABI 6, Linux 6.12): a process in the
//!   domain cannot connect or send to an abstract `AF_UNIX` socket
//!   created outside it. The guest's TCP/UDP sockets are the
//!   supervisor's `AF_UNIX` sockets in the supervisor's network
//!   namespace. Calls on them whose address is of `AF_UNIX` form (a
//!   `sendmmsg`, or a `connect` CONTINUEd for the guest's own socket
//!   while another thread `dup2`s a netstack socket onto the same number)
//!   would otherwise reach abstract names of the host's namespace. Under
//!   this scope they fail with EPERM.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

const CREATE_RULESET_VERSION: libc::c_uint = 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
const ACCESS_FS_READ_FILE: u64 = 1 << 2;
const RULE_PATH_BENEATH: libc::c_uint = 1;
/// The first ABI with scopes.
const ABI_SCOPES: libc::c_long = 6;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Whether the kernel has Landlock's file-system rules (any ABI): the
/// guest's reads are then fenced.
pub fn has_fs_rules() -> bool {
    landlock_abi() >= 1
}

fn landlock_abi() -> libc::c_long {
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call
    // reads no memory and returns the ABI version (or -1).
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    }
}

/// Puts this process (and everything it starts) in a Landlock domain
/// that, with `grants` (`O_PATH` descriptors), fences reads to beneath
/// them and, from ABI 6, has the abstract-unix-socket scope. Needs
/// no_new_privs. Err(EOPNOTSUPP) when the kernel has neither asked for.
pub fn confine_guest(grants: Option<&[OwnedFd]>) -> Result<(), Errno> {
    let abi = landlock_abi();
    if abi < 1 || (grants.is_none() && abi < ABI_SCOPES) {
        return Err(Errno::EOPNOTSUPP);
    }
    let attr = RulesetAttr {
        handled_access_fs: if grants.is_some() {
            ACCESS_FS_READ_FILE
        } else {
            0
        },
        handled_access_net: 0,
        scoped: if abi >= ABI_SCOPES {
            SCOPE_ABSTRACT_UNIX_SOCKET
        } else {
            0
        },
    };
    // Kernels before ABI 6 know a shorter struct and take a longer one
    // whose extra bytes are zero, as they are there.
    // SAFETY: `attr` is a live, initialised struct of the size passed;
    // the kernel copies it before returning.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    let fd = Errno::result(fd)?;
    // SAFETY: the kernel returned a fresh descriptor nothing else owns.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    for grant in grants.unwrap_or_default() {
        let rule = PathBeneathAttr {
            allowed_access: ACCESS_FS_READ_FILE,
            parent_fd: grant.as_raw_fd(),
        };
        // SAFETY: `rule` is a live, initialised struct of the layout the
        // kernel reads for a path-beneath rule; both descriptors are live.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                RULE_PATH_BENEATH,
                &rule as *const PathBeneathAttr,
                0u32,
            )
        };
        Errno::result(r)?;
    }
    // SAFETY: plain integer arguments; the ruleset fd is live.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    Errno::result(r).map(drop)
}
