//! [`SandboxConfig`]: everything one sandbox is, as the front-ends build
//! it (`run` from its flags, the pool from its own, the OCI runtime from
//! a bundle's config.json), checked once by [`SandboxConfig::validate`].
//! It is plain data (serde), so a front-end may also read it as JSON
//! ([`SandboxConfig::from_json`]).
//!
//! Owns the configuration's shape, its defaults and its checks. Does not
//! own parsing flags or config.json (the front-ends), nor acting on it
//! (`run/`, `launch/`).

mod text;

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vfs::mounts::MountSpec;

use crate::launch::{DevShm, GuestUser, LaunchError, DEFAULT_DISK_SIZE, DEFAULT_HOSTNAME};
use crate::limits::Limits;

/// Limits enforced outside the run (the OCI container's cgroup) and its
/// directories: the guest's /proc and /sys show them (`procfs`).
pub use procfs::{OutsideCgroup, OutsideLimits};

/// Host variables the guest inherits when they are set ([`GuestEnv::FromHost`]).
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

/// One sandbox: what runs, what it sees, what limits it, what is recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// argv; argv[0] is searched in the guest's PATH if it has no '/'.
    /// Empty when the command comes at start ([`StartMode::Late`]).
    pub command: Vec<OsString>,
    pub env: GuestEnv,
    /// Starting directory; default: the host's current directory (with
    /// a root file system: `/`).
    pub workdir: Option<PathBuf>,
    pub hostname: String,
    pub fs: FsConfig,
    pub net: NetConfig,
    pub limits: Limits,
    /// The ids the guest's user namespace maps, and the command's user.
    pub ids: Ids,
    pub terminal: Terminal,
    /// Log every trapped call to this file (`-`: stderr).
    pub trace: Option<PathBuf>,
    /// Write the JSON report of the run here.
    pub report: Option<PathBuf>,
    /// Threads started to answer trapped calls (`None`: one).
    pub workers: Option<usize>,
    /// When the guest's command is known (and the run's clock starts).
    pub start: StartMode,
    /// When things happen in the run, as the front-end needs them.
    pub schedule: Schedule,
    /// Limits enforced outside the run, by a cgroup the front-end made;
    /// `None`: [`SandboxConfig::limits`], enforced by the run.
    pub outside_limits: Option<OutsideLimits>,
    /// Namespaces of other processes the sandbox joins instead of making
    /// its own (the containers of one pod).
    #[serde(default)]
    pub join: JoinedNamespaces,
    /// Where the guest's monotonic and boot-time clocks start (a woken
    /// session's, continuing those of the sandbox it was hibernated in);
    /// `None`: at the sandbox's start (`launch/timens.rs`).
    #[serde(default)]
    pub clocks: Option<GuestClocks>,
    /// Whether the static loader rewrites the trapped open sites of a
    /// static program into jumps to its trampolines
    /// (docs/fast-reads.md, "Rewritten sites"); off (`run --no-rewrite`):
    /// each stays a signal, and the program's text stays as it was built.
    #[serde(default = "rewrite_by_default")]
    pub rewrite_sites: bool,
}

fn rewrite_by_default() -> bool {
    true
}

/// IPC and UTS namespaces the sandbox joins, by path (`/proc/PID/ns/ipc`,
/// a bind-mounted namespace file), instead of making new ones: an OCI
/// container that names another's (a pod's containers, Docker's `--ipc
/// container:X`). Joined by the launching process before init is cloned,
/// so init and everything in the sandbox are born in them; the sandbox's
/// user namespace does not own them, so nothing in it may change them
/// (no `sethostname`; SysV objects by their modes alone).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinedNamespaces {
    /// SysV shared memory and semaphores are then one set with those of
    /// that namespace's processes.
    #[serde(default)]
    pub ipc: Option<PathBuf>,
    /// The hostname is then that namespace's (the guest's /etc/hostname
    /// and /etc/hosts name it, whatever [`SandboxConfig::hostname`] says).
    #[serde(default)]
    pub uts: Option<PathBuf>,
}

