//! A bundle's config.json (read by `config.rs`), translated
//! into a [`SandboxConfig`]: the bundle's root becomes the root file
//! system (written in place unless `root.readonly`), its bind and tmpfs
//! mounts the sandbox's mounts, `maskedPaths` and `readonlyPaths` the
//! masked and read-only paths, `process.cwd` the working directory,
//! `process.rlimits` the guest's rlimits (all of them, soft and hard), `process.terminal` a terminal
//! on all three stdio; the environment is exactly `process.env`.
//!
//! What the sandbox provides itself is not taken from the config: /proc,
//! /dev (and devpts, mqueue), /sys, and /etc/hostname (the sandbox
//! writes its own). The engine's /dev/shm is honoured (`dev_shm.rs`). The engine's /etc/hosts and /etc/resolv.conf binds
//! are kept, as under runc (its DNS).
//! The network is set as runc's container has it ([`Bundle::network`]).
//! `process.user` is checked here (`user.rs`) and becomes the config's
//! user; capabilities never widen the sandbox's policy and are not
//! read.
//!
//! Owns the translation; not the resources (`cgroup.rs`) or the hooks
//! (`hooks.rs`), which read the spec themselves.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use super::config::{LinuxResources, Mount, PosixRlimitType, Process, Spec};
use super::mount_kind::{classify, OciMountKind};
use vfs::mounts::{MountKind, MountSpec};

use netstack::rules::Rule;
use sandbox::config::{GuestEnv, NetConfig, OutsideLimits, SandboxConfig, Terminal};
use sandbox::launch::env_pairs;
use sandbox::limits::GuestRlimit;

/// Mount destinations that are the sandbox's own. The engine's
/// /etc/hosts and /etc/resolv.conf binds are not: they go over the
/// sandbox's own files as under runc (the engine rewrites them in place:
/// Docker's `libnetwork-setkey` hook names its resolver there after
/// `create`), but resolv.conf stays the sandbox's own when egress rules
/// name hosts (the DNS stub resolves those).
const SANDBOX_OWN: &[&str] = &["/proc", "/dev", "/sys", "/etc/hostname"];

/// Docker's embedded resolver on its user-defined networks, in the
/// container's network namespace: the guest reaches it there.
const DOCKER_RESOLVER: &str = "127.0.0.11:53";

/// A loaded bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The bundle directory (absolute).
    pub dir: PathBuf,
    pub spec: Spec,
    /// The root file system (absolute).
    pub rootfs: PathBuf,
}

/// An error and its causes, one line.
fn causes(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        line.push_str(": ");
        line.push_str(&c.to_string());
        cause = c.source();
    }
    line
}

impl Bundle {
    pub fn load(dir: &Path) -> Result<Bundle, String> {
        let dir = dir
            .canonicalize()
            .map_err(|e| format!("bundle {}: {e}", dir.display()))?;
        let config = dir.join("config.json");
        let spec =
            Spec::load(&config).map_err(|e| format!("{}: {}", config.display(), causes(&e)))?;
        let root = spec
            .root()
            .as_ref()
            .ok_or_else(|| format!("{}: no root", config.display()))?;
        let rootfs = dir.join(root.path());
        if !rootfs.is_dir() {
            return Err(format!("rootfs {}: not a directory", rootfs.display()));
        }
        Ok(Bundle { dir, spec, rootfs })
    }

    /// Whether the container may write to its root (`root.readonly`
    /// false or absent): the guest then writes to the bundle's root
    /// itself, as under runc, where the engine looks (`docker cp`).
    /// A read-only root keeps the sandbox's overlay, whose `/` mount is
    /// then read-only to the guest (runc's `readonly`).
    pub fn root_writable(&self) -> bool {
        let readonly = self.spec.root().as_ref().and_then(|r| r.readonly());
        !readonly.unwrap_or(false)
    }

    fn process(&self) -> Result<&Process, String> {
        self.spec
            .process()
            .as_ref()
            .ok_or_else(|| "config.json: no process".to_string())
    }

    /// Whether the process asks for a terminal.
    pub fn terminal(&self) -> bool {
        self.process()
            .ok()
            .and_then(|p| p.terminal())
            .unwrap_or(false)
    }

