//! The one host call the counted benches must stand in for: `openat2`
//! under a valgrind that does not know it.
//!
//! Owns: this bench binary's `syscall(2)` symbol, which the executable's
//! own definition gives every caller in it (the view's resolver makes
//! `openat2` through `libc::syscall`). It passes every call to the C
//! library's `syscall`; only when `openat2` comes back ENOSYS, which
//! valgrind before 3.22 answers for a call it does not know (Debian 12
//! has 3.19), does it open the same path with `openat` from the same
//! directory, a leading `/` dropped. That is what `RESOLVE_IN_ROOT` and
//! `RESOLVE_BENEATH` come to in the benches' fixtures, which hold no
//! absolute symlink and no `..` above their start. Natively the kernel
//! answers `openat2` and this changes nothing. Does not own: any other
//! call, nor what is counted (the kernel's side never is).

use std::ffi::{c_char, c_int, c_long, c_uint};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `struct open_how` (linux/openat2.h).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

type Syscall = unsafe extern "C" fn(c_long, ...) -> c_long;

/// The C library's `syscall`, found once.
static REAL: AtomicUsize = AtomicUsize::new(0);

fn real() -> Syscall {
    let mut p = REAL.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name; the
        // C library always defines `syscall`.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"syscall".as_ptr()) } as usize;
        assert!(p != 0, "no syscall in the C library");
        REAL.store(p, Ordering::Relaxed);
    }
    // SAFETY: `p` is the address of the C library's `syscall`, whose
    // type this is.
    unsafe { std::mem::transmute::<usize, Syscall>(p) }
}

/// `syscall(2)` for this binary (see the module doc). Six arguments are
/// what the kernel takes; on x86_64 a variadic call passes them in the
/// same registers.
///
/// # Safety
/// As `syscall(2)`: the arguments must be valid for the call.
#[no_mangle]
pub unsafe extern "C" fn syscall(
    nr: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    // SAFETY: the caller's arguments, passed on unchanged.
    let r = unsafe { real()(nr, a1, a2, a3, a4, a5, a6) };
    if nr != libc::SYS_openat2
        || r != -1
        || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
    {
        return r;
    }
    // SAFETY: openat2's arguments: a NUL-terminated path (a2) and an
    // open_how of at least its first version's size (a3), valid for
    // the call as the caller promised.
    unsafe {
        let how = &*(a3 as *const OpenHow);
        let mut path = a2 as *const c_char;
        while *path == b'/' as c_char {
            path = path.add(1);
        }
        if *path == 0 {
            path = c".".as_ptr();
        }
        libc::openat(a1 as c_int, path, how.flags as c_int, how.mode as c_uint) as c_long
    }
}
