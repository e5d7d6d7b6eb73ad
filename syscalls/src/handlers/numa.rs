//! The NUMA policy calls answered as on a machine with one memory node,
//! node 0, without reaching the host kernel's mempolicy code: on one
//! node every policy places memory alike, so a policy set is accepted
//! (after the kernel's own checks of mode, flags and node mask) and not
//! kept, and `get_mempolicy` reports MPOL_DEFAULT. libnuma's
//! `numa_available()`, `numactl --show`, OpenBLAS, the JVM's `UseNUMA` and
//! jemalloc see a one-node machine. Unlocking memory is answered here too
//! (nothing is ever locked: mlock is refused).
//!
//! Owns: decoding the mode, flags and node masks, the kernel's EINVAL,
//! EFAULT and EPERM cases (mm/mempolicy.c), and writing the answers.
//! Does not own: which calls are answered (the policy table).

use nix::errno::Errno;

use super::{live, value, Context, Res};
use crate::guest::Guest;

const MPOL_DEFAULT: u32 = 0;
const MPOL_PREFERRED: u32 = 1;
const MPOL_LOCAL: u32 = 4;
/// The modes the kernel knows (MPOL_DEFAULT .. MPOL_WEIGHTED_INTERLEAVE).
const MPOL_MAX: u32 = 7;
/// MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING.
const MODE_FLAGS: u32 = (1 << 15) | (1 << 14) | (1 << 13);
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 2;
const MPOL_F_MEMS_ALLOWED: u64 = 4;
const MPOL_MF_STRICT: u32 = 1;
const MPOL_MF_MOVE: u32 = 2;
const MPOL_MF_MOVE_ALL: u32 = 4;
/// The kernel reads at most a page of node mask.
const MASK_MAX_BITS: u64 = 4096 * 8;
const PAGE: u64 = 4096;

/// The nodes a mask names, read as the kernel's `get_nodes` reads it
/// (`maxnode - 1` bits): whether it names any node, and whether it names
/// node 0, the one node this machine has.
fn read_nodes(g: &dyn Guest, mask: u64, maxnode: u64) -> Result<(bool, bool), Errno> {
    let bits = maxnode.saturating_sub(1);
    if mask == 0 || bits == 0 {
        return Ok((false, false));
    }
    if bits > MASK_MAX_BITS {
        return Err(Errno::EINVAL);
    }
    let words = bits.div_ceil(64) as usize;
    let mut buf = vec![0u8; words * 8];
    g.read_mem(mask, &mut buf)?;
    let mut any = false;
    let mut node0 = false;
    for (i, chunk) in buf.chunks_exact(8).enumerate() {
        let mut w = u64::from_ne_bytes(chunk.try_into().map_err(|_| Errno::EFAULT)?);
        let first = i as u64 * 64;
        if bits - first < 64 {
            w &= (1u64 << (bits - first)) - 1;
        }
        any |= w != 0;
        node0 |= i == 0 && w & 1 != 0;
    }
    Ok((any, node0))
}

/// The kernel's checks of a mode and its node mask (`sanitize_mpol_flags`,
/// `mpol_new`, `mpol_set_nodemask`): EINVAL for an unknown mode or flag,
/// a mask given to MPOL_DEFAULT or MPOL_LOCAL, an empty one to the modes
/// that need one, or one that names no node of this machine once cut to
/// the nodes it has (node 0; MPOL_F_RELATIVE_NODES maps any onto it).
fn check_policy(g: &dyn Guest, mode: u32, mask: u64, maxnode: u64) -> Result<(), Errno> {
    let m = mode & !MODE_FLAGS;
    let relative = mode & (1 << 14) != 0;
    if m >= MPOL_MAX || (mode & (1 << 15) != 0 && relative) {
        return Err(Errno::EINVAL);
    }
    let (any, node0) = read_nodes(g, mask, maxnode)?;
    let lands = node0 || (any && relative);
    match m {
        MPOL_DEFAULT | MPOL_LOCAL if any => Err(Errno::EINVAL),
        MPOL_DEFAULT | MPOL_LOCAL => Ok(()),
        MPOL_PREFERRED if !any && mode & MODE_FLAGS & !(1 << 13) == 0 => Ok(()),
        _ if !lands => Err(Errno::EINVAL),
        _ => Ok(()),
    }
}

