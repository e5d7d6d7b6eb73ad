//! What a launch is asked for ([`LaunchConfig`]): the command and its
//! environment, the view (mounts, root, masks, sizes), the filter, the
//! terminal, the limits the view must reflect, the guest's ids and
//! capabilities; with its defaults, and the allow-everything filter of
//! the launch's own tests.
//!
//! Owns the launch's configuration. Does not own the steps that carry it
//! out (`launch/mod.rs` and its modules) or the run's configuration it is
//! made from (`run/`, from `config.rs`'s `SandboxConfig`).

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use nix::unistd::{getgid, getuid};
use sandbox_syscalls::policy::bpf::Insn;

use super::GuestUser;
#[cfg(doc)]
use super::{InitHooks, Sandbox, OCI_ID_COUNT};

/// Size of the writable layer when none is given: 1 GiB.
pub const DEFAULT_DISK_SIZE: u64 = 1 << 30;
/// The guest's hostname when none is given.
pub const DEFAULT_HOSTNAME: &str = "sandbox";

/// What to run, and in what sandbox.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    /// argv; argv[0] is searched in the guest's PATH if it has no '/'.
    pub command: Vec<OsString>,
    /// The guest's complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Starting directory; default: the host's current directory, which
    /// is then bound read-only at the same path (with `rootfs`: `/`).
    pub workdir: Option<PathBuf>,
    pub hostname: String,
    /// `--ro`, `--rw` and `--tmpfs` mounts (applied parents first).
    pub mounts: Vec<vfs::mounts::MountSpec>,
    /// `--rootfs`: this tree, not the host's directories, under `/`.
    pub rootfs: Option<PathBuf>,
    /// The guest writes to the `rootfs` tree itself, as runc lets it,
    /// instead of to an overlay whose upper layer is in the `--disk`
    /// layer: the OCI runtime with a writable bundle root, so that the
    /// engine sees what the container wrote (`docker cp` out, `diff`).
    /// The `--disk` cap then does not cover `/`; the engine's storage does.
    pub rootfs_in_place: bool,
    /// The guest's `/` mount is read-only (its submounts keep their modes).
    pub root_read_only: bool,
    /// The view's /dev/shm: the layer's, or the OCI engine's (`dev_shm.rs`).
    pub dev_shm: super::DevShm,
    /// `--mask` paths, hidden once every mount is in place.
    pub masks: Vec<PathBuf>,
    /// `--remount-ro` paths (OCI `readonlyPaths`), made read-only once
    /// every mount is in place.
    pub read_only: Vec<PathBuf>,
    /// Size of the writable layer (tmpfs) in bytes.
    pub disk_size: u64,
    /// `--writable-system`: the host's /usr, /bin, /sbin, /lib and /lib64
    /// as overlays writing to the layer, not read-only binds.
    pub writable_system: bool,
    /// The seccomp program to install (every plain read open trapped).
    pub filter: Program,
    /// The program to install instead when the guest is fenced and gets
    /// the fast-reads preload (`fast_reads.rs`): `filter` with marked read
    /// opens passing. `None`: no fast reads. Only the one installed is
    /// compiled.
    pub fast_reads_filter: Option<Program>,
    /// Give the guest a pseudo-terminal of the sandbox's own devpts as
    /// stdin, stdout, stderr where `true` (a session with it as the
    /// controlling terminal); its master comes back in
    /// [`Sandbox::pty_master`]. `None`: the guest inherits our stdio.
    pub pty: Option<[bool; 3]>,
    /// CPUs the guest may use, as its /sys/devices/system/cpu shows them
    /// (0 to N-1). `None`: the host's.
    pub cpus: Option<usize>,
    /// Whether `--memory` and `--pids` are set: the /proc files served
    /// rewritten under them get covers (`proc_mount.rs`).
    pub memory_limited: bool,
    pub pids_limited: bool,
    /// The name server the guest's /etc/resolv.conf names (the DNS stub
    /// when `--allow-net` has a name rule); `None`: no name server.
    pub nameserver: Option<std::net::IpAddr>,
    /// Cgroup v1 `tasks` files init writes "0" to as its first act: the
    /// OCI monitor's freezer, which must hold the sandbox but not the
    /// monitor. (The limits' cgroup comes later: [`InitHooks::cgroup_join`].)
    pub self_join: Vec<std::sync::Arc<OwnedFd>>,
    /// How many ids the user namespace maps from the invoker's (each at
    /// the same number): 1 (the invoker's alone), or for the OCI runtime
    /// as root [`OCI_ID_COUNT`], which lets [`LaunchConfig::user`] and
    /// exec requests name other users (`users.rs`).
    pub id_count: u32,
    /// The user namespace's maps when they are not the invoker's ids at
    /// the same numbers (`id_count`): root's shifted range, or an
    /// unprivileged invoker's subordinate range (`userns.rs`). The guest
    /// then runs as its root (guest uid 0) unless [`LaunchConfig::user`]
    /// says otherwise, holding [`LaunchConfig::caps`].
    pub shifted_ids: Option<vfs::IdMap>,
    /// With `shifted_ids` as root: every host source (the rootfs, the
    /// mounts) is an idmapped copy showing host id N as guest id N, made
    /// or refused with an error (`idmapped.rs`); false: a bind's owner
    /// shows as the guest's root, the rootfs's copy best effort.
    pub mounts_keep_ids: bool,
    /// The capabilities the guest's root holds in its user namespace
    /// (bit N: capability N; `guest_caps.rs`) when ids are shifted.
    pub caps: u64,
    /// The main process's user; `None`: the invoker's.
    pub user: Option<GuestUser>,
    /// The command, environment and stdio are given at start
    /// ([`Sandbox::start_late`]: the pool), not by `command` (ignored);
    /// `env` still names the home directory /etc/passwd shows.
    pub late_exec: bool,
    /// Fence the guest's reads (where the kernel has Landlock): its own
    /// opens may not read the kernel's procfs (`sys/landlock.rs`), so the
    /// caller must serve them (`Context::fence_reads` when
    /// [`Sandbox::fenced`]). Off for a launch whose opens nobody serves.
    pub fence_reads: bool,
    /// An IPC namespace to join (by path) instead of making one: the
    /// launching process joins it before init is cloned (`joined.rs`).
    pub join_ipc: Option<PathBuf>,
    /// A UTS namespace to join likewise; the guest's hostname is then
    /// that namespace's, not [`LaunchConfig::hostname`].
    pub join_uts: Option<PathBuf>,
    /// Another sandbox's pid namespace to be born in, and its user
    /// namespace, which init joins (`joined.rs`).
    pub join_pid: Option<crate::config::JoinedPid>,
    /// Where the guest's clocks start (`timens.rs`); `None`: at init's start.
    pub clocks: Option<crate::config::GuestClocks>,
    /// The static loader rewrites trapped open sites (`static_loader.rs`),
    /// the preload its loader's and C library's (`fast_reads.rs`).
    pub rewrite_sites: bool,
}

