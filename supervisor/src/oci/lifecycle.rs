//! The lifecycle commands: `create` (bundle → monitor, state record,
//! createRuntime/prestart hooks), `start` (opens the monitor's FIFO, then
//! poststart hooks), `kill` and `delete` (poststop hooks, cgroup and
//! state removed; a missing container is not an error).
//!
//! Owns the order of each command's steps; the monitor, the record, the
//! cgroup and the hooks are their own modules.

use std::fs;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::CloneFlags;
use nix::sys::signal::{kill, Signal};
use nix::sys::stat::Mode;
use nix::unistd::{mkfifo, pipe2, Pid};

use super::anchor;
use super::bundle::Bundle;
use super::cgroup::ContainerCgroup;
use super::cli::{CreateArgs, DeleteArgs, KillArgs};
use super::hooks;
use super::log::{rfc3339_now, Log};
use super::loopback::Loopback;
use super::monitor::MonitorPlan;
use super::state::{container_dir, proc_stat, Record, Status};
use sandbox::config::{OutsideLimits, SandboxConfig, SharedLoopback};
use sandbox::launch::engine_overlay::{remove_workdir, EngineOverlay};
use sandbox::sys::process::{clone_process, fork_single_threaded, Forked};

/// `create`: everything up to the guest's exec.
/// `systemd_cgroup`: `--systemd-cgroup`, the cgroupsPath is systemd's form.
pub fn create(root: &Path, log: &Log, a: &CreateArgs, systemd_cgroup: bool) -> Result<(), String> {
    let dir = container_dir(root, &a.id)?;
    if dir.join("state.json").exists() {
        return Err(format!("container with id {} already exists", a.id));
    }
    let bundle = Bundle::load(&a.bundle)?;
    let (config, warnings) = bundle.sandbox_config(root)?;
    warnings.iter().for_each(|w| log.warn(w));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    // Read from the engine's mount once: the record keeps it for `delete`.
    let workdir = overlay_workdir(&bundle);
    let made = Made {
        dir: &dir,
        overlay_workdir: workdir.clone(),
    };
    let result = create_in(made, root, log, a, &bundle, config, systemd_cgroup);
    if result.is_err() {
        let _ = fs::remove_dir_all(&dir);
        if let Some(work) = &workdir {
            let _ = remove_workdir(work);
        }
    }
    result
}

/// What `create` made before `create_in` and removes if it fails: the
/// container's directory, and the overlay's work directory (made by the
/// trial, `user::overlay_root`) that its record names.
struct Made<'a> {
    dir: &'a Path,
    overlay_workdir: Option<PathBuf>,
}

fn create_in(
    made: Made<'_>,
    root: &Path,
    log: &Log,
    a: &CreateArgs,
    bundle: &Bundle,
    mut config: SandboxConfig,
    systemd_cgroup: bool,
) -> Result<(), String> {
    let dir = made.dir;
    config.terminal = bundle.terminal_for(a.console_socket.as_deref())?;
    // A pod's pid namespace: another container's sandbox's, or an error.
    config.join.pid = super::namespaces::joined_pid(root, &bundle.spec)?;
    let start_fifo = dir.join("start");
    mkfifo(&start_fifo, Mode::S_IRUSR | Mode::S_IWUSR)
        .map_err(|e| format!("{}: {}", start_fifo.display(), e.desc()))?;
    let path = bundle.cgroups_path();
    let cgroup = match super::cli::rootless_caller() {
        true => {
            ContainerCgroup::create_rootless(path.as_deref(), &a.id, bundle.resources().as_ref())?
        }
        false => ContainerCgroup::create(path.as_deref(), &a.id, systemd_cgroup)?,
    };
    if let Some(res) = bundle.resources() {
        if let Err(e) = cgroup.set_resources(&res) {
            cgroup.remove();
            return Err(e);
        }
    }
    let plan = MonitorPlan {
        cgroup: cgroup.clone(),
        start_fifo,
        exec_socket: dir.join("exec.sock"),
        log: dir.join("monitor.log"),
        network: super::netns::NetNamespace::of(&bundle.spec),
        net_sysctls: super::netns::net_sysctls(&bundle.spec),
    };
    // A container joining another's network namespace shares its loopback.
    let shared = super::loopback::shared_by(root, &plan.network);
    let token = match &shared {
        Some(l) => l.token.clone(),
        None => super::loopback::fresh_token(),
    };
    config.net.token = Some(token.clone());
    config.net.shared_loopback = (shared.as_ref()).map(|l| SharedLoopback { init: l.init });
    // Enforced by the container's cgroup; the guest is told of them.
    config.outside_limits = Some(OutsideLimits {
        cgroup: Some(cgroup.outside()),
        ..bundle.outside_limits()
    });
    // A pod's IPC, UTS and pid namespaces, held open until the anchor is forked.
    let pinned = match super::namespaces::pin(&mut config.join) {
        Ok(files) => files,
        Err(e) => {
            cgroup.remove();
            return Err(e);
        }
    };
    let (pid, init_pid) = match spawn_monitor(plan, config) {
        Ok(pids) => pids,
        Err(e) => {
            cgroup.remove();
            return Err(e);
        }
    };
    drop(pinned);
    let hooks = bundle.spec.hooks().clone().unwrap_or_default();
    let record = Record {
        id: a.id.clone(),
        bundle: bundle.dir.clone(),
        rootfs: bundle.rootfs.clone(),
        pid,
        pid_start: proc_stat(pid).map(|s| s.1).unwrap_or(0),
        init_pid,
        created: rfc3339_now(),
        annotations: bundle.annotations(),
        started: false,
        cgroup: cgroup.clone(),
        poststart: hooks.poststart().clone().unwrap_or_default(),
        poststop: hooks.poststop().clone().unwrap_or_default(),
        loopback: Some(Loopback {
            token,
            init: shared.map_or(init_pid, |l| l.init),
        }),
        overlay_workdir: made.overlay_workdir,
    };
    let finish = || -> Result<(), String> {
        record.save(root)?;
        if let Some(path) = &a.pid_file {
            write_pid_file(path, pid)?;
        }
        let state = record.oci_state();
        hooks::run_all(
            "createRuntime",
            hooks.create_runtime().as_deref().unwrap_or_default(),
            &state,
        )?;
        #[allow(deprecated)]
        let prestart = hooks.prestart().clone().unwrap_or_default();
        hooks::run_all("prestart", &prestart, &state)
    };
    if let Err(e) = finish() {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        cgroup.remove();
        return Err(e);
    }
    log.debug(&format!("created {} (monitor {pid})", a.id));
    Ok(())
}

