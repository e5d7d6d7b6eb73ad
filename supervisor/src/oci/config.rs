//! A bundle's config.json as the runtime reads it: serde types for the
//! fields of the runtime spec (config.md) that some module of `oci/`
//! reads, and nothing else. A field the runtime does not read is not
//! parsed, so it is neither checked nor kept.
//!
//! Why types of our own and not a published crate of the whole spec:
//! the one there is validates `process.execCPUAffinity` with the `regex`
//! crate, whose Unicode tables are pointers that a static PIE relocates
//! at every start of the binary, for every command, cold runs and OCI
//! calls alike (PERFORMANCE.md, "the regex impersonation goes"). The
//! runtime reads some thirty fields; this module is those.
//!
//! What is refused is what runc refuses for these fields: a value of the
//! wrong JSON type, an unknown rlimit name, a CPU list that is not one
//! (`0-3,7`); and what the runtime has always refused: a process without
//! `user` or `cwd`, a mount without `destination`, a hook without `path`,
//! an rlimit without `type`. Everything else is optional, as in the
//! spec. The getters are named as the spec's fields (snake case) and
//! return a reference, or a copy for numbers and flags.
//!
//! Owns parsing; what each field means to the sandbox is `bundle.rs`'s,
//! `resources.rs`'s, `hooks.rs`'s and `user.rs`'s. The default config
//! `spec` writes is `default_config.json`, a document, not these types.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

/// Getters named as the fields: `get` ones return a reference, `copy`
/// ones a copy.
macro_rules! getters {
    ($ty:ident { $($kind:ident $name:ident: $field:ty),* $(,)? }) => {
        impl $ty {
            $(getters!(@one $kind $name: $field);)*
        }
    };
    (@one get $name:ident: $field:ty) => {
        pub fn $name(&self) -> &$field {
            &self.$name
        }
    };
    (@one copy $name:ident: $field:ty) => {
        pub fn $name(&self) -> $field {
            self.$name
        }
    };
}

/// config.json.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default)]
    root: Option<Root>,
    #[serde(default)]
    mounts: Option<Vec<Mount>>,
    #[serde(default)]
    process: Option<Process>,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    hooks: Option<Hooks>,
    #[serde(default)]
    annotations: Option<HashMap<String, String>>,
    #[serde(default)]
    linux: Option<Linux>,
}

getters!(Spec {
    get root: Option<Root>,
    get mounts: Option<Vec<Mount>>,
    get process: Option<Process>,
    get hostname: Option<String>,
    get hooks: Option<Hooks>,
    get annotations: Option<HashMap<String, String>>,
    get linux: Option<Linux>,
});

/// Why a config cannot be read: one line.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Spec {
    /// The config at `path`.
    pub fn load(path: &Path) -> Result<Spec, ConfigError> {
        let text = std::fs::read(path).map_err(|e| ConfigError(e.to_string()))?;
        serde_json::from_slice(&text).map_err(|e| ConfigError(e.to_string()))
    }
}

/// `root`.
#[derive(Deserialize, Debug, Clone, Default)]
pub struct Root {
    #[serde(default)]
    path: PathBuf,
    #[serde(default)]
    readonly: Option<bool>,
}

getters!(Root {
    get path: PathBuf,
    copy readonly: Option<bool>,
});

/// One of `mounts`.
#[derive(Deserialize, Debug, Clone)]
pub struct Mount {
    destination: PathBuf,
    #[serde(default, rename = "type")]
    typ: Option<String>,
    #[serde(default)]
    source: Option<PathBuf>,
    #[serde(default)]
    options: Option<Vec<String>>,
}

getters!(Mount {
    get destination: PathBuf,
    get typ: Option<String>,
    get source: Option<PathBuf>,
    get options: Option<Vec<String>>,
});

/// `process` (also `exec --process`'s file).
#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    #[serde(default)]
    terminal: Option<bool>,
    user: User,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<Vec<String>>,
    cwd: PathBuf,
    #[serde(default)]
    rlimits: Option<Vec<PosixRlimit>>,
    /// Checked, not applied (the sandbox does not pin CPUs).
    #[serde(default, rename = "execCPUAffinity")]
    _exec_cpu_affinity: Option<ExecCpuAffinity>,
}

