//! The container's systemd unit under `--systemd-cgroup` (the systemd
//! cgroup driver of Docker, Podman, containerd and the kubelet), made as
//! runc makes it: a transient scope started through systemd's D-Bus API
//! (`StartTransientUnit` on the system bus, with `Slice=`,
//! `Delegate=yes`, accounting of memory, CPU and tasks, no default
//! dependencies, and `create`'s own pid as the scope's first process),
//! and stopped (`StopUnit`) when the container is deleted. systemd then
//! knows the container's cgroup as its own, and the runtime manages what
//! is beneath it (delegation).
//!
//! Each call runs in a forked child (`child::in_child`): the D-Bus
//! client's executor starts threads, and `create` must still be single
//! threaded when it forks the container's anchor.
//!
//! Owns the D-Bus calls and waiting for the scope. Does not own the
//! unit's name or directory (`cgroup_path.rs`) or the directories
//! beneath it (`cgroup.rs`).

use std::fs;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use zbus::blocking::Connection;
use zbus::zvariant::Value;

use super::cgroup_path::SystemdUnit;
use super::child::in_child;

const SYSTEMD: &str = "org.freedesktop.systemd1";
const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";

/// How long systemd may take to move us into the new scope.
const SCOPE_BOUND: Duration = Duration::from_secs(10);

/// Whether systemd is the init system here (runc's test: its runtime
/// directory exists).
pub fn running() -> bool {
    fs::metadata("/run/systemd/system").is_ok_and(|m| m.is_dir())
}

/// Starts `unit` as a transient scope holding this process, waits until
/// systemd has moved us into it, and returns its directory as
/// `/proc/self/cgroup` names it (the unified line, or the
/// `name=systemd` one on a v1 host): a path from the hierarchy's root.
pub fn start_scope(unit: &SystemdUnit) -> Result<PathBuf, String> {
    let pid = std::process::id();
    in_child(|| call_start(unit, pid)).map_err(|e| format!("systemd unit {}: {e}", unit.name))?;
    let end = Instant::now() + SCOPE_BOUND;
    loop {
        if let Some(path) = own_systemd_path().filter(|p| p.ends_with(&unit.name)) {
            return Ok(path);
        }
        if Instant::now() > end {
            return Err(format!(
                "systemd unit {}: this process was not moved into it",
                unit.name
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Stops the unit (systemd then removes its cgroup); an error (systemd
/// gone, the unit already stopped) is not one to the caller.
pub fn stop_unit(name: &str) {
    let _ = in_child(|| {
        let bus = Connection::system().map_err(|e| e.to_string())?;
        bus.call_method(
            Some(SYSTEMD),
            MANAGER_PATH,
            Some(MANAGER),
            "StopUnit",
            &(name, "replace"),
        )
        .map(drop)
        .map_err(|e| e.to_string())
    });
}

/// `StartTransientUnit(name, "replace", properties, [])`, in the child.
fn call_start(unit: &SystemdUnit, pid: u32) -> Result<(), String> {
    let bus = Connection::system().map_err(|e| format!("the system bus: {e}"))?;
    let mut props: Vec<(&str, Value)> = vec![
        (
            "Description",
            Value::from(format!("supervisor container {}", unit.name)),
        ),
        ("Slice", Value::from(unit.slice.as_str())),
        ("Delegate", Value::from(true)),
        ("MemoryAccounting", Value::from(true)),
        ("CPUAccounting", Value::from(true)),
        ("TasksAccounting", Value::from(true)),
        ("DefaultDependencies", Value::from(false)),
    ];
    if unit.is_scope() {
        props.push(("PIDs", Value::from(vec![pid])));
    }
    let aux: Vec<(&str, Vec<(&str, Value)>)> = Vec::new();
    bus.call_method(
        Some(SYSTEMD),
        MANAGER_PATH,
        Some(MANAGER),
        "StartTransientUnit",
        &(unit.name.as_str(), "replace", props, aux),
    )
    .map(drop)
    .map_err(|e| e.to_string())
}

/// This process's cgroup as systemd manages it: the `name=systemd`
/// hierarchy's on a v1 or hybrid host, else the unified one's (`0::PATH`).
fn own_systemd_path() -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path_of = |controllers: &str| {
        text.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let found = parts.next()? == controllers;
            found.then(|| parts.next().map(PathBuf::from)).flatten()
        })
    };
    path_of("name=systemd").or_else(|| path_of(""))
}