/// Forks the container's anchor (which forks the monitor) and waits
/// until the sandbox is ready; the anchor's pid and the host pid of the
/// sandbox's init (the answer is "ok" and that pid, as the anchor's pid
/// namespace names it). The anchor gets a pid namespace (and a mount
/// namespace, for its procfs) of its own where the engine could not
/// enter the host's ([`super::cli::anchor_in_own_pid_namespace`]).
fn spawn_monitor(plan: MonitorPlan, config: SandboxConfig) -> Result<(i32, i32), String> {
    let (ready_rx, ready_tx) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("creating a pipe: {}", e.desc()))?;
    let own_pid_ns = super::cli::anchor_in_own_pid_namespace();
    let forked = match own_pid_ns {
        true => clone_process(CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS),
        false => fork_single_threaded(),
    };
    match forked {
        Err(e) => Err(format!("starting the monitor: {}", e.desc())),
        Ok(Forked::Child) => {
            drop(ready_rx);
            anchor::run(plan, config, ready_tx)
        }
        Ok(Forked::Parent(pid)) => {
            drop(ready_tx);
            let mut answer = String::new();
            let _ = fs::File::from(ready_rx).read_to_string(&mut answer);
            let init_pid = init_host_pid(&answer, pid.as_raw(), own_pid_ns);
            init_pid.map(|init| (pid.as_raw(), init)).inspect_err(|_| {
                let _ = kill(pid, Signal::SIGKILL);
                let _ = nix::sys::wait::waitpid(pid, None);
            })
        }
    }
}

/// Init's host pid from the anchor's `answer` ("ok" and init's pid in
/// the anchor's pid namespace, or "E" and an error); `own_pid_ns`: that
/// namespace is not the host's.
fn init_host_pid(answer: &str, anchor: i32, own_pid_ns: bool) -> Result<i32, String> {
    match answer.strip_prefix("ok").map(str::parse::<i32>) {
        Some(Ok(n)) if n > 0 && own_pid_ns => anchor::host_pid_of_init(anchor, n)
            .ok_or_else(|| "the sandbox's init is not among the monitor's children".into()),
        Some(Ok(n)) if n > 0 => Ok(n),
        _ => Err(match answer.strip_prefix('E') {
            Some(msg) => msg.to_string(),
            None => "the container's monitor died while setting up".into(),
        }),
    }
}

fn write_pid_file(path: &Path, pid: i32) -> Result<(), String> {
    let tmp = path.with_extension("supervisor-tmp");
    fs::write(&tmp, pid.to_string())
        .and_then(|_| fs::rename(&tmp, path))
        .map_err(|e| format!("--pid-file {}: {e}", path.display()))
}