/// The guest's `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` as they read when
/// the sandbox's time namespace is made, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestClocks {
    pub monotonic_ns: u64,
    pub boottime_ns: u64,
}

/// The guest's environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuestEnv {
    /// The host's PATH, HOME, LANG and TERM where set, then each entry
    /// in order: `K=V` sets K, a name alone copies the host's (if set).
    FromHost(Vec<String>),
    /// Exactly these variables (an OCI bundle's `process.env`).
    Exact(Vec<(OsString, OsString)>),
}

/// The guest's file system.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Bind and tmpfs mounts, in the order given (applied parents first).
    #[serde(with = "text::mounts")]
    pub mounts: Vec<MountSpec>,
    /// This tree (an unpacked image), not the host's directories, as `/`.
    pub rootfs: Option<PathBuf>,
    /// The guest writes to `rootfs` itself, not to an overlay over it.
    pub rootfs_in_place: bool,
    /// The guest's `/` is read-only (the OCI runtime's `root.readonly`,
    /// `docker run --read-only`); the mounts on it keep their own modes.
    #[serde(default)]
    pub root_read_only: bool,
    /// The guest's /dev/shm: the layer's (`run`), or the OCI engine's
    /// bind or tmpfs, shared by the containers of a pod.
    #[serde(default)]
    pub dev_shm: DevShm,
    /// Paths hidden once every mount is in place.
    pub masks: Vec<PathBuf>,
    /// Paths made read-only once every mount is in place.
    pub read_only: Vec<PathBuf>,
    /// The host's /usr, /bin, /sbin, /lib and /lib64 as overlays.
    pub writable_system: bool,
    /// Size of the writable layer in bytes.
    pub disk: u64,
}

/// The guest's network.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Egress rules (none: no egress).
    #[serde(with = "text::list")]
    pub allow: Vec<netstack::rules::Rule>,
    /// Guest listeners reachable from the host.
    #[serde(with = "text::list")]
    pub publish: Vec<netstack::publish::PublishSpec>,
    /// Egress to every destination but loopback that the supervisor's
    /// network namespace reaches (an OCI container's, as under runc);
    /// `allow` then names only the loopback destinations that are the
    /// namespace's (the engine's DNS resolver).
    #[serde(default)]
    pub open: bool,
    /// Every TCP listener the guest opens on a wildcard address, and every
    /// UDP socket it binds to one (with a port), is also published on the
    /// same port of the supervisor's network namespace's wildcard address
    /// (an OCI container's interfaces).
    #[serde(default)]
    pub publish_listeners: bool,
    /// The token of the netstack's names (`None`: a random one); an OCI
    /// container's is chosen by `create` and kept in its state, so that
    /// containers joining its network namespace can share its loopback.
    #[serde(default)]
    pub token: Option<String>,
    /// Another sandbox's loopback this one shares (the containers of one
    /// pod): the netstack's sockets are made in that sandbox's network
    /// namespace, named with its token (`token` must be it).
    #[serde(default)]
    pub shared_loopback: Option<SharedLoopback>,
}

/// The sandbox whose loopback another shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedLoopback {
    /// Its init's host pid (its user and network namespaces are opened
    /// through /proc at launch; its /proc/<pid>/net/unix lists the
    /// shared names).
    pub init: i32,
}

impl NetConfig {
    /// Whether the supervisor dials out for the guest (its confinement
    /// then allows internet sockets).
    pub fn has_egress(&self) -> bool {
        self.open || !self.allow.is_empty()
    }
}

