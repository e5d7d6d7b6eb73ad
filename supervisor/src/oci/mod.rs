//! The OCI runtime: `supervisor` as a runc-compatible runtime behind
//! Docker, containerd and Podman (`--runtime=supervisor`).
//!
//! Each container is a sandbox run by a *monitor* process (`monitor.rs`),
//! the child of an *anchor* (`anchor.rs`) that `create` forks and leaves
//! behind: the anchor's pid is the container's (it sits in the sandbox's
//! namespaces), the monitor's exit status the container's. State lives in `--root`/<id>
//! (`state.rs`); a bundle's config.json, read by `config.rs`, becomes a
//! `SandboxConfig` (`bundle.rs`); the container's cgroup is the engine's
//! `linux.cgroupsPath` (`cgroup.rs`; where that is `cgroup_path.rs`, the
//! systemd scope `systemd.rs`, its limits `resources.rs`).
//!
//! Owns dispatching the commands and logging their errors (`log.rs`).
//! Submodules: `cli` (flags), `lifecycle` (create, start, kill, delete),
//! `info` (state, list, ps, pause, resume, update, spec, features),
//! `exec` and `exec_socket`, `console`, `hooks`, `user`, `namespaces`
//! (the IPC and UTS namespaces a pod's containers join), `mount_kind`
//! (what a config.json mount entry is), `sys_cpu` (the
//! guest's /sys CPUs after `update`), `child` (work in a forked child).
//! Does not own the sandbox: that is the engine's (`sandbox::run`).

pub mod anchor;
pub mod bundle;
pub mod cgroup;
pub mod cgroup_path;
pub mod child;
pub mod cli;
pub mod config;
pub mod console;
pub mod dev_shm;
pub mod exec;
pub mod exec_socket;
pub mod hooks;
pub mod info;
pub mod lifecycle;
pub mod log;
pub mod loopback;
pub mod monitor;
pub mod mount_kind;
pub mod namespaces;
pub mod netns;
pub mod overlay_trial;
pub mod plain_root;
pub mod resources;
pub mod state;
pub mod sys_cpu;
pub mod systemd;
pub mod user;

use cli::{GlobalFlags, OciCommand};
use log::Log;

/// Runs one runtime command; returns the exit code (1 on error, as runc).
pub fn main(global: &GlobalFlags, command: OciCommand) -> i32 {
    let log = Log::open(global);
    let root = global.root();
    let result = match command {
        OciCommand::Exec(a) => exec::exec(&root, &a),
        other => run_command(&root, &log, other, global.systemd_cgroup).map(|()| 0),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            log.error(&msg);
            1
        }
    }
}

fn run_command(
    root: &std::path::Path,
    log: &Log,
    command: OciCommand,
    systemd_cgroup: bool,
) -> Result<(), String> {
    match command {
        OciCommand::Spec(a) => info::spec(&a),
        OciCommand::Features => info::features(),
        OciCommand::Create(a) => lifecycle::create(root, log, &a, systemd_cgroup),
        OciCommand::Start(a) => lifecycle::start(root, &a.id),
        OciCommand::State(a) => info::state(root, &a.id),
        OciCommand::Kill(a) => lifecycle::kill_container(root, &a),
        OciCommand::Delete(a) => lifecycle::delete(root, log, &a),
        OciCommand::List(a) => info::list(root, &a),
        OciCommand::Ps(a) => info::ps(root, &a),
        OciCommand::Pause(a) => info::set_paused(root, &a.id, true),
        OciCommand::Resume(a) => info::set_paused(root, &a.id, false),
        OciCommand::Update(a) => info::update(root, log, &a),
        OciCommand::Exec(a) => exec::exec(root, &a).map(drop),
    }
}
