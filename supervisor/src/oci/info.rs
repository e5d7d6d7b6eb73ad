//! The commands that read or adjust a container without changing its
//! lifecycle: `state`, `list`, `ps`, `pause`/`resume` (the cgroup
//! freezer), `update` (resources), and the two that need none: `spec`
//! (a default config.json, as `runc spec` writes) and `features`.
//!
//! Owns their output formats; not the record or the cgroup.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use super::cli::{ListArgs, ListFormat, PsArgs, SpecArgs, UpdateArgs};
use super::config::LinuxResources;
use super::log::Log;
use super::state::{list_ids, Record, Status, OCI_VERSION};

/// `state ID`: the runtime spec's state JSON.
pub fn state(root: &Path, id: &str) -> Result<(), String> {
    let record = Record::require(root, id)?;
    print_json(&record.oci_state())
}

fn print_json(value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").map_err(|e| e.to_string())
}

/// `list`: a table (ID PID STATUS BUNDLE CREATED OWNER), JSON, or ids.
pub fn list(root: &Path, a: &ListArgs) -> Result<(), String> {
    let records: Vec<Record> = list_ids(root)
        .iter()
        .filter_map(|id| Record::load(root, id).ok().flatten())
        .collect();
    let mut out = String::new();
    if a.quiet {
        records
            .iter()
            .for_each(|r| out.push_str(&format!("{}\n", r.id)));
    } else if a.format == ListFormat::Json {
        let all: Vec<_> = records.iter().map(Record::oci_state).collect();
        out = format!("{}\n", serde_json::Value::from(all));
    } else {
        out.push_str("ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n");
        for r in &records {
            let s = r.oci_state();
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\troot\n",
                r.id,
                s["pid"],
                r.status().as_str(),
                r.bundle.display(),
                r.created
            ));
        }
    }
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| e.to_string())
}

/// Those of `pids` in the pid namespace of process `init` (the sandbox's).
fn in_pid_namespace_of(init: i32, mut pids: Vec<i32>) -> Vec<i32> {
    let ns = |p: i32| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let Some(sandbox) = ns(init) else {
        return Vec::new();
    };
    pids.retain(|p| ns(*p).as_ref() == Some(&sandbox));
    pids
}

/// `ps ID`: the host pids of the container's processes — the sandbox's
/// init and the guest's, not the monitor that serves them — as JSON
/// (what `docker top` reads) or a table.
pub fn ps(root: &Path, a: &PsArgs) -> Result<(), String> {
    let record = Record::require(root, &a.id)?;
    let pids = match record.status() {
        Status::Stopped => Vec::new(),
        // Under v2 the anchor shares the sandbox's leaf (`cgroup.rs`);
        // it is the runtime's, not one of the container's processes.
        _ => match record.cgroup.sandbox_pids() {
            Some(mut pids) => {
                pids.retain(|p| *p != record.pid);
                pids
            }
            None => in_pid_namespace_of(record.init_pid, record.cgroup.pids()),
        },
    };
    let out = match a.format {
        ListFormat::Json => format!("{}\n", serde_json::Value::from(pids)),
        ListFormat::Table => {
            let mut t = String::from("PID\n");
            pids.iter().for_each(|p| t.push_str(&format!("{p}\n")));
            t
        }
    };
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| e.to_string())
}

/// `pause` (`true`) and `resume`.
pub fn set_paused(root: &Path, id: &str, paused: bool) -> Result<(), String> {
    let record = Record::require(root, id)?;
    match (record.status(), paused) {
        (Status::Running, true) | (Status::Paused, false) => record.cgroup.set_frozen(paused),
        (Status::Paused, true) => Err(format!("container {id} is already paused")),
        (s, _) => Err(format!("container {id} is not running: {}", s.as_str())),
    }
}

/// `update ID`: new resources from `--resources` JSON or the flags,
/// then the CPUs the guest sees in /sys (a failure there is a warning:
/// the limits are in force).
pub fn update(root: &Path, log: &Log, a: &UpdateArgs) -> Result<(), String> {
    let record = Record::require(root, &a.id)?;
    if record.status() == Status::Stopped {
        return Err(format!("container {} is not running", a.id));
    }
    let mut res: LinuxResources = match &a.resources {
        Some(path) => {
            let mut text = String::new();
            let read = match path.as_os_str() == "-" {
                true => std::io::stdin().take(1 << 20).read_to_string(&mut text),
                false => {
                    fs::File::open(path).and_then(|f| f.take(1 << 20).read_to_string(&mut text))
                }
            };
            read.map_err(|e| format!("--resources {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("--resources: {e}"))?
        }
        None => LinuxResources::default(),
    };
    if let Some(m) = a.memory {
        let mut mem = (*res.memory()).unwrap_or_default();
        mem.set_limit(Some(m));
        res.set_memory(Some(mem));
    }
    if let Some(p) = a.pids_limit {
        let mut pids = (*res.pids()).unwrap_or_default();
        pids.set_limit(p);
        res.set_pids(Some(pids));
    }
    record.cgroup.set_resources(&res)?;
    if let Err(e) = super::sys_cpu::follow_update(&record) {
        log.warn(&e);
    }
    Ok(())
}

/// `spec`: a default config.json in the bundle directory (runc's
/// defaults: `sh` on a terminal, rootfs `rootfs`; the document is
/// `default_config.json`).
pub fn spec(a: &SpecArgs) -> Result<(), String> {
    let path = a.bundle.join("config.json");
    if path.exists() {
        return Err(format!("{}: already exists", path.display()));
    }
    fs::write(&path, DEFAULT_CONFIG).map_err(|e| format!("{}: {e}", path.display()))
}

/// What `spec` writes.
const DEFAULT_CONFIG: &str = include_str!("default_config.json");

/// `features`: what this runtime supports, in the runtime spec's format.
pub fn features() -> Result<(), String> {
    let value = serde_json::json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": OCI_VERSION,
        "hooks": ["prestart", "createRuntime", "poststart", "poststop"],
        "mountOptions": ["bind", "rbind", "ro", "rw", "size"],
        "linux": {
            "namespaces": ["user", "mount", "pid", "network", "ipc", "uts"],
            "cgroup": {"v1": true, "v2": true, "systemd": true, "systemdUser": false},
            "seccomp": {"enabled": true, "actions": ["SCMP_ACT_NOTIFY"]},
            "apparmor": {"enabled": false},
            "selinux": {"enabled": false},
        },
        "annotations": {"org.opencontainers.runtime-spec.features.sandbox": "seccomp-notify"},
    });
    print_json(&value)
}
