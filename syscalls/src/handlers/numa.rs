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
//! EFAULT and EPERM cases (mm/mempolicy.c; whether an address is mapped
//! is read from the guest's `/proc/<pid>/maps`), and writing the answers.
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
/// (MPOL_F_MEMS_ALLOWED, `addr` ignored) node 0; the policy of the
/// mapping at `addr` (MPOL_F_ADDR; EFAULT where nothing is mapped)
/// MPOL_DEFAULT, since no policy is kept; the node of that page
/// (MPOL_F_NODE | MPOL_F_ADDR; EFAULT when it cannot be read) node 0;
/// MPOL_F_NODE alone EINVAL, as under the default policy; an `addr`
/// without MPOL_F_ADDR EINVAL (`do_get_mempolicy`).
pub fn get_mempolicy(g: &dyn Guest, out: [u64; 3], addr: u64, flags: u64) -> Res {
    let [mode, mask, maxnode] = out;
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
        if flags & MPOL_F_ADDR != 0 {
            address_policy(g, addr, flags & MPOL_F_NODE != 0)?;
        } else if addr != 0 || flags & MPOL_F_NODE != 0 {
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

/// The checks of MPOL_F_ADDR: a mapping at `addr` (`vma_lookup`, else
/// EFAULT) and, for its node (`node`), a page there that can be read
/// (`lookup_node`'s get_user_pages, else EFAULT).
fn address_policy(g: &dyn Guest, addr: u64, node: bool) -> Result<(), Errno> {
    let mapped = match g.host_tgid().ok().and_then(maps_of) {
        Some(maps) => in_mapping(&maps, addr),
        // The maps cannot be read: a readable page is a mapped one.
        None => g.read_mem(addr, &mut [0u8]).is_ok(),
    };
    if !mapped || (node && g.read_mem(addr, &mut [0u8]).is_err()) {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

fn maps_of(tgid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tgid}/maps")).ok()
}

/// Whether `addr` lies in a mapping of a `/proc/<pid>/maps` text (the
/// vsyscall page is no mapping of the process's: `vma_lookup` misses it).
fn in_mapping(maps: &str, addr: u64) -> bool {
    maps.lines()
        .filter(|l| !l.ends_with("[vsyscall]"))
        .filter_map(|l| l.split_whitespace().next()?.split_once('-'))
        .filter_map(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .any(|(start, end)| (start..end).contains(&addr))
}

/// munlock(addr, len) and munlockall(): nothing is locked, nothing to do.
pub fn munlock(_ctx: &Context, g: &dyn Guest) -> Res {
    live(g)?;
    value(0)
}

#[cfg(test)]
mod tests {
    use super::in_mapping;

    #[test]
    fn an_address_is_in_a_mapping_of_the_maps_text_but_the_vsyscall_page() {
        let maps = "00400000-00401000 r-xp 00000000 08:01 12 /bin/x\n\
                    7f0000000000-7f0000002000 ---p 00000000 00:00 0\n\
                    ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
        assert!(in_mapping(maps, 0x400000));
        assert!(in_mapping(maps, 0x400fff));
        assert!(!in_mapping(maps, 0x401000));
        assert!(in_mapping(maps, 0x7f0000001000));
        assert!(!in_mapping(maps, 0xffffffffff600000));
        assert!(!in_mapping(maps, 0));
    }
}
