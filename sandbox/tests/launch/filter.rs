//! The real seccomp policy on a launched guest: a static program making
//! only passed calls runs to its exit, and a serviced call (openat)
//! reaches the listener. Static programs without libc, so that nothing
//! but the calls written here is made.

use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use sandbox::launch::*;

use super::{config, run, serial, TempDir};

/// A static program without libc that makes only the given raw calls.
fn static_program(dir: &Path, name: &str, body: &str) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    let code = format!(
        r#"static long sys(long n, long a, long b, long c) {{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}}
void _start(void) {{ {body} for (;;) sys(231, 1, 0, 0); }}
"#
    );
    fs::write(&src, code).unwrap();
    let ok = Command::new("gcc")
        .args(["-static", "-nostdlib", "-O2", "-fno-stack-protector", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(bin)
}

pub fn real_filter() {
    let dir = TempDir::new("static");
    // write(1, "hi\n", 3); exit_group(getpid() == 2 ? 3 : 100)
    let body = r#"sys(1, 1, (long)"hi\n", 3); sys(231, sys(39, 0, 0, 0) == 2 ? 3 : 100, 0, 0);"#;
    let Some(hi) = static_program(&dir.0, "hi", body) else {
        eprintln!("gcc not available; skipping");
        return;
    };
    let mount = vfs::mounts::MountSpec::parse_ro(&format!("{}:/t", dir.0.display())).unwrap();
    let mut cfg = config(&["/t/hi"]);
    cfg.filter = sandbox_syscalls::policy::bpf::compile().into();
    cfg.mounts = vec![mount.clone()];
    assert!(hi.exists());
    assert_eq!(run(&cfg), Ok(Outcome::Exited(3)));

    // openat is serviced: the call must show up on the listener.
    let body = r#"sys(257, -100, (long)"/", 0); sys(231, 4, 0, 0);"#;
    static_program(&dir.0, "open", body).unwrap();
    cfg.command = vec!["/t/open".into()];
    let _g = serial();
    let sandbox = launch(&cfg).unwrap();
    sandbox.start().unwrap();
    let mut fds = [nix::poll::PollFd::new(
        sandbox.listener.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    let n = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(5000u16)).unwrap();
    assert_eq!(n, 1, "no notification for openat");
    sandbox.kill();
    assert_eq!(sandbox.wait(), Ok(Outcome::Signaled(9)));
}
