//! A sandbox's life: exit codes and exec errors as the guest's, setup
//! errors as 125 with one line, kill and signal forwarding, nothing left
//! behind after fifty launches, and no guest outliving its supervisor.
//! Not what the guest sees inside (`view.rs`) or its filter (`filter.rs`).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use nix::sys::wait::waitpid;
use nix::unistd::{write, Pid};
use sandbox::launch::*;
use sandbox::sys::process::Forked;

use super::{config, run, serial};

pub fn exit_codes() {
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

pub fn exec_failures() {
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

pub fn setup_failures() {
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

/// Hooks whose step while init builds the view fails only after init has
/// failed and exited: the step's own error is then a symptom (here, as
/// in the race CI once saw, init's namespaces are gone), and the launch
/// must report init's reason instead.
struct FailsAfterInit;

impl InitHooks for FailsAfterInit {
    fn setting_up(&self, init: Pid, _: Namespaces<'_>) -> Result<(), String> {
        use nix::sys::wait::{waitid, Id, WaitPidFlag};
        // WNOWAIT: init stays a zombie for the launch to reap.
        waitid(Id::Pid(init), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
            .map_err(|e| format!("waitid: {e}"))?;
        open_namespace(init, "net").map(drop)
    }
    fn set_up(&self, _: Pid) -> Result<(), String> {
        Ok(())
    }
}

pub fn a_step_that_fails_after_init_reports_init_s_reason() {
    let _g = serial();
    let mut cfg = config(&["/bin/true"]);
    cfg.workdir = Some("/no-such-dir".into());
    let e = launch_with(&cfg, &FailsAfterInit).err().unwrap();
    assert_eq!(
        (e.exit_code, e.message.as_str()),
        (125, "workdir /no-such-dir: No such file or directory")
    );
}

pub fn kill_and_forward() {
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

fn count_fds() -> usize {
    fs::read_dir("/proc/self/fd").unwrap().count()
}

fn count_mounts() -> usize {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .count()
}

pub fn fifty_launches_leave_nothing() {
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
        Ok(s) => procfs::StatLine::parse(&s)
            .and_then(|l| l.state())
            .is_none_or(|state| state == 'Z' || state == 'X'),
    }
}

pub fn guest_dies_with_the_supervisor() {
    let _g = serial();
    // Orphaned init comes back to us, so that we can reap it.
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let (rx, tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
    // The child plays the supervisor: it launches, then waits.
    let supervisor = match sandbox::sys::process::fork_single_threaded().unwrap() {
        Forked::Child => {
            let sandbox = launch(&config(&["/bin/sleep", "1000"])).unwrap();
            sandbox.start().unwrap();
            let _ = write(&tx, &sandbox.init_pid.as_raw().to_le_bytes());
            let _ = sandbox.wait();
            sandbox::sys::process::exit_now(0)
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
