//! Capabilities and securebits (prctl and capset calls nix lacks).

use nix::errno::Errno;

/// `SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_CAP_AMBIENT_RAISE`
/// with their locks: uid 0 never gains capabilities on execve, and nothing
/// can undo that. `SECBIT_KEEP_CAPS` stays settable: it only matters to the
/// setuid fixup, which NO_SETUID_FIXUP already switches off, and the
/// permitted set is empty anyway; tools that set it before dropping
/// privileges (iputils' `ping`) fail with EPERM when it is locked.
pub const SECUREBITS_LOCKED_DOWN: libc::c_ulong = (1 << 0) // NOROOT
    | (1 << 1) // NOROOT_LOCKED
    | (1 << 2) // NO_SETUID_FIXUP
    | (1 << 3) // NO_SETUID_FIXUP_LOCKED
    | (1 << 6) // NO_CAP_AMBIENT_RAISE
    | (1 << 7); // NO_CAP_AMBIENT_RAISE_LOCKED

fn prctl(
    option: libc::c_int,
    arg2: libc::c_ulong,
    arg3: libc::c_ulong,
) -> nix::Result<libc::c_int> {
    // SAFETY: the options used here (CAPBSET_DROP, CAP_AMBIENT,
    // SET_SECUREBITS, CAPBSET_READ) take integers only, no pointers.
    let ret = unsafe { libc::prctl(option, arg2, arg3, 0 as libc::c_ulong, 0 as libc::c_ulong) };
    Errno::result(ret)
}

/// Removes capability `cap` from the bounding set.
pub fn bounding_drop(cap: u32) -> nix::Result<()> {
    prctl(libc::PR_CAPBSET_DROP, cap.into(), 0).map(drop)
}

/// Whether `cap` is still in the bounding set.
pub fn bounding_has(cap: u32) -> nix::Result<bool> {
    prctl(libc::PR_CAPBSET_READ, cap.into(), 0).map(|r| r == 1)
}

/// Empties the ambient set.
pub fn ambient_clear() -> nix::Result<()> {
    prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
        0,
    )
    .map(drop)
}

/// Sets the securebits.
pub fn set_securebits(bits: libc::c_ulong) -> nix::Result<()> {
    prctl(libc::PR_SET_SECUREBITS, bits, 0).map(drop)
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;

/// Clears the effective, permitted and inheritable sets of this thread.
pub fn clear_all() -> nix::Result<()> {
    set_only(0)
}

/// Sets the effective and permitted sets of this thread to `mask` (bit N
/// is capability N) and clears the inheritable set.
pub fn set_only(mask: u64) -> nix::Result<()> {
    capset(mask, mask)
}

/// Sets the effective set of this thread to `effective` (within the
/// permitted set, which stays) and clears the inheritable set.
pub fn set_effective(effective: u64) -> nix::Result<()> {
    let (_, permitted) = current()?;
    capset(effective, permitted)
}

/// `capset` of this thread: these effective and permitted sets (bit N is
/// capability N), an empty inheritable set.
fn capset(effective: u64, permitted: u64) -> nix::Result<()> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let half = |e: u64, p: u64| CapData {
        effective: e as u32,
        permitted: p as u32,
        inheritable: 0,
    };
    let data = [
        half(effective, permitted),
        half(effective >> 32, permitted >> 32),
    ];
    // SAFETY: header and data are valid for the duration of the call and
    // laid out as __user_cap_header_struct and two __user_cap_data_struct,
    // which version 3 expects.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    Errno::result(ret).map(drop)
}

/// The (effective, permitted) sets of this thread, as 64-bit masks.
pub fn current() -> nix::Result<(u64, u64)> {
    of_thread(0)
}

/// The (effective, permitted) sets of thread `tid` (as this process's pid
/// namespace numbers it; 0: this thread), as 64-bit masks, relative to
/// that thread's own user namespace. Any process may read them.
pub fn of_thread(tid: i32) -> nix::Result<(u64, u64)> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: tid,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: `header` is valid for the call and `data` holds the two
    // data structs version 3's capget writes.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    Errno::result(ret)?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
    ))
}