/// A seccomp program: as given, or how to compile it (each compile takes
/// 50–190 µs, spent only on the program the launch installs).
#[derive(Clone, Debug)]
pub enum Program {
    Given(Vec<Insn>),
    Compile(fn() -> Vec<Insn>),
}

impl Program {
    /// The instructions (compiled now, for [`Program::Compile`]).
    pub fn insns(&self) -> Cow<'_, [Insn]> {
        match self {
            Program::Given(insns) => Cow::Borrowed(insns),
            Program::Compile(compile) => Cow::Owned(compile()),
        }
    }
}

impl From<Vec<Insn>> for Program {
    fn from(insns: Vec<Insn>) -> Self {
        Program::Given(insns)
    }
}

impl LaunchConfig {
    /// A config with the defaults and the given command and filter.
    pub fn new(command: Vec<OsString>, filter: Vec<Insn>) -> Self {
        LaunchConfig {
            command,
            env: Vec::new(),
            workdir: None,
            hostname: DEFAULT_HOSTNAME.into(),
            mounts: Vec::new(),
            rootfs: None,
            rootfs_in_place: false,
            root_read_only: false,
            dev_shm: super::DevShm::Layer,
            masks: Vec::new(),
            read_only: Vec::new(),
            disk_size: DEFAULT_DISK_SIZE,
            writable_system: false,
            filter: Program::Given(filter),
            fast_reads_filter: None,
            pty: None,
            cpus: None,
            memory_limited: false,
            pids_limited: false,
            nameserver: None,
            self_join: Vec::new(),
            id_count: 1,
            shifted_ids: None,
            mounts_keep_ids: false,
            caps: 0,
            user: None,
            late_exec: false,
            fence_reads: false,
            join_ipc: None,
            join_uts: None,
            join_pid: None,
            clocks: None,
            rewrite_sites: true,
        }
    }

    /// The guest's ids as the handlers map them.
    pub fn id_map(&self) -> vfs::IdMap {
        self.shifted_ids.unwrap_or_else(|| {
            vfs::IdMap::with_range(getuid().as_raw(), getgid().as_raw(), self.id_count)
        })
    }

    /// The capabilities the guest's processes keep: [`LaunchConfig::caps`]
    /// with shifted ids, none otherwise.
    pub(super) fn guest_caps(&self) -> u64 {
        match self.shifted_ids {
            Some(_) => self.caps,
            None => 0,
        }
    }
}

/// A filter that allows every call: for tests of the launch alone (the
/// guest then makes no notification at all).
pub fn allow_all_filter() -> Vec<Insn> {
    vec![Insn {
        code: 0x06,
        jt: 0,
        jf: 0,
        k: sandbox_syscalls::policy::bpf::SECCOMP_RET_ALLOW,
    }]
}