/// The ids of the guest.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    /// How many ids the user namespace maps from the invoker's (1: the
    /// invoker's alone), with [`IdRange::Invoker`].
    pub count: u32,
    /// The command's user; `None`: the invoker's (the guest's root with
    /// a shifted range).
    pub user: Option<GuestUser>,
    /// Which host ids the user namespace maps.
    #[serde(default)]
    pub range: IdRange,
    /// With a shifted range as root: the host sources (the rootfs tree,
    /// every bind) show host id N as guest id N, each through an
    /// idmapped mount that must be made (an error names the mount
    /// otherwise), so that what the guest's root writes there is host
    /// 0's, as under runc without a user namespace: the OCI runtime's.
    /// False: a bind's owner shows as the guest's root and the tree's
    /// copy is best effort (`supervisor run`; `launch/idmapped.rs`).
    #[serde(default)]
    pub mounts_keep_ids: bool,
    /// Capabilities taken from the guest root's default set (Docker's;
    /// `launch::guest_caps`), by name (`CHOWN`, `CAP_KILL`, `ALL`).
    #[serde(default)]
    pub cap_drop: Vec<String>,
    /// Capabilities given back (only from the default set).
    #[serde(default)]
    pub cap_add: Vec<String>,
}

/// Which host ids the guest's user namespace maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdRange {
    /// The invoker's own ids at the same numbers, [`Ids::count`] of them:
    /// root's guest is host root without capabilities.
    #[default]
    Invoker,
    /// Root: guest 0–65535 onto the `supervisor` entry of /etc/subuid
    /// and /etc/subgid, added on first use. Unprivileged: guest 0 as the
    /// invoker and 1–65535 onto its own subordinate ids, or, without
    /// any, the invoker's one id (with a note on stderr).
    Auto,
    /// Root: guest 0 to COUNT-1 onto these host ids (`--userns-range`).
    Host(crate::launch::subids::HostRange),
}

/// Whether the guest gets a pseudo-terminal of the sandbox's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    /// As its stdin, stdout, stderr where ours is a terminal, relayed
    /// to ours.
    Host,
    /// As all three, its master sent to the console socket at this path
    /// (an OCI runtime's `--console-socket`).
    Console(PathBuf),
    /// None: the guest inherits our stdio.
    Never,
    /// Set up, and taken where the start says ([`StartMode::Late`]).
    AtStart,
}

/// When the guest's command, environment and stdio are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartMode {
    /// At the launch: [`SandboxConfig::command`]. The run's clock (the
    /// timeout, the report's wall time) starts at the launch.
    Launch,
    /// At start (the pool's client's, from the front-end's
    /// `Embedding::ready`); the launch builds the view only, and the
    /// run's clock starts then: the sandbox may wait long for it.
    Late,
}

/// When things happen in a run, where front-ends differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The guest may exec as soon as the supervisor has taken the view's
    /// measure (its root, the fence's grants), before the trap serves:
    /// its first serviced call waits in the listener's queue, and its
    /// exec overlaps the trap's start, the signal thread and the
    /// supervisor's confinement, which then comes before any worker (no
    /// call is ever served unconfined). Not with a terminal (the guest
    /// could ask its size before the relay has set it); not with a late
    /// start. For a front-end whose `Embedding::ready` does not wait.
    pub start_early: bool,
    /// The supervisor confines itself before the front-end's wait
    /// (`Embedding::ready`) rather than after it: the pool's sandbox
    /// waits for its client there, so its confinement (the own filter's
    /// `seccomp(TSYNC)`, about 0.15 ms) is off the request's path.
    /// Everything `ready` calls must then pass that filter.
    pub confine_before_wait: bool,
    /// The run may end without waiting for the sandbox's init to exit
    /// and its cgroup to go (the janitor removes it just after), unless a
    /// report is asked for (it needs init's resource usage): the guest's
    /// processes are all gone either way.
    pub leave_teardown: bool,
    /// The nice value the sandbox's tasks get once init has set the
    /// sandbox up and waits to fork the guest's main process, while this
    /// process has no thread yet: every task made from then on inherits
    /// it. The pool's sandbox is set up at nice 19 and restores its own
    /// value so (restored later, it raced init's fork of the guest's main
    /// process). A failed change fails the set-up: no guest runs at the
    /// set-up's priority.
    pub nice_after_set_up: Option<i32>,
}

