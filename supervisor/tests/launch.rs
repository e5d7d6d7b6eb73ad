//! Tests that launch real sandboxes (as root and, run by hand with
//! `runuser -u USER -- <test binary>`, as an unprivileged user).
//!
//! This file has its own harness (`harness = false`): `launch` forks the
//! calling process, which is safe only while it has one thread — in a
//! multi-threaded test runner the child could inherit an allocator lock
//! another test thread held, and hang. So the tests run one after another
//! on the main thread, and the summary line is the plain
//! "N passed, N failed" that CI reads.
//!
//! Most use a filter that allows every call, because nothing here serves
//! notifications; one uses the real policy with a static program that
//! makes only passed calls, and one checks that a serviced call traps.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::unistd::{getgid, getuid};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use nix::sys::wait::waitpid;
use nix::unistd::{write, Pid};
use supervisor::launch::*;
use supervisor::sys::process::Forked;

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory under /tmp, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("launch-test-{}-{n}-{tag}", std::process::id()));
        fs::create_dir_all(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn config(cmd: &[&str]) -> LaunchConfig {
    let mut cfg = LaunchConfig::new(cmd.iter().map(OsString::from).collect(), allow_all_filter());
    cfg.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    cfg
}

fn run(cfg: &LaunchConfig) -> Result<Outcome, LaunchError> {
    let _g = serial();
    let sandbox = launch(cfg)?;
    sandbox.start()?;
    sandbox.wait()
}

fn exit_codes() {
    assert_eq!(run(&config(&["/bin/true"])), Ok(Outcome::Exited(0)));
    assert_eq!(run(&config(&["true"])), Ok(Outcome::Exited(0)));
    assert_eq!(
        run(&config(&["/bin/sh", "-c", "exit 3"])),
        Ok(Outcome::Exited(3))
    );
    assert_eq!(
        run(&config(&["/bin/sh", "-c", "kill -9 $$"])),
        Ok(Outcome::Signaled(9))
    );
}

fn exec_failures() {
    let e = run(&config(&["no-such-command-xyz"])).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (127, "no-such-command-xyz: command not found")
    );
    let e = run(&config(&["/no/such/file"])).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (127, "/no/such/file: No such file or directory")
    );
    let e = run(&config(&["/etc/passwd"])).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (126, "/etc/passwd: Permission denied")
    );
    let e = run(&config(&["/usr"])).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (126, "/usr: Permission denied")
    );
}

fn setup_failures() {
    let mut cfg = config(&["/bin/true"]);
    cfg.workdir = Some("/no-such-dir".into());
    let e = run(&cfg).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (125, "workdir /no-such-dir: No such file or directory")
    );

    let mut cfg = config(&["/bin/true"]);
    cfg.mounts = vec![vfs::mounts::MountSpec::parse_rw("/missing-xyz:/data").unwrap()];
    let e = run(&cfg).unwrap_err();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (
            125,
            "--rw /missing-xyz:/data: /missing-xyz: No such file or directory"
        )
    );

    let mut cfg = config(&["/bin/true"]);
    cfg.hostname = "x".repeat(100);
    assert_eq!(run(&cfg).unwrap_err().exit_code, 125);

    let e = launch(&config(&[])).err().unwrap();
    assert_eq!((e.exit_code, e.message.as_str()), (125, "no command given"));
}

