//! The anchor: the process `create` forks for a container, whose pid
//! goes to `--pid-file` and `state`. It is what the engine's shim (a
//! subreaper) reaps and signals, and what engines look into as "the
//! container's process": `podman top` joins `/proc/<pid>/ns/mnt` and
//! lists that namespace's /proc, and Docker's hooks and `nsenter -t`
//! use its namespaces. runc's answer is the container's first process;
//! ours cannot be the monitor, which serves the guest from the host's
//! namespaces (its /proc shows every host process). So the anchor is a
//! small single-threaded parent of the monitor: it starts the session,
//! enters the container's network namespace (`netns.rs`), joins the
//! container's cgroup, forks the monitor (then joins the v1
//! pids cgroup, which the monitor stays out of), and once the sandbox
//! is up joins the sandbox's mount, UTS and IPC namespaces
//! (those of init, best effort: a runtime without CAP_SYS_ADMIN stays in
//! its own). Then it only passes the signals `kill` sends on to the
//! monitor and exits with the monitor's status (128+N when the monitor
//! died of signal N). SIGKILL of the anchor ends the monitor (its
//! PDEATHSIG) and so the sandbox.
//!
//! Under rootless Podman the anchor is pid 1 of a pid namespace of its
//! own (`create` clones it so), owned by Podman's user namespace:
//! Podman's `cp` enters the pid namespace of the container's pid, and
//! may not enter the host's. The monitor and the sandbox are in it too,
//! so the anchor mounts that namespace's procfs over /proc in a mount
//! namespace of its own (the monitor reads its guests' /proc/<pid> by the
//! pids its namespace gives them); `create` finds init's host pid by
//! its pid in the anchor's namespace ([`host_pid_of_init`]). Only
//! SIGKILL and the signals it waits for reach a namespace's pid 1 from
//! outside: the forwarded ones, which is what `kill` sends.
//!
//! Owns that process; not the monitor (`monitor.rs`), nor the state.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::mount::{mount, MsFlags};
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{dup2, getpid, getppid, pipe2, setsid, Pid};

use super::monitor::{self, MonitorPlan};
use sandbox::config::SandboxConfig;
/// The signals `kill` may send that the anchor passes on (the monitor
/// passes them to the guest, as init does); SIGCHLD tells it the monitor ended.
use sandbox::launch::FORWARDED;
use sandbox::sys::process::{fork_single_threaded, sigwaitinfo, Forked};

/// The sandbox's namespaces the anchor joins (the mount one first). Not
/// the network one: the anchor stays in the container's (`netns.rs`),
/// where the engine puts its interface and looks for it.
const JOINED: &[(&str, CloneFlags)] = &[
    ("mnt", CloneFlags::CLONE_NEWNS),
    ("uts", CloneFlags::CLONE_NEWUTS),
    ("ipc", CloneFlags::CLONE_NEWIPC),
];

/// Runs the anchor in the process `create` forked; never returns.
/// `ready` is the write end of the pipe `create` reads: "ok" and init's
/// host pid, or "E" and the error (relayed from the monitor).
pub fn run(plan: MonitorPlan, mut config: SandboxConfig, ready: OwnedFd) -> ! {
    let mut ready = File::from(ready);
    let _ = setsid();
    if getpid().as_raw() == 1 {
        if let Err(e) = mount_own_proc() {
            fail(&mut ready, &e);
        }
    }
    match plan.network.enter(&plan.net_sysctls) {
        Ok(true) => {}
        // Still in the runtime's own namespace (no new one could be
        // made): the guest keeps its loopback only, as before.
        Ok(false) => config.net = Default::default(),
        Err(e) => fail(&mut ready, &e),
    }
    let joined = plan.cgroup.join_monitor(getpid().as_raw());
    let pipe = joined.and_then(|_| {
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("creating a pipe: {}", e.desc()))
    });
    let (from_monitor, to_anchor) = match pipe {
        Ok(p) => p,
        Err(e) => fail(&mut ready, &e),
    };
    let anchor = getpid();
    let cgroup = plan.cgroup.clone();
    let monitor = match fork_single_threaded() {
        Err(e) => fail(&mut ready, &format!("starting the monitor: {}", e.desc())),
        Ok(Forked::Child) => {
            drop(ready);
            drop(from_monitor);
            let orphaned = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err();
            if orphaned || getppid() != anchor {
                std::process::exit(125);
            }
            monitor::run(plan, config, to_anchor)
        }
        Ok(Forked::Parent(pid)) => pid,
    };
    drop(to_anchor);
    // The monitor (and its threads) stay out of the pids limit; the
    // engine's shim reads the container's pids through our cgroup.
    if let Err(e) = cgroup.join_anchor_pids(anchor.as_raw()) {
        fail(&mut ready, &e);
    }
    // The engine waits for the end of the container's stdio (with a
    // terminal, before it reaps anything): only the guest may hold it.
    release_stdio();
    let mask = forwarded_mask();
    let _ = mask.thread_block();
    let tree = super::plain_root::copy_of_tree(&config);
    relay_ready(File::from(from_monitor), ready, tree);
    std::process::exit(forward_until_exit(monitor, &mask))
}