impl SandboxConfig {
    /// `command` in a sandbox with the defaults: nothing mounted, no
    /// network, no limits, the environment from the host, the schedule
    /// of `supervisor run` (start early, leave the teardown).
    pub fn new(command: Vec<OsString>) -> SandboxConfig {
        SandboxConfig {
            command,
            env: GuestEnv::FromHost(Vec::new()),
            workdir: None,
            hostname: DEFAULT_HOSTNAME.into(),
            fs: FsConfig {
                mounts: Vec::new(),
                rootfs: None,
                rootfs_in_place: false,
                root_read_only: false,
                dev_shm: DevShm::Layer,
                masks: Vec::new(),
                read_only: Vec::new(),
                writable_system: false,
                disk: DEFAULT_DISK_SIZE,
            },
            net: NetConfig::default(),
            limits: Limits::default(),
            ids: Ids {
                count: 1,
                user: None,
                range: IdRange::Invoker,
                mounts_keep_ids: false,
                cap_drop: Vec::new(),
                cap_add: Vec::new(),
            },
            terminal: Terminal::Host,
            trace: None,
            report: None,
            workers: None,
            start: StartMode::Launch,
            schedule: Schedule {
                start_early: true,
                confine_before_wait: false,
                leave_teardown: true,
                nice_after_set_up: None,
            },
            outside_limits: None,
            join: JoinedNamespaces::default(),
            clocks: None,
            rewrite_sites: true,
        }
    }

    /// A config read from JSON and checked; the error is one line.
    pub fn from_json(text: &str) -> Result<SandboxConfig, String> {
        let config: SandboxConfig =
            serde_json::from_str(text).map_err(|e| format!("sandbox config: {e}"))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what the types do not: sizes and counts of at least 1, a
    /// CPU share the kernel takes, durations that are positive. The
    /// front-ends' parsers check the same, with their own words.
    pub fn validate(&self) -> Result<(), String> {
        let l = &self.limits;
        let positive = |what: &str, n: Option<u64>| match n {
            Some(0) => Err(format!("{what}: must be at least 1")),
            _ => Ok(()),
        };
        positive("disk", Some(self.fs.disk))?;
        positive("memory", l.memory)?;
        positive("pids", l.pids)?;
        positive("output", l.output)?;
        positive("nofile", l.nofile)?;
        for r in &l.rlimits {
            if r.resource >= crate::limits::RLIMIT_COUNT {
                return Err(format!("rlimit {}: no such resource", r.resource));
            }
            if r.soft > r.hard {
                return Err(format!(
                    "rlimit {}: soft limit {} above the hard limit {}",
                    r.resource, r.soft, r.hard
                ));
            }
        }
        if let Some(cpus) = l.cpus.filter(|n| !(0.01..=4096.0).contains(n)) {
            return Err(format!("cpus {cpus}: expected 0.01 to 4096"));
        }
        for (what, d) in [("timeout", l.timeout), ("cpu_time", l.cpu_time)] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(format!("{what}: must be more than 0"));
            }
        }
        if self.start == StartMode::Launch && self.command.is_empty() {
            return Err("no command given".into());
        }
        if self.start == StartMode::Late && self.schedule.start_early {
            return Err("a late start cannot start early".into());
        }
        if self.ids.count == 0 {
            return Err("ids.count: must be at least 1".into());
        }
        self.ids.caps()?;
        let one_id = self.ids.range == IdRange::Invoker && self.ids.count == 1;
        if one_id && self.ids.user.is_some() {
            return Err("--user: the guest has one id; give --userns-range".into());
        }
        if one_id && !(self.ids.cap_drop.is_empty() && self.ids.cap_add.is_empty()) {
            return Err(
                "--cap-drop/--cap-add: the guest has one id and no capabilities; give --userns-range"
                    .into(),
            );
        }
        Ok(())
    }
}

