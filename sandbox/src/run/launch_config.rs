//! The launch's configuration from a run's [`SandboxConfig`]: the
//! [`LaunchConfig`] (the view's mounts, the filters, the terminal, the
//! CPUs and limits the view shows, the cgroup files init joins) and what
//! the guest is told of its limits ([`guest_view`]).
//!
//! Owns turning the config into those. Does not own launching (`launch/`)
//! or what the limits' figures become in /proc (the `procfs` crate).

use std::fs::OpenOptions;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;

use nix::unistd::{getgid, getuid};
use procfs::{guest_cpus, GuestView, OutsideCgroup};
use sandbox_syscalls::policy::bpf;

use super::setup_error;
use crate::config::{IdRange, SandboxConfig, StartMode, Terminal};
use crate::launch::{LaunchConfig, LaunchError, Program};
use crate::tty;

/// What the guest is told of its limits: those enforced outside the run
/// (read from their cgroup at each use), or the run's own.
pub(super) fn guest_view(config: &SandboxConfig) -> GuestView {
    match &config.outside_limits {
        Some(outside) => procfs::view_of(outside),
        None => {
            let limits = &config.limits;
            GuestView::fixed(limits.memory, limits.cpus, limits.pids)
        }
    }
}

/// The cgroup of the limits enforced outside the run, if any.
fn outside_cgroup(config: &SandboxConfig) -> Option<&OutsideCgroup> {
    config.outside_limits.as_ref()?.cgroup.as_ref()
}

/// What the launch is given for `config`, whose guest is told of its
/// limits as `view` says ([`guest_view`]).
pub(super) fn launch_config(
    config: &SandboxConfig,
    view: &GuestView,
) -> Result<LaunchConfig, LaunchError> {
    let mut mounts = config.fs.mounts.clone();
    // Parents before children, whatever the flag order.
    mounts.sort_by_key(|m| m.guest.components().count());
    Ok(LaunchConfig {
        command: config.command.clone(),
        env: config.env.resolve()?,
        workdir: config.workdir.clone(),
        hostname: config.hostname.clone(),
        mounts,
        rootfs: config.fs.rootfs.clone(),
        rootfs_in_place: config.fs.rootfs_in_place,
        root_read_only: config.fs.root_read_only,
        dev_shm: config.fs.dev_shm.clone(),
        masks: config.fs.masks.clone(),
        read_only: config.fs.read_only.clone(),
        disk_size: config.fs.disk,
        writable_system: config.fs.writable_system,
        filter: Program::Compile(bpf::compile_without_fast_reads),
        // A trace shows every open, so a traced guest marks none.
        fast_reads_filter: config
            .trace
            .is_none()
            .then_some(Program::Compile(bpf::compile)),
        pty: match config.terminal {
            Terminal::Host => tty::host_terminal(),
            Terminal::Console(_) => Some([true; 3]),
            Terminal::Never => None,
            // Whether the guest takes it is learned at start
            // (`LateCommand::terminal`).
            Terminal::AtStart => Some([false; 3]),
        },
        cpus: guest_cpus(view.cpus),
        memory_limited: view.memory.is_some(),
        pids_limited: view.pids.is_some(),
        nameserver: config
            .net
            .allow
            .iter()
            .any(netstack::rules::Rule::is_name)
            .then_some(std::net::IpAddr::V4(netstack::dns::STUB_ADDR)),
        self_join: match outside_cgroup(config) {
            Some(cgroup) => join_files(cgroup).map_err(setup_error)?,
            None => Vec::new(),
        },
        id_count: config.ids.count,
        shifted_ids: shifted_ids(config.ids.range)?,
        mounts_keep_ids: config.ids.mounts_keep_ids,
        caps: config.ids.caps().map_err(setup_error)?,
        user: config.ids.user.clone(),
        late_exec: config.start == StartMode::Late,
        // Every open the guest makes is served here (`serve_and_wait`).
        fence_reads: true,
        join_ipc: config.join.ipc.clone(),
        join_uts: config.join.uts.clone(),
        join_pid: config.join.pid.clone(),
        clocks: config.clocks,
        rewrite_sites: config.rewrite_sites,
    })
}

/// The cgroup's [`OutsideCgroup::join`] files, open for init to write
/// "0" to (`LaunchConfig::self_join`).
fn join_files(cgroup: &OutsideCgroup) -> Result<Vec<Arc<OwnedFd>>, String> {
    (cgroup.join.iter())
        .map(|path| {
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map(|f| Arc::new(OwnedFd::from(f)))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The user namespace's maps when they are not the invoker's identity
/// (`config::IdRange`); `None`: the invoker's ids (for an unprivileged
/// invoker without subordinate ids, after a one-line note).
fn shifted_ids(range: IdRange) -> Result<Option<vfs::IdMap>, LaunchError> {
    use crate::launch::subids;
    let root = nix::unistd::geteuid().is_root();
    let host = match (range, root) {
        (IdRange::Invoker, _) => return Ok(None),
        (IdRange::Host(r), true) => r,
        (IdRange::Host(_), false) => {
            return Err(setup_error(
                "--userns-range: only root may map a host range; an unprivileged user's is its /etc/subuid entry".into(),
            ))
        }
        (IdRange::Auto, true) => subids::root_range().map_err(setup_error)?,
        (IdRange::Auto, false) => {
            let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
            return Ok(match subids::invoker_ranges(uid) {
                Some((u, g)) => {
                    let count = u.count.min(g.count).min(subids::RANGE_COUNT - 1);
                    Some(vfs::IdMap::subordinate(uid, gid, u.start, g.start, count))
                }
                None => {
                    eprintln!(
                        "supervisor: note: uid {uid} has no range in /etc/subuid and /etc/subgid: the guest has one id, {uid}"
                    );
                    None
                }
            });
        }
    };
    Ok(Some(vfs::IdMap::shifted(host.start, host.count)))
}