/// In a pid namespace of its own: this namespace's procfs at /proc, in
/// a mount namespace of its own whose mounts no longer propagate back.
fn mount_own_proc() -> Result<(), String> {
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_SLAVE, none)
        .map_err(|e| format!("making the anchor's mounts private: {}", e.desc()))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, none)
        .map_err(|e| format!("mounting the anchor's /proc: {}", e.desc()))
}

/// The host pid (as `create`'s /proc names it) of the sandbox's init,
/// which the anchor's own pid namespace calls `pid`: the child of the
/// anchor's child (the monitor) whose pid one level beneath ours is `pid`.
pub fn host_pid_of_init(anchor: i32, pid: i32) -> Option<i32> {
    let all: Vec<(i32, i32, Vec<i32>)> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
            let (ppid, ns_pids) = parent_and_ns_pids(&status)?;
            Some((p, ppid, ns_pids))
        })
        .collect();
    let monitor = all.iter().find(|(_, ppid, _)| *ppid == anchor)?.0;
    all.iter()
        .find(|(_, ppid, ns)| *ppid == monitor && ns.get(1) == Some(&pid))
        .map(|(p, _, _)| *p)
}

/// `PPid` and `NSpid` (from the reader's pid namespace down) of a
/// /proc/<pid>/status text.
fn parent_and_ns_pids(status: &str) -> Option<(i32, Vec<i32>)> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
    };
    let ppid = field("PPid")?.trim().parse().ok()?;
    let ns = field("NSpid")?
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    Some((ppid, ns))
}

fn fail(ready: &mut File, message: &str) -> ! {
    let _ = ready.write_all(format!("E{message}").as_bytes());
    std::process::exit(125)
}

/// Points stdin, stdout and stderr at /dev/null (the anchor prints
/// nothing; its errors go to `create` on the pipe).
fn release_stdio() {
    if let Ok(null) = File::options().read(true).write(true).open("/dev/null") {
        for fd in 0..3 {
            let _ = dup2(null.as_raw_fd(), fd);
        }
    }
}

fn forwarded_mask() -> SigSet {
    let mut set = SigSet::empty();
    FORWARDED.iter().for_each(|s| set.add(*s));
    set.add(Signal::SIGCHLD);
    set
}

/// Reads the monitor's answer to its end; on "ok<init pid>" joins the
/// sandbox's namespaces first, so that whoever `create`'s return lets
/// look at the anchor already sees the sandbox. Passes the answer on.
/// `tree`: the bundle's rootfs as it is on the host, stacked on `/` of
/// the anchor's copy of the sandbox's mount namespace (`plain_root.rs`).
fn relay_ready(mut from_monitor: File, mut ready: File, tree: Option<OwnedFd>) {
    let mut answer = String::new();
    let _ = from_monitor.read_to_string(&mut answer);
    let init = answer
        .strip_prefix("ok")
        .and_then(|p| p.parse::<i32>().ok());
    if let Some(init) = init.filter(|p| *p > 0) {
        join_namespaces(init);
        if let Some(tree) = tree {
            if let Err(e) = super::plain_root::stack(tree) {
                fail(&mut ready, &e);
            }
        }
    }
    let _ = ready.write_all(answer.as_bytes());
}

/// Joins the sandbox's namespaces, those of its init (best effort).
fn join_namespaces(init: i32) {
    let opened: Vec<(File, CloneFlags)> = (JOINED.iter())
        .filter_map(|(name, flag)| {
            Some((File::open(format!("/proc/{init}/ns/{name}")).ok()?, *flag))
        })
        .collect();
    for (ns, flag) in opened {
        let _ = setns(ns, flag);
    }
}

/// Passes the forwarded signals to the monitor until it ends; its exit
/// code (128+N when killed by signal N).
fn forward_until_exit(monitor: Pid, mask: &SigSet) -> i32 {
    loop {
        match waitpid(monitor, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, sig, _)) => return 128 + sig as i32,
            Err(_) => return 125,
            Ok(_) => {}
        }
        let Ok(info) = sigwaitinfo(mask) else {
            continue;
        };
        if info.signo != Signal::SIGCHLD as i32 {
            if let Ok(sig) = Signal::try_from(info.signo) {
                let _ = kill(monitor, sig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parent_and_ns_pids;

    #[test]
    fn status_gives_the_parent_and_the_pids_of_each_namespace() {
        let status = "Name:\tsupervisor-init\nPPid:\t4021\nNSpid:\t4030\t7\t1\n";
        assert_eq!(parent_and_ns_pids(status), Some((4021, vec![4030, 7, 1])));
        assert_eq!(parent_and_ns_pids("PPid:\tx\nNSpid:\t1\n"), None);
        assert_eq!(parent_and_ns_pids("Name:\ta\n"), None);
    }
}