getters!(Process {
    copy terminal: Option<bool>,
    get user: User,
    get args: Option<Vec<String>>,
    get env: Option<Vec<String>>,
    get cwd: PathBuf,
    get rlimits: Option<Vec<PosixRlimit>>,
});

/// `process.user`.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[serde(default)]
    uid: u32,
    #[serde(default)]
    gid: u32,
    #[serde(default)]
    additional_gids: Option<Vec<u32>>,
}

getters!(User {
    copy uid: u32,
    copy gid: u32,
    get additional_gids: Option<Vec<u32>>,
});

/// One of `process.rlimits`.
#[derive(Deserialize, Debug, Clone)]
pub struct PosixRlimit {
    #[serde(rename = "type")]
    typ: PosixRlimitType,
    #[serde(default)]
    hard: u64,
    #[serde(default)]
    soft: u64,
}

getters!(PosixRlimit {
    copy typ: PosixRlimitType,
    copy hard: u64,
    copy soft: u64,
});

/// The rlimit names the spec allows (`RLIMIT_NOFILE`, ...); any other
/// is refused, as runc refuses it.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PosixRlimitType {
    RlimitCpu,
    RlimitFsize,
    RlimitData,
    RlimitStack,
    RlimitCore,
    RlimitRss,
    RlimitNproc,
    RlimitNofile,
    RlimitMemlock,
    RlimitAs,
    RlimitLocks,
    RlimitSigpending,
    RlimitMsgqueue,
    RlimitNice,
    RlimitRtprio,
    RlimitRttime,
}

/// `process.execCPUAffinity`: two CPU lists.
#[derive(Deserialize, Debug, Clone)]
struct ExecCpuAffinity {
    #[serde(default, rename = "initial", deserialize_with = "cpu_list")]
    _initial: Option<String>,
    #[serde(default, rename = "final", deserialize_with = "cpu_list")]
    _final: Option<String>,
}

/// A CPU list (`0-3,7`), or the spec's error for anything else.
fn cpu_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let list = Option::<String>::deserialize(d)?;
    match &list {
        Some(s) if !is_cpu_list(s) => Err(serde::de::Error::custom(format!(
            "Invalid execCPUAffinity format: {s}"
        ))),
        _ => Ok(list),
    }
}

/// `N` or `N-M` items (ASCII digits), comma-separated, at least one.
fn is_cpu_list(s: &str) -> bool {
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    s.split(',').all(|item| match item.split_once('-') {
        Some((first, last)) => number(first) && number(last),
        None => number(item),
    })
}

/// `hooks`: the ones the runtime runs.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Hooks {
    #[serde(default)]
    prestart: Option<Vec<Hook>>,
    #[serde(default)]
    create_runtime: Option<Vec<Hook>>,
    #[serde(default)]
    poststart: Option<Vec<Hook>>,
    #[serde(default)]
    poststop: Option<Vec<Hook>>,
}

getters!(Hooks {
    get prestart: Option<Vec<Hook>>,
    get create_runtime: Option<Vec<Hook>>,
    get poststart: Option<Vec<Hook>>,
    get poststop: Option<Vec<Hook>>,
});

/// One hook; also kept in the container's record (`state.rs`) for
/// `start` and `delete`, so it serializes as it was read.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Hook {
    path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    env: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout: Option<i64>,
}

getters!(Hook {
    get path: PathBuf,
    get args: Option<Vec<String>>,
    get env: Option<Vec<String>>,
    copy timeout: Option<i64>,
});

/// `linux`.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Linux {
    #[serde(default)]
    resources: Option<LinuxResources>,
    #[serde(default)]
    cgroups_path: Option<PathBuf>,
    #[serde(default)]
    masked_paths: Option<Vec<String>>,
    #[serde(default)]
    readonly_paths: Option<Vec<String>>,
    #[serde(default)]
    uid_mappings: Option<Vec<LinuxIdMapping>>,
    #[serde(default)]
    gid_mappings: Option<Vec<LinuxIdMapping>>,
    #[serde(default)]
    namespaces: Option<Vec<LinuxNamespace>>,
    #[serde(default)]
    sysctl: Option<HashMap<String, String>>,
}