/// `start`: lets the guest exec, then runs the poststart hooks.
pub fn start(root: &Path, id: &str) -> Result<(), String> {
    let mut record = Record::require(root, id)?;
    match record.status() {
        Status::Created => {}
        Status::Stopped => return Err("cannot start a container that has stopped".into()),
        s => return Err(format!("cannot start an already {} container", s.as_str())),
    }
    let fifo = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(container_dir(root, id)?.join("start"))
        .map_err(|e| format!("starting {id}: {e}"))?;
    loop {
        let mut fds = [PollFd::new(fifo.as_fd(), PollFlags::POLLIN)];
        let ready = poll(&mut fds, PollTimeout::from(100u16)).unwrap_or(0);
        let mut byte = [0u8; 1];
        if ready > 0 && matches!((&fifo).read(&mut byte), Ok(1)) {
            break;
        }
        if !record.monitor_alive() {
            return Err("cannot start a container that has stopped".into());
        }
    }
    record.started = true;
    record.save(root)?;
    hooks::run_all("poststart", &record.poststart, &record.oci_state())
}

/// A signal by name (`KILL`, `SIGKILL`) or number.
pub fn parse_signal(s: &str) -> Result<Signal, String> {
    let bad = || format!("unknown signal {s:?}");
    if let Ok(n) = s.parse::<i32>() {
        return Signal::try_from(n).map_err(|_| bad());
    }
    let upper = s.to_ascii_uppercase();
    let name = match upper.starts_with("SIG") {
        true => upper,
        false => format!("SIG{upper}"),
    };
    name.parse::<Signal>().map_err(|_| bad())
}

/// `kill`: the signal goes to the monitor, which passes it on to the
/// guest (SIGKILL ends the monitor, and so the whole sandbox).
pub fn kill_container(root: &Path, a: &KillArgs) -> Result<(), String> {
    let record = Record::require(root, &a.id)?;
    let sig = parse_signal(&a.signal)?;
    if record.status() == Status::Stopped {
        return Err("container not running".into());
    }
    let pid = Pid::from_raw(record.pid);
    if a.all && sig == Signal::SIGKILL {
        // Thaw first: a frozen task does not die until it runs.
        if record.cgroup.is_frozen() {
            let _ = record.cgroup.set_frozen(false);
        }
        for p in record.cgroup.pids() {
            let _ = kill(Pid::from_raw(p), sig);
        }
    }
    kill(pid, sig).map_err(|e| format!("kill {}: {}", a.id, e.desc()))
}

/// The work directory the sandbox's overlay of an engine's layers uses
/// (made by the trial in `create` or by the sandbox), if the rootfs is
/// an engine's writable overlayfs mount.
fn overlay_workdir(bundle: &Bundle) -> Option<PathBuf> {
    (EngineOverlay::of(&bundle.rootfs).ok().flatten()).and_then(|o| o.own_workdir())
}

/// `delete`: a stopped (or created, or with --force any) container's
/// cgroup and state go, after its poststop hooks.
pub fn delete(root: &Path, log: &Log, a: &DeleteArgs) -> Result<(), String> {
    let dir = container_dir(root, &a.id)?;
    let Some(record) = Record::load(root, &a.id)? else {
        // Docker deletes twice; a container that is gone is not an error.
        let _ = fs::remove_dir_all(&dir);
        return Ok(());
    };
    match record.status() {
        Status::Stopped | Status::Created => {}
        s if a.force => log.debug(&format!("deleting {} while {}", a.id, s.as_str())),
        s => {
            return Err(format!(
                "cannot delete container {} that is not stopped: {}",
                a.id,
                s.as_str()
            ))
        }
    }
    if record.monitor_alive() {
        if record.cgroup.is_frozen() {
            let _ = record.cgroup.set_frozen(false);
        }
        let _ = kill(Pid::from_raw(record.pid), Signal::SIGKILL);
        for _ in 0..1000 {
            if !record.monitor_alive() {
                break;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
    record.cgroup.remove();
    if let Some(work) = &record.overlay_workdir {
        if let Err(e) = remove_workdir(work) {
            log.warn(&format!("{}: {e}", work.display()));
        }
    }
    let state = record.oci_state();
    if let Err(e) = hooks::run_all("poststop", &record.poststop, &state) {
        log.warn(&e);
    }
    fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(parse_signal("KILL"), Ok(Signal::SIGKILL));
        assert_eq!(parse_signal("sigterm"), Ok(Signal::SIGTERM));
        assert_eq!(parse_signal("SIGUSR1"), Ok(Signal::SIGUSR1));
        assert_eq!(parse_signal("9"), Ok(Signal::SIGKILL));
        assert!(parse_signal("NOPE").is_err());
        assert!(parse_signal("999").is_err());
    }
}