    /// `process.env` as (name, value) pairs.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let env = self.process().ok().and_then(|p| p.env().clone());
        env_pairs(&env.unwrap_or_default())
    }

    pub fn cgroups_path(&self) -> Option<String> {
        let path = self.spec.linux().as_ref()?.cgroups_path().as_ref()?;
        Some(path.to_string_lossy().into_owned())
    }

    pub fn resources(&self) -> Option<LinuxResources> {
        self.spec.linux().as_ref()?.resources().clone()
    }

    /// `process.terminal`: a terminal on all three stdio, its master
    /// sent to `console_socket`, which it then needs.
    pub fn terminal_for(&self, console_socket: Option<&Path>) -> Result<Terminal, String> {
        match (self.terminal(), console_socket) {
            (false, _) => Ok(Terminal::Never),
            (true, Some(path)) => Ok(Terminal::Console(path.to_path_buf())),
            (true, None) => Err("terminal: true needs --console-socket".into()),
        }
    }

    /// The limits the guest is told of: `linux.resources`' memory
    /// limit, CPUs (quota / period) and pids limit, as `--memory`,
    /// `--cpus` and `--pids` would tell it. They are enforced by the
    /// container's cgroup (`resources.rs`), not by the run.
    pub fn outside_limits(&self) -> OutsideLimits {
        let Some(res) = self.resources() else {
            return OutsideLimits::default();
        };
        let memory = res.memory().as_ref().and_then(|m| m.limit());
        let cpus = res.cpu().as_ref().and_then(|c| {
            let quota = c.quota().filter(|q| *q > 0)?;
            let period = c.period().filter(|p| *p > 0).unwrap_or(100_000);
            Some(quota as f64 / period as f64)
        });
        let pids = res.pids().as_ref().map(|p| p.limit());
        OutsideLimits {
            memory: memory
                .and_then(|m| u64::try_from(m).ok())
                .filter(|m| *m > 0),
            cpus,
            pids: pids.and_then(|p| u64::try_from(p).ok()).filter(|p| *p > 0),
            cgroup: None,
        }
    }

    pub fn annotations(&self) -> std::collections::BTreeMap<String, String> {
        self.spec
            .annotations()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    /// The user the container's command runs as (`None`: the runtime's own).
    pub fn user(&self) -> Result<Option<sandbox::launch::GuestUser>, String> {
        super::user::from_spec(self.process()?.user()).map_err(|e| format!("process.user: {e}"))
    }

    /// The host range `linux.uidMappings` and `gidMappings` map the
    /// container's ids onto (`user::mapped_range`).
    pub fn id_range(&self) -> Result<Option<sandbox::launch::subids::HostRange>, String> {
        let Some(linux) = self.spec.linux() else {
            return Ok(None);
        };
        let none = Vec::new();
        super::user::mapped_range(
            linux.uid_mappings().as_ref().unwrap_or(&none),
            linux.gid_mappings().as_ref().unwrap_or(&none),
        )
    }

    /// The sandbox this bundle is; warnings for what is left out.
    pub fn sandbox_config(
        &self,
        state_root: &Path,
    ) -> Result<(SandboxConfig, Vec<String>), String> {
        let process = self.process()?;
        let mut warnings = Vec::new();
        let command: Vec<OsString> = process
            .args()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(OsString::from)
            .collect();
        if command.is_empty() {
            return Err("config.json: process.args is empty".into());
        }
        let user =
            super::user::from_spec(process.user()).map_err(|e| format!("process.user: {e}"))?;
        let mut config = SandboxConfig::new(command);
        config.env = GuestEnv::Exact(self.env());
        config.ids.user = user;
        let mapped = self.id_range()?;
        let (range, count, keep_ids) = match super::user::overlay_root(
            &self.rootfs,
            mapped,
            !self.root_writable(),
            state_root,
        ) {
            Some(warning) => {
                warnings.push(warning);
                super::user::host_ids()
            }
            None => super::user::id_range(mapped),
        };
        (config.ids.range, config.ids.count) = (range, count);
        config.ids.mounts_keep_ids = keep_ids;
        // The terminal is `create`'s to say (`terminal_for`).
        config.terminal = Terminal::Never;
        // The guest waits for `start`; `state` and `delete` need its
        // init reaped when it has ended.
        config.schedule.start_early = false;
        config.schedule.leave_teardown = false;
        config.fs.rootfs = Some(self.rootfs.clone());
        config.fs.rootfs_in_place = self.root_writable();
        config.fs.root_read_only = !self.root_writable();
        config.workdir = Some(process.cwd().clone());
        if let Some(h) = self.spec.hostname().as_ref().filter(|h| !h.is_empty()) {
            config.hostname = h.clone();
        }
        // A pod's containers: the IPC and UTS namespaces named by path.
        config.join = super::namespaces::joined(&self.spec);
        for rl in process.rlimits().clone().unwrap_or_default() {
            config.limits.rlimits.push(GuestRlimit {
                resource: resource_number(rl.typ()),
                soft: rl.soft(),
                hard: rl.hard(),
            });
        }
        // Read-only binds, then writable ones, then tmpfs, as `run`'s
        // flags order them.
        let mut mounts = Vec::new();
        let own_resolv_conf = self
            .egress_rules()?
            .is_some_and(|r| r.iter().any(Rule::is_name));
        for m in self.spec.mounts().clone().unwrap_or_default() {
            let dest = m.destination();
            if own_resolv_conf && dest == Path::new("/etc/resolv.conf") {
                continue;
            }
            match translate_mount(&m) {
                Ok(Some(spec)) => mounts.push(spec),
                Ok(None) => {}
                Err(w) => warnings.push(w),
            }
        }
        mounts.sort_by_key(|m| match m.kind {
            MountKind::ReadOnly => 0,
            MountKind::ReadWrite => 1,
            MountKind::Tmpfs { .. } => 2,
        });
        config.fs.mounts = mounts;
        let (dev_shm, warning) = super::dev_shm::from_spec(&self.spec);
        config.fs.dev_shm = dev_shm;
        warnings.extend(warning);
        if let Some(linux) = self.spec.linux() {
            for p in linux.masked_paths().clone().unwrap_or_default() {
                match vfs::mounts::parse_mask(&p) {
                    Ok(path) => config.fs.masks.push(path),
                    Err(e) => warnings.push(e.to_string()),
                }
            }
            for p in linux.readonly_paths().clone().unwrap_or_default() {
                match vfs::mounts::parse_remount_ro(&p) {
                    Ok(path) => config.fs.read_only.push(path),
                    Err(e) => warnings.push(e.to_string()),
                }
            }
        }
        self.network(&mut config.net)?;
        config.validate()?;
        Ok((config, warnings))
    }

    /// The container's network as runc gives it: egress to whatever its
    /// network namespace reaches (`netns.rs`: the anchor and monitor live
    /// there), limited to [`EGRESS_ANNOTATION`]'s rules when given; every
    /// guest listener on a wildcard address published on the namespace's
    /// interfaces. The engine's name servers on loopback (read from its
    /// resolv.conf now, and Docker's resolver, which its hook writes there
    /// later) are the namespace's: egress reaches their port 53.
    fn network(&self, net: &mut NetConfig) -> Result<(), String> {
        let mut resolvers = self
            .engine_file("/etc/resolv.conf")
            .map(|text| loopback_name_servers(&text))
            .unwrap_or_default();
        resolvers.extend(Rule::parse(DOCKER_RESOLVER));
        match self.egress_rules()? {
            Some(rules) => {
                net.open = false;
                net.allow = rules;
            }
            None => net.open = true,
        }
        net.allow.extend(resolvers);
        net.publish_listeners = true;
        Ok(())
    }

    /// [`EGRESS_ANNOTATION`]'s rules, if the annotation is given.
    fn egress_rules(&self) -> Result<Option<Vec<Rule>>, String> {
        let annotations = self.annotations();
        let Some(text) = annotations.get(EGRESS_ANNOTATION) else {
            return Ok(None);
        };
        parse_rules(text)
            .map(Some)
            .map_err(|e| format!("annotation {EGRESS_ANNOTATION}: {e}"))
    }

    /// The contents of the file the engine binds at `dest`, read now.
    fn engine_file(&self, dest: &str) -> Option<String> {
        let mounts = self.spec.mounts().as_ref()?;
        let m = mounts
            .iter()
            .rev()
            .find(|m| m.destination().as_os_str() == dest)?;
        std::fs::read_to_string(m.source().as_ref()?).ok()
    }
}

