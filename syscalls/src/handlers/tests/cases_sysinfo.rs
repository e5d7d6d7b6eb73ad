//! sched_getaffinity against the kernel, and the synthetic /proc files
//! under limits (recognised whatever the path).

use std::io::Read;

use super::*;
use crate::GuestLimits;

/// Big enough for any kernel's cpumask (`MASK_MAX`).
const MASK_BUF: usize = 8192;

fn own_ids() -> [i32; 3] {
    let pid = std::process::id() as i32;
    [0, pid, nix::unistd::gettid().as_raw()]
}

#[test]
fn sched_getaffinity_matches_the_kernel() {
    let t = tempfile::tempdir().unwrap();
    let lens: &[u32] = &[0, 4, 7, 8, 12, 16, 128, 1024, 4096, 8192, 8200, 16384];
    // len * 8 wraps in the kernel's unsigned int: 2^29 compares as 0,
    // 2^29 + 8 as 64.
    let wrapping: &[u32] = &[1 << 29, (1 << 29) + 8, u32::MAX - 7];
    for pid in own_ids() {
        for &len in lens.iter().chain(wrapping) {
            same(t.path(), &format!("pid {pid} len {len}"), &|s| {
                let b = s.buf(MASK_BUF.max(len.min(16384) as usize));
                let out = vec![(b, MASK_BUF)];
                (
                    libc::SYS_sched_getaffinity,
                    [pid as u64, len as u64, b, 0, 0, 0],
                    out,
                )
            });
            for p in [P::Bad, P::Null] {
                same(t.path(), &format!("pid {pid} len {len} {p:?}"), &|s| {
                    let b = pa(s, p);
                    (
                        libc::SYS_sched_getaffinity,
                        [pid as u64, len as u64, b, 0, 0, 0],
                        vec![],
                    )
                });
            }
        }
    }
}

#[test]
fn sched_getaffinity_of_others_is_the_kernels() {
    let f = Fake::new(Path::new("/"));
    for pid in [1u64, u32::MAX as u64, 0x7fff_fff0] {
        let a = [pid, 128, f.g.put(&[0; 128]), 0, 0, 0];
        let r = getaffinity(&f, a);
        assert!(matches!(r, Reply::Continue), "pid {pid}: {r:?}");
    }
}

#[test]
fn sched_getaffinity_under_a_cpu_limit() {
    let mut f = Fake::new(Path::new("/"));
    f.ctx.set_limits(GuestLimits {
        cpus: Some(1),
        ..Default::default()
    });
    let native = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let host_cpus = (0..nix::sched::CpuSet::count())
        .filter(|&i| native.is_set(i).unwrap())
        .count();
    for pid in own_ids() {
        let buf = f.g.put(&[0xaa; 128]);
        let a = [pid as u64, 128, buf, 0, 0, 0];
        let r = getaffinity(&f, a);
        let Reply::Value(n) = r else { panic!("{r:?}") };
        let mut mask = vec![0u8; n as usize];
        f.g.read_mem(buf, &mut mask).unwrap();
        let set: u32 = mask.iter().map(|b| b.count_ones()).sum();
        assert_eq!(set, 1.min(host_cpus as u32), "pid {pid}: {mask:?}");
    }
    // Errors stay the kernel's.
    let a = [0, 7, f.g.put(&[0; 8]), 0, 0, 0];
    let r = getaffinity(&f, a);
    assert!(matches!(r, Reply::Error(Errno::EINVAL)), "{r:?}");
}

/// sched_getaffinity with the arguments `a`, dispatched by the fake.
fn getaffinity(f: &Fake, a: [u64; 6]) -> Reply {
    dispatch(
        &f.ctx,
        &f.g,
        &SyscallArgs {
            nr: libc::SYS_sched_getaffinity,
            args: a,
        },
    )
}

fn open_text(f: &Fake, nr: i64, a: [u64; 6]) -> Result<(String, i32), Errno> {
    match dispatch(&f.ctx, &f.g, &SyscallArgs { nr, args: a }) {
        Reply::InstallFd { fd, .. } => {
            // SAFETY: (test only) fcntl on a descriptor we own.
            let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
            let mut s = String::new();
            fs::File::from(fd).read_to_string(&mut s).unwrap();
            Ok((s, fl))
        }
        Reply::Error(e) => Err(e),
        r => panic!("{r:?}"),
    }
}

#[test]
fn synthetic_proc_files_whatever_the_path() {
    let t = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/proc/meminfo", t.path().join("mem")).unwrap();
    std::os::unix::fs::symlink("/proc", t.path().join("proc")).unwrap();
    let mut f = Fake::new(t.path());
    f.ctx.set_limits(GuestLimits {
        memory_limit: Some(512 << 20),
        memory_limit_now: None,
        memory_usage: Some(Box::new(|| Some(100 << 20))),
        memory_stat: None,
        cpus: Some(1),
        cpus_now: None,
        pids: None,
        pids_now: None,
    });
    let proc_fd = 7;
    f.g.give_fd(proc_fd, open_path(Path::new("/proc"), libc::O_PATH));
    let want = "MemTotal:         524288 kB\nMemFree:          421888 kB\n";
    let ro = libc::O_RDONLY as u64;
    for p in [
        "/proc/meminfo",
        "/proc/./meminfo",
        "/proc/1/../meminfo",
        "/proc/self/../meminfo",
        "mem",
        "proc/meminfo",
    ] {
        let (text, fl) =
            open_text(&f, libc::SYS_open, [f.g.put(&cstr(p)), ro, 0, 0, 0, 0]).unwrap();
        assert!(text.starts_with(want), "{p}: {text}");
        assert_eq!(fl & libc::O_ACCMODE, libc::O_RDONLY, "{p}");
    }
    let a = [proc_fd as u64, f.g.put(&cstr("meminfo")), ro, 0, 0, 0];
    let (text, _) = open_text(&f, libc::SYS_openat, a).unwrap();
    assert!(text.starts_with(want), "dirfd: {text}");
    let a = [
        proc_fd as u64,
        f.g.put(&cstr("cpuinfo")),
        ro | libc::O_NONBLOCK as u64,
        0,
        0,
        0,
    ];
    let (text, fl) = open_text(&f, libc::SYS_openat, a).unwrap();
    assert_eq!(text.matches("processor\t:").count(), 1, "{text}");
    assert!(fl & libc::O_NONBLOCK != 0);
    // Other /proc files are the kernel's.
    let (text, _) = open_text(
        &f,
        libc::SYS_open,
        [f.g.put(&cstr("/proc/version")), ro, 0, 0, 0, 0],
    )
    .unwrap();
    assert!(text.starts_with("Linux"), "{text}");
}

#[test]
fn no_limits_no_synthetic_files() {
    let f = Fake::new(Path::new("/"));
    let (text, _) = open_text(
        &f,
        libc::SYS_open,
        [f.g.put(&cstr("/proc/meminfo")), 0, 0, 0, 0, 0],
    )
    .unwrap();
    let host = fs::read_to_string("/proc/meminfo").unwrap();
    assert_eq!(text.lines().next(), host.lines().next());
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}