fn kill_and_forward() {
    let _g = serial();
    let sandbox = launch(&config(&["/bin/sleep", "100"])).unwrap();
    sandbox.start().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    sandbox.kill();
    assert_eq!(sandbox.wait(), Ok(Outcome::Signaled(9)));

    // A forwarded SIGTERM reaches the main process (default action: die).
    let sandbox = launch(&config(&["/bin/sleep", "100"])).unwrap();
    sandbox.start().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    sandbox.forward_signal(libc::SIGTERM);
    assert_eq!(sandbox.wait(), Ok(Outcome::Signaled(libc::SIGTERM)));

    // Never started: wait() refuses rather than hang.
    let sandbox = launch(&config(&["/bin/true"])).unwrap();
    assert_eq!(sandbox.wait().unwrap_err().exit_code, 125);
    // Dropped without wait: init is killed and reaped.
    let sandbox = launch(&config(&["/bin/true"])).unwrap();
    let pid = sandbox.init_pid;
    drop(sandbox);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

/// The script behind `view_contents`: one `name=value` line per check.
const PROBE: &str = r#"
exec >/out/result 2>&1
t() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
for f in shadow gshadow sudoers; do t "etc_$f" "test -e /etc/$f"; done
t etc_ssh_keys 'ls /etc/ssh/ssh_host_* 2>/dev/null | grep -q .'
for d in root home var run srv mnt opt boot; do t "dir_$d" "test -e /$d"; done
t tmp_write 'echo x > /tmp/f && test -s /tmp/f'
t usr_write 'echo x > /usr/launch-test-file'
t usr_bin_write 'echo x > /usr/bin/launch-test-file'
t cwd_write 'touch ./launch-test-file'
t dev_null 'echo x > /dev/null'
t dev_shm 'echo x > /dev/shm/x'
t dev_create 'touch /dev/newfile'
t ro_read 'test -s /data/f'
t ro_write 'touch /data/g'
t rw_write 'echo hi > /rw/file'
t tmpfs_write 'echo hi > /scratch/f'
t quota 'dd if=/dev/zero of=/tmp/big bs=1M count=32'
echo "enospc=$(dd if=/dev/zero of=/tmp/big2 bs=1M count=32 2>&1 | grep -c 'No space left')"
echo "tmpfs_kb=$(df -k /scratch | tail -1 | awk '{print $2}')"
echo "uid=$(id -u)"
echo "gid=$(id -g)"
echo "user=$(id -un)"
echo "hostname=$(cat /proc/sys/kernel/hostname)"
echo "etc_hostname=$(cat /etc/hostname)"
echo "pid=$$"
echo "umask=$(umask)"
echo "cwd=$(pwd)"
echo "sys=$(ls -A /sys /sys/devices /sys/devices/system | tr '\n' ' ')"
echo "root_ls=$(ls / | tr '\n' ' ')"
echo "dev_ls=$(ls /dev | tr '\n' ' ')"
grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -d ' \t' | sed 's/:/=/'
echo "fds=$(ls /proc/self/fd | tr '\n' ' ')"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
"#;

fn probe(tweak: impl FnOnce(&mut LaunchConfig, &Path)) -> HashMap<String, String> {
    let out = TempDir::new("out");
    fs::set_permissions(&out.0, fs::Permissions::from_mode(0o777)).unwrap();
    let mut cfg = config(&["/bin/sh", "-c", PROBE]);
    cfg.mounts
        .push(vfs::mounts::MountSpec::parse_rw(&format!("{}:/out", out.0.display())).unwrap());
    tweak(&mut cfg, &out.0);
    assert_eq!(run(&cfg), Ok(Outcome::Exited(0)));
    let text = fs::read_to_string(out.0.join("result")).unwrap();
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

fn view_contents() {
    let data = TempDir::new("data");
    fs::write(data.0.join("f"), "data").unwrap();
    let rw = TempDir::new("rw");
    let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
    let r = probe(|cfg, _| {
        cfg.hostname = "testbox".into();
        cfg.disk_size = 16 << 20;
        cfg.mounts.push(
            vfs::mounts::MountSpec::parse_ro(&format!("{}:/data", data.0.display())).unwrap(),
        );
        cfg.mounts
            .push(vfs::mounts::MountSpec::parse_rw(&format!("{}:/rw", rw.0.display())).unwrap());
        cfg.mounts
            .push(vfs::mounts::MountSpec::parse_tmpfs("/scratch:1m").unwrap());
    });
    let get = |k: &str| {
        r.get(k)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{k} missing in {r:?}"))
    };
    for k in ["etc_shadow", "etc_gshadow", "etc_sudoers", "etc_ssh_keys"] {
        assert_eq!(get(k), "no", "{k}");
    }
    for d in ["root", "home", "var", "run", "srv", "mnt", "opt", "boot"] {
        assert_eq!(get(&format!("dir_{d}")), "no", "/{d} visible: {r:?}");
    }
    assert_eq!(get("tmp_write"), "yes");
    // The top of each overlay is the layer's own directory, so the guest
    // may write there whatever its uid; deeper, the host's permissions hold.
    assert_eq!(get("usr_write"), "yes");
    assert_eq!(get("usr_bin_write"), if uid == 0 { "yes" } else { "no" });
    assert!(
        !Path::new("/usr/launch-test-file").exists(),
        "a write reached the host's /usr"
    );
    assert!(
        !Path::new("/usr/bin/launch-test-file").exists(),
        "a write reached the host's /usr/bin"
    );
    assert_eq!(get("cwd_write"), "no");
    assert_eq!(get("dev_null"), "yes");
    assert_eq!(get("dev_shm"), "yes");
    assert_eq!(get("dev_create"), "no");
    assert_eq!(get("ro_read"), "yes");
    assert_eq!(get("ro_write"), "no");
    assert_eq!(get("rw_write"), "yes");
    assert_eq!(fs::read_to_string(rw.0.join("file")).unwrap(), "hi\n");
    assert_eq!(get("tmpfs_write"), "yes");
    assert_eq!(get("tmpfs_kb"), "1024");
    assert_eq!(get("quota"), "no");
    assert_eq!(get("enospc"), "1");
    assert_eq!(get("uid"), uid.to_string());
    assert_eq!(get("gid"), gid.to_string());
    assert_eq!(get("user"), if uid == 0 { "root" } else { "sandbox" });
    assert_eq!(get("hostname"), "testbox");
    assert_eq!(get("etc_hostname"), "testbox");
    assert_eq!(get("pid"), "2");
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(get("umask"), umask);
    assert_eq!(
        get("cwd"),
        std::env::current_dir().unwrap().to_str().unwrap()
    );
    assert_eq!(
        get("sys"),
        "/sys: devices  /sys/devices: system  /sys/devices/system: cpu"
    );
    assert_eq!(get("CapEff"), "0000000000000000");
    assert_eq!(get("CapPrm"), "0000000000000000");
    assert_eq!(get("CapBnd"), "0000000000000000");
    assert_eq!(get("CapAmb"), "0000000000000000");
    assert_eq!(get("NoNewPrivs"), "1");
    assert_eq!(get("Seccomp"), "2");
    // Only stdio (and ls's own directory fd) are open in the guest.
    assert_eq!(get("fds"), "0 1 2 3");
    // init, sh, and the pipeline's processes: nothing of the host.
    assert!(get("procs").parse::<u32>().unwrap() < 10);
    for entry in [
        "null", "zero", "full", "random", "urandom", "pts", "ptmx", "shm", "fd", "stdin", "stdout",
        "stderr",
    ] {
        assert!(
            get("dev_ls").split(' ').any(|e| e == entry),
            "/dev/{entry} missing: {}",
            get("dev_ls")
        );
    }
}

fn root_is_the_view() {
    let _g = serial();
    // Start in /tmp: the host cwd (e.g. /work/...) would be bound and show
    // up as a top-level name of its own.
    let mut cfg = config(&["/bin/true"]);
    cfg.workdir = Some("/tmp".into());
    let sandbox = launch(&cfg).unwrap();
    let names: Vec<String> = {
        let dir = fs::read_dir(format!("/proc/{}/root/", sandbox.init_pid)).unwrap();
        let mut v: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    for want in ["dev", "etc", "proc", "sys", "tmp", "usr"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    for absent in ["root", "home", "var", "oldroot", "newroot", "upper", "work"] {
        assert!(
            !names.iter().any(|n| n == absent),
            "{absent} present in {names:?}"
        );
    }
    sandbox.start().unwrap();
    assert_eq!(sandbox.wait(), Ok(Outcome::Exited(0)));
}

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

fn real_filter() {
    let dir = TempDir::new("static");
    // write(1, "hi\n", 3); exit_group(getpid() == 2 ? 3 : 100)
    let body = r#"sys(1, 1, (long)"hi\n", 3); sys(231, sys(39, 0, 0, 0) == 2 ? 3 : 100, 0, 0);"#;
    let Some(hi) = static_program(&dir.0, "hi", body) else {
        eprintln!("gcc not available; skipping");
        return;
    };
    let mount = vfs::mounts::MountSpec::parse_ro(&format!("{}:/t", dir.0.display())).unwrap();
    let mut cfg = config(&["/t/hi"]);
    cfg.filter = sandbox_syscalls::policy::bpf::compile();
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

fn count_fds() -> usize {
    fs::read_dir("/proc/self/fd").unwrap().count()
}

fn count_mounts() -> usize {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .count()
}

fn fifty_launches_leave_nothing() {
    let cfg = config(&["/bin/true"]);
    assert_eq!(run(&cfg), Ok(Outcome::Exited(0)));
    let _g = serial();
    let (fds, mounts) = (count_fds(), count_mounts());
    for _ in 0..50 {
        let sandbox = launch(&cfg).unwrap();
        sandbox.start().unwrap();
        assert_eq!(sandbox.wait(), Ok(Outcome::Exited(0)));
    }
    assert_eq!(count_fds(), fds, "descriptors leaked");
    assert_eq!(count_mounts(), mounts, "mounts leaked to the host");
    assert_eq!(
        nix::sys::wait::waitpid(None, Some(nix::sys::wait::WaitPidFlag::WNOHANG)),
        Err(Errno::ECHILD)
    );
}

/// Whether `pid` is gone (or a zombie nobody reaped yet).
fn dead(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(") ")
            .map(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
            .unwrap_or(true),
    }
}

fn guest_dies_with_the_supervisor() {
    let _g = serial();
    // Orphaned init comes back to us, so that we can reap it.
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let (rx, tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
    // The child plays the supervisor: it launches, then waits.
    let supervisor = match supervisor::sys::process::fork_single_threaded().unwrap() {
        Forked::Child => {
            let sandbox = launch(&config(&["/bin/sleep", "1000"])).unwrap();
            sandbox.start().unwrap();
            let _ = write(&tx, &sandbox.init_pid.as_raw().to_le_bytes());
            let _ = sandbox.wait();
            supervisor::sys::process::exit_now(0)
        }
        Forked::Parent(pid) => pid,
    };
    drop(tx);
    let mut buf = [0u8; 4];
    assert_eq!(
        nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&rx), &mut buf),
        Ok(4)
    );
    let init = i32::from_le_bytes(buf);
    // Find the guest (init's child) once it has exec'd sleep.
    let deadline = Instant::now() + Duration::from_secs(5);
    let guest = loop {
        let children =
            fs::read_to_string(format!("/proc/{init}/task/{init}/children")).unwrap_or_default();
        if let Some(pid) = children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok())
        {
            if fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap_or_default()
                .trim()
                == "sleep"
            {
                break pid;
            }
        }
        assert!(Instant::now() < deadline, "guest never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    nix::sys::signal::kill(supervisor, Signal::SIGKILL).unwrap();
    let _ = waitpid(supervisor, None);
    let killed = Instant::now();
    while !(dead(init) && dead(guest)) {
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "guest outlived its supervisor"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = waitpid(Pid::from_raw(init), None);
    nix::sys::prctl::set_child_subreaper(false).unwrap();
}

fn main() {
    let tests: &[(&str, fn())] = &[
        ("exit_codes", exit_codes),
        ("exec_failures", exec_failures),
        ("setup_failures", setup_failures),
        ("kill_and_forward", kill_and_forward),
        ("view_contents", view_contents),
        ("root_is_the_view", root_is_the_view),
        ("real_filter", real_filter),
        ("fifty_launches_leave_nothing", fifty_launches_leave_nothing),
        (
            "guest_dies_with_the_supervisor",
            guest_dies_with_the_supervisor,
        ),
    ];
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        match std::panic::catch_unwind(test) {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 101 });
}