/// The annotation that limits a container's egress to `--allow-net`
/// rules (comma-separated, as `run` takes them); without it the
/// container reaches what its network namespace reaches, as under runc.
pub const EGRESS_ANNOTATION: &str = "org.example.supervisor.egress";

/// Rules separated by commas (blanks around them ignored).
fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(Rule::parse)
        .collect()
}

/// Rules for the loopback name servers a resolv.conf names (port 53):
/// those are the network namespace's (Docker's embedded resolver at
/// 127.0.0.11), not the sandbox's own loopback.
fn loopback_name_servers(resolv_conf: &str) -> Vec<Rule> {
    resolv_conf
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next())?
        })
        .filter_map(|ip| ip.parse::<IpAddr>().ok())
        .filter(IpAddr::is_loopback)
        .filter_map(|ip| Rule::parse(&SocketAddr::new(ip, 53).to_string()).ok())
        .collect()
}

/// The Linux resource number of an rlimit name.
fn resource_number(typ: PosixRlimitType) -> u32 {
    use PosixRlimitType as T;
    // glibc's resource numbers are u32 (`__rlimit_resource_t`).
    match typ {
        T::RlimitCpu => libc::RLIMIT_CPU,
        T::RlimitFsize => libc::RLIMIT_FSIZE,
        T::RlimitData => libc::RLIMIT_DATA,
        T::RlimitStack => libc::RLIMIT_STACK,
        T::RlimitCore => libc::RLIMIT_CORE,
        T::RlimitRss => libc::RLIMIT_RSS,
        T::RlimitNproc => libc::RLIMIT_NPROC,
        T::RlimitNofile => libc::RLIMIT_NOFILE,
        T::RlimitMemlock => libc::RLIMIT_MEMLOCK,
        T::RlimitAs => libc::RLIMIT_AS,
        T::RlimitLocks => libc::RLIMIT_LOCKS,
        T::RlimitSigpending => libc::RLIMIT_SIGPENDING,
        T::RlimitMsgqueue => libc::RLIMIT_MSGQUEUE,
        T::RlimitNice => libc::RLIMIT_NICE,
        T::RlimitRtprio => libc::RLIMIT_RTPRIO,
        T::RlimitRttime => libc::RLIMIT_RTTIME,
    }
}