/// set_mempolicy(mode, nodemask, maxnode): 0 after the kernel's checks.
pub fn set_mempolicy(g: &dyn Guest, mode: u32, mask: u64, maxnode: u64) -> Res {
    check_policy(g, mode, mask, maxnode)?;
    value(0)
}

/// mbind(start, len, mode, nodemask, maxnode, flags): 0 after the
/// kernel's checks, in its order: the mode's flags, the mask, unknown
/// flags, MPOL_MF_MOVE_ALL (CAP_SYS_NICE, which the guest lacks), an
/// unaligned start, an empty range (0 at once), then the mode and nodes.
pub fn mbind(g: &dyn Guest, start: u64, len: u64, mode: u32, mask: [u64; 2], flags: u32) -> Res {
    let [mask, maxnode] = mask;
    if (mode & !MODE_FLAGS) >= MPOL_MAX || (mode & (1 << 15) != 0 && mode & (1 << 14) != 0) {
        return Err(Errno::EINVAL);
    }
    read_nodes(g, mask, maxnode)?;
    if flags & !(MPOL_MF_STRICT | MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_MF_MOVE_ALL != 0 {
        return Err(Errno::EPERM);
    }
    if !start.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    let len = len.checked_add(PAGE - 1).ok_or(Errno::EINVAL)? & !(PAGE - 1);
    start.checked_add(len).ok_or(Errno::EINVAL)?;
    if len == 0 {
        return value(0);
    }
    check_policy(g, mode, mask, maxnode)?;
    value(0)
}

/// get_mempolicy(mode, nodemask, maxnode, addr, flags) of a one-node
/// machine: MPOL_DEFAULT with an empty mask; the allowed nodes
/// (MPOL_F_MEMS_ALLOWED) node 0; the node of a page (MPOL_F_NODE |
/// MPOL_F_ADDR) node 0; MPOL_F_NODE alone EINVAL, as under the default
/// policy.
pub fn get_mempolicy(g: &dyn Guest, out: [u64; 3], addr: u64, flags: u64) -> Res {
    let [mode, mask, maxnode] = out;
    let _ = addr;
    if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
        return Err(Errno::EINVAL);
    }
    if mask != 0 && maxnode < 1 {
        return Err(Errno::EINVAL);
    }
    let nodes: u64 = if flags & MPOL_F_MEMS_ALLOWED != 0 {
        if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
            return Err(Errno::EINVAL);
        }
        1
    } else {
        if flags & MPOL_F_NODE != 0 && flags & MPOL_F_ADDR == 0 {
            return Err(Errno::EINVAL);
        }
        0
    };
    // copy_nodes_to_user: ALIGN(maxnode - 1, 64) / 8 bytes, at most a page.
    let copy = if mask == 0 {
        0
    } else {
        maxnode.saturating_sub(1).div_ceil(64) * 8
    };
    if copy > PAGE {
        return Err(Errno::EINVAL);
    }
    live(g)?;
    if mode != 0 {
        // MPOL_DEFAULT, or node 0 of the page at `addr`.
        g.write_mem(mode, &0i32.to_ne_bytes())?;
    }
    if copy > 0 {
        let mut buf = vec![0u8; copy as usize];
        buf[..8].copy_from_slice(&nodes.to_ne_bytes());
        g.write_mem(mask, &buf)?;
    }
    value(0)
}

/// munlock(addr, len) and munlockall(): nothing is locked, nothing to do.
pub fn munlock(_ctx: &Context, g: &dyn Guest) -> Res {
    live(g)?;
    value(0)
}