impl Ids {
    /// The guest root's capabilities (bit N: capability N) after
    /// `cap_drop` and `cap_add`; a name outside the default set is a
    /// one-line error.
    pub fn caps(&self) -> Result<u64, String> {
        use crate::launch::guest_caps;
        let mask = |names: &[String]| -> Result<u64, String> {
            names
                .iter()
                .try_fold(0, |m, n| Ok(m | guest_caps::parse(n)?))
        };
        Ok(guest_caps::resolve(
            mask(&self.cap_drop)?,
            mask(&self.cap_add)?,
        ))
    }
}

impl GuestEnv {
    /// The guest's whole environment.
    pub fn resolve(&self) -> Result<Vec<(OsString, OsString)>, LaunchError> {
        match self {
            GuestEnv::Exact(pairs) => Ok(pairs.clone()),
            GuestEnv::FromHost(extra) => host_env(extra),
        }
    }
}

/// [`GuestEnv::FromHost`]'s environment: the host's PATH, HOME, LANG and
/// TERM where set, then `extra` (`K=V`, or a name copied from the host).
pub fn host_env(extra: &[String]) -> Result<Vec<(OsString, OsString)>, LaunchError> {
    let mut env: Vec<(OsString, OsString)> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for item in extra {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.to_string(), OsString::from(v)),
            None => match std::env::var_os(item) {
                Some(v) => (item.clone(), v),
                None => continue,
            },
        };
        if k.is_empty() || k.contains('\0') {
            return Err(LaunchError {
                exit_code: 125,
                message: format!("--env {item}: invalid variable name"),
            });
        }
        env.retain(|(old, _)| old != k.as_str());
        env.push((k.into(), v));
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimits_name_a_resource_and_keep_soft_below_hard() {
        let with = |resource, soft, hard| {
            let mut config = SandboxConfig::new(vec!["true".into()]);
            config.limits.rlimits = vec![crate::limits::GuestRlimit {
                resource,
                soft,
                hard,
            }];
            config.validate()
        };
        assert!(with(7, 8, 200).is_ok());
        assert!(with(4, 0, u64::MAX).is_ok());
        assert_eq!(with(16, 1, 1).unwrap_err(), "rlimit 16: no such resource");
        assert!(with(7, 9, 8).is_err());
    }

    #[test]
    fn a_config_survives_json() {
        let mut config = SandboxConfig::new(vec!["true".into()]);
        config.fs.mounts = vec![
            MountSpec::parse_ro("/usr:/u").unwrap(),
            MountSpec::parse_tmpfs("/scratch:1m").unwrap(),
        ];
        config.net.allow = vec![netstack::rules::Rule::parse("*.example.org:443").unwrap()];
        config.net.publish = vec!["8080:80/udp".parse().unwrap()];
        config.limits.memory = Some(1 << 20);
        config.limits.rlimits = vec![crate::limits::GuestRlimit {
            resource: 7,
            soft: 8,
            hard: 200,
        }];
        config.fs.root_read_only = true;
        let text = serde_json::to_string(&config).unwrap();
        let back = SandboxConfig::from_json(&text).unwrap();
        assert_eq!(back.fs.mounts, config.fs.mounts);
        assert_eq!(back.net.allow, config.net.allow);
        assert_eq!(back.net.publish, config.net.publish);
        assert_eq!(back.limits, config.limits);
        assert!(back.fs.root_read_only);
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }

    #[test]
    fn validate_refuses_what_no_flag_could_give() {
        let mut config = SandboxConfig::new(vec!["true".into()]);
        assert_eq!(config.validate(), Ok(()));
        config.limits.cpus = Some(0.0);
        assert!(config.validate().is_err());
        config.limits.cpus = None;
        config.fs.disk = 0;
        assert_eq!(config.validate(), Err("disk: must be at least 1".into()));
        let empty = SandboxConfig::new(Vec::new());
        assert_eq!(empty.validate(), Err("no command given".into()));
    }

    #[test]
    fn bad_json_is_one_line() {
        let err = SandboxConfig::from_json("{\"command\": 1}").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
    }
}