/// A config mount as a sandbox mount: `Ok(None)` for the sandbox's own
/// file systems, `Err` (a warning) for what cannot be expressed.
fn translate_mount(m: &Mount) -> Result<Option<MountSpec>, String> {
    let dest = m.destination().to_string_lossy().into_owned();
    let own = SANDBOX_OWN
        .iter()
        .any(|o| dest == *o || dest.starts_with(&format!("{o}/")));
    if own {
        return Ok(None);
    }
    let spec = match classify(m) {
        OciMountKind::Tmpfs { size, .. } => match size {
            Some(s) => MountSpec::parse_tmpfs(&format!("{dest}:{s}")),
            None => MountSpec::parse_tmpfs(&dest),
        },
        OciMountKind::Bind {
            source, read_only, ..
        } => {
            let src = source.to_string_lossy().into_owned();
            if src.contains(':') || dest.contains(':') {
                return Err(format!(
                    "mount {src} on {dest}: ':' in a path is not supported"
                ));
            }
            match read_only {
                true => MountSpec::parse_ro(&format!("{src}:{dest}")),
                false => MountSpec::parse_rw(&format!("{src}:{dest}")),
            }
        }
        OciMountKind::Other { typ } => {
            return Err(format!("mount of type {typ:?} on {dest} is not supported"));
        }
    };
    spec.map(Some).map_err(|e| format!("mount on {dest}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_name_servers_are_the_namespaces() {
        let docker = "nameserver 127.0.0.11\noptions ndots:0\n";
        let rules: Vec<String> = loopback_name_servers(docker)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(rules, ["127.0.0.11:53"]);
        let host = "# generated\nnameserver 192.0.2.53\nnameserver ::1\nsearch example.org\n";
        let rules: Vec<String> = loopback_name_servers(host)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(rules, ["[::1]:53"]);
        assert!(loopback_name_servers("nameserver\nnameserver x\n").is_empty());
    }

    #[test]
    fn the_egress_annotation_is_a_list_of_rules() {
        let rules = parse_rules(" 203.0.113.0/24:443, *.example.org ,").unwrap();
        assert_eq!(rules.len(), 2);
        assert!(rules[1].is_name());
        assert!(parse_rules("203.0.113.0/24:x").is_err());
        assert!(parse_rules("").unwrap().is_empty());
    }
}
