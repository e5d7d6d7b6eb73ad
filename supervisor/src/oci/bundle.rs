//! A bundle's config.json (read by `config.rs`), translated
//! into a `supervisor run`: the bundle's root becomes `--rootfs`, its
//! bind and tmpfs mounts `--ro`/`--rw`/`--tmpfs`, `maskedPaths` `--mask`,
//! `readonlyPaths` `--remount-ro`, `process.cwd` `--workdir`, `RLIMIT_NOFILE` `--nofile`; the
//! environment is exactly `process.env`.
//!
//! What the sandbox provides itself is not taken from the config: /proc,
//! /dev (and devpts, shm, mqueue), /sys, and the /etc files Docker binds
//! (hostname, hosts, resolv.conf: the sandbox writes its own).
//! `process.user` is checked here and applied by the monitor
//! (`user.rs`); capabilities never widen the sandbox's policy and are not
//! read.
//!
//! Owns the translation; not the resources (`cgroup.rs`) or the hooks
//! (`hooks.rs`), which read the spec themselves.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::config::{LinuxResources, Mount, PosixRlimitType, Process, Spec};
use vfs::mounts::MountSpec;

use crate::cli::RunArgs;
use crate::launch::env_pairs;
use crate::run::GuestView;

/// Mount destinations that are the sandbox's own.
const SANDBOX_OWN: &[&str] = &[
    "/proc",
    "/dev",
    "/sys",
    "/etc/hostname",
    "/etc/hosts",
    "/etc/resolv.conf",
];

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
    /// A read-only root keeps the sandbox's overlay.
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

    /// What the guest is told of its limits: `linux.resources`' memory
    /// limit, CPUs (quota / period) and pids limit, as `--memory`,
    /// `--cpus` and `--pids` would tell it. They are enforced by the
    /// container's cgroup (`resources.rs`), not by the run.
    pub fn guest_view(&self) -> GuestView {
        let Some(res) = self.resources() else {
            return GuestView::default();
        };
        let memory = res.memory().as_ref().and_then(|m| m.limit());
        let cpus = res.cpu().as_ref().and_then(|c| {
            let quota = c.quota().filter(|q| *q > 0)?;
            let period = c.period().filter(|p| *p > 0).unwrap_or(100_000);
            Some(quota as f64 / period as f64)
        });
        let pids = res.pids().as_ref().map(|p| p.limit());
        GuestView {
            memory: memory
                .and_then(|m| u64::try_from(m).ok())
                .filter(|m| *m > 0),
            cpus,
            pids: pids.and_then(|p| u64::try_from(p).ok()).filter(|p| *p > 0),
            ..GuestView::default()
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
    pub fn user(&self) -> Result<Option<crate::launch::GuestUser>, String> {
        super::user::from_spec(self.process()?.user()).map_err(|e| format!("process.user: {e}"))
    }

    /// The `supervisor run` this bundle is; warnings for what is left out.
    pub fn run_args(&self) -> Result<(RunArgs, Vec<String>), String> {
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
        super::user::from_spec(process.user()).map_err(|e| format!("process.user: {e}"))?;
        let mut args = empty_run_args(command);
        args.rootfs = Some(self.rootfs.clone());
        args.workdir = Some(process.cwd().clone());
        if let Some(h) = self.spec.hostname().as_ref().filter(|h| !h.is_empty()) {
            args.hostname = h.clone();
        }
        for rl in process.rlimits().clone().unwrap_or_default() {
            match rl.typ() {
                PosixRlimitType::RlimitNofile => args.nofile = Some(rl.hard().max(1)),
                other => warnings.push(format!("rlimit {other:?} is not applied")),
            }
        }
        for m in self.spec.mounts().clone().unwrap_or_default() {
            match translate_mount(&m) {
                Ok(Some(spec)) => match spec.kind {
                    vfs::mounts::MountKind::ReadOnly => args.ro.push(spec),
                    vfs::mounts::MountKind::ReadWrite => args.rw.push(spec),
                    vfs::mounts::MountKind::Tmpfs { .. } => args.tmpfs.push(spec),
                },
                Ok(None) => {}
                Err(w) => warnings.push(w),
            }
        }
        if let Some(linux) = self.spec.linux() {
            for p in linux.masked_paths().clone().unwrap_or_default() {
                match vfs::mounts::parse_mask(&p) {
                    Ok(path) => args.mask.push(path),
                    Err(e) => warnings.push(e.to_string()),
                }
            }
            for p in linux.readonly_paths().clone().unwrap_or_default() {
                match vfs::mounts::parse_remount_ro(&p) {
                    Ok(path) => args.remount_ro.push(path),
                    Err(e) => warnings.push(e.to_string()),
                }
            }
        }
        Ok((args, warnings))
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
    let options = m.options().clone().unwrap_or_default();
    let has = |o: &str| options.iter().any(|x| x == o);
    let typ = m.typ().clone().unwrap_or_default();
    let spec = if typ == "tmpfs" {
        let size = options.iter().find_map(|o| o.strip_prefix("size="));
        match size {
            Some(s) => MountSpec::parse_tmpfs(&format!("{dest}:{s}")),
            None => MountSpec::parse_tmpfs(&dest),
        }
    } else if typ == "bind" || has("bind") || has("rbind") {
        let src = m
            .source()
            .as_ref()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if src.contains(':') || dest.contains(':') {
            return Err(format!(
                "mount {src} on {dest}: ':' in a path is not supported"
            ));
        }
        match has("ro") {
            true => MountSpec::parse_ro(&format!("{src}:{dest}")),
            false => MountSpec::parse_rw(&format!("{src}:{dest}")),
        }
    } else {
        return Err(format!("mount of type {typ:?} on {dest} is not supported"));
    };
    spec.map(Some).map_err(|e| format!("mount on {dest}: {e}"))
}

/// A `RunArgs` with the flags' defaults and `command`.
fn empty_run_args(command: Vec<OsString>) -> RunArgs {
    RunArgs {
        ro: Vec::new(),
        rw: Vec::new(),
        tmpfs: Vec::new(),
        rootfs: None,
        mask: Vec::new(),
        remount_ro: Vec::new(),
        workdir: None,
        env: Vec::new(),
        hostname: crate::launch::DEFAULT_HOSTNAME.into(),
        allow_net: Vec::new(),
        publish: Vec::new(),
        writable_system: false,
        disk: crate::launch::DEFAULT_DISK_SIZE,
        memory: None,
        cpus: None,
        pids: None,
        timeout: None,
        cpu_time: None,
        output_limit: None,
        nofile: None,
        trace: None,
        report: None,
        workers: None,
        pool: None,
        command,
    }
}