getters!(Linux {
    get resources: Option<LinuxResources>,
    get cgroups_path: Option<PathBuf>,
    get masked_paths: Option<Vec<String>>,
    get readonly_paths: Option<Vec<String>>,
    get uid_mappings: Option<Vec<LinuxIdMapping>>,
    get gid_mappings: Option<Vec<LinuxIdMapping>>,
    get namespaces: Option<Vec<LinuxNamespace>>,
    get sysctl: Option<HashMap<String, String>>,
});

/// One of `linux.namespaces`: a type (`network`, `ipc`, ...) and, to
/// join an existing namespace, its path.
#[derive(Deserialize, Debug, Clone)]
pub struct LinuxNamespace {
    #[serde(rename = "type")]
    typ: String,
    #[serde(default)]
    path: Option<PathBuf>,
}

getters!(LinuxNamespace {
    get typ: String,
    get path: Option<PathBuf>,
});

/// One line of `linux.uidMappings` or `linux.gidMappings`: container ids
/// `container_id` onward are host ids `host_id` onward, `size` of them.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LinuxIdMapping {
    #[serde(rename = "containerID")]
    pub container_id: u32,
    #[serde(rename = "hostID")]
    pub host_id: u32,
    pub size: u32,
}

/// `linux.resources` (also `update --resources`' JSON): the limits the
/// runtime writes (`resources.rs`).
#[derive(Deserialize, Debug, Clone, Default)]
pub struct LinuxResources {
    #[serde(default)]
    memory: Option<LinuxMemory>,
    #[serde(default)]
    cpu: Option<LinuxCpu>,
    #[serde(default)]
    pids: Option<LinuxPids>,
}

getters!(LinuxResources {
    get memory: Option<LinuxMemory>,
    get cpu: Option<LinuxCpu>,
    get pids: Option<LinuxPids>,
});

impl LinuxResources {
    pub fn set_memory(&mut self, memory: Option<LinuxMemory>) {
        self.memory = memory;
    }

    pub fn set_pids(&mut self, pids: Option<LinuxPids>) {
        self.pids = pids;
    }
}

/// `linux.resources.memory`, in bytes.
#[derive(Deserialize, Debug, Clone, Copy, Default)]
pub struct LinuxMemory {
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    swap: Option<i64>,
}

getters!(LinuxMemory {
    copy limit: Option<i64>,
    copy swap: Option<i64>,
});

impl LinuxMemory {
    pub fn set_limit(&mut self, limit: Option<i64>) {
        self.limit = limit;
    }
}

/// `linux.resources.cpu`.
#[derive(Deserialize, Debug, Clone, Copy, Default)]
pub struct LinuxCpu {
    #[serde(default)]
    shares: Option<u64>,
    #[serde(default)]
    quota: Option<i64>,
    #[serde(default)]
    period: Option<u64>,
}

getters!(LinuxCpu {
    copy shares: Option<u64>,
    copy quota: Option<i64>,
    copy period: Option<u64>,
});

/// `linux.resources.pids`.
#[derive(Deserialize, Debug, Clone, Copy, Default)]
pub struct LinuxPids {
    #[serde(default)]
    limit: i64,
}

getters!(LinuxPids { copy limit: i64 });

impl LinuxPids {
    pub fn set_limit(&mut self, limit: i64) {
        self.limit = limit;
    }
}

#[cfg(test)]
mod tests;

/// A config.json with only these `linux.namespaces` (a JSON array), for
/// the tests of the modules that read them.
#[cfg(test)]
pub(super) fn spec_with_namespaces(namespaces: &str) -> Spec {
    let json = format!(r#"{{"linux": {{"namespaces": {namespaces}}}}}"#);
    serde_json::from_str(&json).expect("a test's namespaces")
}
