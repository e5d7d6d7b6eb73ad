//! [`SandboxConfig`]: everything one sandbox is, as the front-ends build
//! it (`run` from its flags, the pool from its own, the OCI runtime from
//! a bundle's config.json), checked once by [`SandboxConfig::validate`].
//! It is plain data (serde), so a front-end may also read it as JSON
//! ([`SandboxConfig::from_json`]).
//!
//! Owns the configuration's shape, its defaults and its checks; its parts
//! live beside it, one concept each: `env` (the guest's environment),
//! `fs`, `net`, `ids`, `namespaces` (joined ones, the clocks' start),
//! `schedule` (terminal, start, timing) and `text` (values written as
//! their flag's text). Does not own parsing flags or config.json (the
//! front-ends), nor acting on it (`run/`, `launch/`).

mod env;
mod fs;
mod ids;
mod namespaces;
mod net;
mod schedule;
mod text;

pub use env::{host_env, GuestEnv};
pub use fs::FsConfig;
pub use ids::{IdRange, Ids};
pub use namespaces::{GuestClocks, JoinedNamespaces, JoinedPid};
pub use net::{NetConfig, SharedLoopback};
pub use schedule::{Schedule, StartMode, Terminal};

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::launch::{DevShm, DEFAULT_DISK_SIZE, DEFAULT_HOSTNAME};
use crate::limits::Limits;

/// Limits enforced outside the run (the OCI container's cgroup) and its
/// directories: the guest's /proc and /sys show them (`procfs`).
pub use procfs::{OutsideCgroup, OutsideLimits};

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
    /// static program into jumps to its trampolines, and the preload those
    /// of a dynamic program's loader and C library (docs/fast-reads.md,
    /// "Rewritten sites"); off (`run --no-rewrite`): each stays a signal
    /// (the loader's) or served (the preload's), and the text stays as it
    /// was built.
    #[serde(default = "rewrite_by_default")]
    pub rewrite_sites: bool,
}

fn rewrite_by_default() -> bool {
    true
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

#[cfg(test)]
mod tests {
    use super::*;
    use vfs::mounts::MountSpec;

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
