//! What a client asks for: a session ([`SessionSpec`]: limits, egress
//! rules, published ports, a volume, the idle TTL and the maximum
//! lifetime, the operator's metadata) and one command in it ([`ExecSpec`]). Both come from the
//! API as JSON and are hostile: unknown fields are refused, and
//! [`SessionSpec::run_flags`] turns a session into `supervisor run`'s
//! flags, which the command line's own parser then checks, so a session's
//! sandbox is exactly the sandbox `run` would make with those flags.
//!
//! Owns the request types and their checks; not the running sessions.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::metadata::Metadata;
use super::volume::VolumeName;

/// Idle TTL when none is asked for.
pub const DEFAULT_IDLE_TTL: u64 = 15 * 60;
/// Maximum lifetime when none is asked for.
pub const DEFAULT_MAX_LIFETIME: u64 = 24 * 3600;
/// Longest idle TTL or lifetime accepted (30 days).
const MAX_SECONDS: u64 = 30 * 24 * 3600;
/// The working directory of a session without a volume.
pub const SCRATCH_DIR: &str = "/tmp";

/// A new session (field names as `POST /v1/executions` has them).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// The whole session's limits.
    #[serde(default)]
    pub limits: SessionLimits,
    /// Egress rules (`supervisor run --allow-net`'s syntax); none: no egress.
    #[serde(default)]
    pub egress: Vec<String>,
    /// Published ports, as `--publish` takes them (`[HOSTIP:]HOSTPORT:GUESTPORT`).
    #[serde(default)]
    pub publish: Vec<String>,
    /// Variables every command of the session gets.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A persistent volume mounted read-write in the session.
    #[serde(default)]
    pub volume: Option<VolumeSpec>,
    /// Seconds without an exec or file request before the session ends.
    #[serde(default)]
    pub idle_ttl_s: Option<u64>,
    /// Seconds after its creation at which the session ends regardless.
    #[serde(default)]
    pub max_lifetime_s: Option<u64>,
    /// The template the session is made from (`templates.rs`): its
    /// sandbox and processes; only the lifetimes may be given besides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Seconds without an exec or file request before the session
    /// hibernates (none: only when asked).
    #[serde(default)]
    pub idle_hibernate_s: Option<u64>,
    /// The operator's tags (`metadata.rs`): kept, shown and filtered on,
    /// never passed into the guest.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "super::metadata::deserialize"
    )]
    pub metadata: Metadata,
}

/// A session's limits (those of `supervisor run`: the whole sandbox's).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    /// The writable layer's cap (default 1 GiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
}

/// A volume by name, and where the session sees it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeSpec {
    pub name: String,
    /// Absolute path inside the session (default /data).
    #[serde(default = "default_mount")]
    pub path: String,
}

fn default_mount() -> String {
    "/data".into()
}

/// One command in a session.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// The program and its arguments (PATH is searched).
    pub command: Vec<String>,
    /// Text on the command's stdin; none: an empty stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Variables added to the session's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory (default: the volume's path, else /tmp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Seconds after which the command is killed (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
}

/// Longest exec timeout accepted (a day).
const MAX_EXEC_TIMEOUT: f64 = 86_400.0;
/// Exec timeout when none is asked for.
const DEFAULT_EXEC_TIMEOUT: f64 = 60.0;

impl ExecSpec {
    /// Checks what the request can be checked for alone; the timeout.
    pub fn check(&self) -> Result<Duration, String> {
        if self.command.is_empty() || self.command[0].is_empty() {
            return Err("command: must name a program".into());
        }
        if self.command.iter().any(|a| a.contains('\0')) {
            return Err("command: NUL bytes are not allowed".into());
        }
        check_env(&self.env)?;
        if let Some(cwd) = &self.cwd {
            if !cwd.starts_with('/') || cwd.contains('\0') {
                return Err(format!("cwd {cwd:?}: must be an absolute path"));
            }
        }
        let t = self.timeout_s.unwrap_or(DEFAULT_EXEC_TIMEOUT);
        if !(t.is_finite() && t > 0.0 && t <= MAX_EXEC_TIMEOUT) {
            return Err(format!(
                "timeout_s {t}: must be more than 0 and at most {MAX_EXEC_TIMEOUT}"
            ));
        }
        Ok(Duration::from_secs_f64(t))
    }
}

fn check_env(env: &BTreeMap<String, String>) -> Result<(), String> {
    for (k, v) in env {
        if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
            return Err(format!(
                "env {k:?}: a name is non-empty without '=' or NUL, a value without NUL"
            ));
        }
    }
    Ok(())
}

/// The environment every command starts from (then the session's, then the exec's).
const BASE_ENV: [&str; 3] = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "HOME=/tmp",
];

/// A command's complete environment: the base, the session's
/// `session_env`, then `extra` (`K=V`); a later value of a name replaces
/// an earlier one.
pub fn command_env(session_env: &BTreeMap<String, String>, extra: &[String]) -> Vec<String> {
    let mut env: Vec<String> = Vec::new();
    for e in BASE_ENV
        .iter()
        .map(|s| s.to_string())
        .chain(env_strings(session_env))
        .chain(extra.iter().cloned())
    {
        let name = e.split_once('=').map_or(e.as_str(), |(k, _)| k).to_string();
        env.retain(|old| old.split_once('=').map_or(old.as_str(), |(k, _)| k) != name);
        env.push(e);
    }
    env
}

/// `env` as `K=V` strings.
pub fn env_strings(env: &BTreeMap<String, String>) -> Vec<String> {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

impl SessionSpec {
    /// The volume's name, checked.
    pub fn volume_name(&self) -> Result<Option<VolumeName>, String> {
        self.volume
            .as_ref()
            .map(|v| VolumeName::parse(&v.name))
            .transpose()
    }

    /// Idle TTL and maximum lifetime, checked.
    pub fn lifetimes(&self) -> Result<(Duration, Duration), String> {
        let check = |what: &str, v: Option<u64>, default: u64| match v.unwrap_or(default) {
            n @ 1..=MAX_SECONDS => Ok(Duration::from_secs(n)),
            n => Err(format!(
                "{what} {n}: must be at least 1 and at most {MAX_SECONDS} seconds"
            )),
        };
        Ok((
            check("idle_ttl_s", self.idle_ttl_s, DEFAULT_IDLE_TTL)?,
            check("max_lifetime_s", self.max_lifetime_s, DEFAULT_MAX_LIFETIME)?,
        ))
    }

    /// A request naming a template gives nothing that shapes the sandbox:
    /// that is the template's (its sessions are made before they are asked for).
    pub fn check_template_request(&self) -> Result<(), String> {
        let l = &self.limits;
        let shaped = l.memory_bytes.is_some()
            || l.cpus.is_some()
            || l.pids.is_some()
            || l.disk_bytes.is_some()
            || !self.egress.is_empty()
            || !self.publish.is_empty()
            || !self.env.is_empty()
            || self.volume.is_some();
        match shaped {
            true => Err("a session made from a template takes its limits, egress, env, publish and volume from the template: give only template, idle_ttl_s, max_lifetime_s, idle_hibernate_s and metadata".into()),
            false => Ok(()),
        }
    }

    /// The idle time after which the session hibernates, checked.
    pub fn idle_hibernate(&self) -> Result<Option<Duration>, String> {
        match self.idle_hibernate_s {
            None => Ok(None),
            Some(n @ 1..=MAX_SECONDS) => Ok(Some(Duration::from_secs(n))),
            Some(n) => Err(format!(
                "idle_hibernate_s {n}: must be at least 1 and at most {MAX_SECONDS} seconds"
            )),
        }
    }

    /// Where commands start, and file paths are relative to.
    pub fn workdir(&self) -> String {
        match &self.volume {
            Some(v) => v.path.clone(),
            None => SCRATCH_DIR.into(),
        }
    }

    /// `supervisor run`'s flags for this session's sandbox, the volume's
    /// host directory being `volume_dir`; checked by the command line's
    /// parser (`check_flags`).
    pub fn run_flags(&self, volume_dir: Option<&std::path::Path>) -> Result<Vec<OsString>, String> {
        check_env(&self.env)?;
        let mut flags: Vec<OsString> = Vec::new();
        // `--flag=value`: a value never reads as a flag.
        let mut push = |k: &str, v: String| flags.push(format!("{k}={v}").into());
        let l = &self.limits;
        if let Some(m) = l.memory_bytes {
            push("--memory", m.to_string());
        }
        if let Some(c) = l.cpus {
            push("--cpus", c.to_string());
        }
        if let Some(p) = l.pids {
            push("--pids", p.to_string());
        }
        if let Some(d) = l.disk_bytes {
            push("--disk", d.to_string());
        }
        for r in &self.egress {
            push("--allow-net", r.clone());
        }
        for p in &self.publish {
            push("--publish", p.clone());
        }
        for e in env_strings(&self.env) {
            push("--env", e);
        }
        match (&self.volume, volume_dir) {
            (Some(v), Some(dir)) => {
                if !v.path.starts_with('/') || v.path.contains(':') || v.path.contains('\0') {
                    return Err(format!(
                        "volume path {:?}: must be an absolute path without ':'",
                        v.path
                    ));
                }
                let host = dir.to_str().ok_or("the volume's directory is not UTF-8")?;
                push("--rw", format!("{host}:{}", v.path));
                push("--workdir", v.path.clone());
            }
            _ => push("--workdir", SCRATCH_DIR.into()),
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Result<SessionSpec, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(spec(r#"{"memory_bytes": 1}"#).is_err());
        assert!(spec(r#"{"limits": {"memroy_bytes": 1}}"#).is_err());
        assert!(spec(r#"{"volume": {"name": "v", "pth": "/x"}}"#).is_err());
        assert!(spec(r#"{"limits": {"memory_bytes": 536870912, "pids": 32}}"#).is_ok());
    }

    #[test]
    fn lifetimes_are_bounded() {
        assert!(spec(r#"{"idle_ttl_s": 0}"#).unwrap().lifetimes().is_err());
        assert!(spec(r#"{"max_lifetime_s": 99999999999}"#)
            .unwrap()
            .lifetimes()
            .is_err());
        let (idle, life) = spec(r#"{"idle_ttl_s": 5}"#).unwrap().lifetimes().unwrap();
        assert_eq!(idle, Duration::from_secs(5));
        assert_eq!(life, Duration::from_secs(DEFAULT_MAX_LIFETIME));
    }

    #[test]
    fn flags_carry_the_limits_and_the_volume() {
        let s = spec(
            r#"{"limits": {"memory_bytes": 268435456, "pids": 16}, "env": {"A": "b"},
                "volume": {"name": "v1", "path": "/work"}}"#,
        )
        .unwrap();
        let flags = s.run_flags(Some(std::path::Path::new("/d/v1"))).unwrap();
        let flags: Vec<String> = flags.iter().map(|f| f.to_string_lossy().into()).collect();
        for want in [
            "--memory=268435456",
            "--pids=16",
            "--env=A=b",
            "--rw=/d/v1:/work",
            "--workdir=/work",
        ] {
            assert!(flags.iter().any(|f| f == want), "{want}: {flags:?}");
        }
        let bad = spec(r#"{"volume": {"name": "v1", "path": "rel"}}"#).unwrap();
        assert!(bad.run_flags(Some(std::path::Path::new("/d/v1"))).is_err());
        let bad = spec(r#"{"env": {"A=B": "c"}}"#).unwrap();
        assert!(bad.run_flags(None).is_err());
    }

    #[test]
    fn a_template_request_gives_only_lifetimes() {
        let ok = spec(r#"{"template": "np", "idle_ttl_s": 5, "metadata": {"user": "u"}}"#).unwrap();
        assert!(ok.check_template_request().is_ok());
        for bad in [
            r#"{"template": "np", "limits": {"pids": 4}}"#,
            r#"{"template": "np", "env": {"A": "b"}}"#,
            r#"{"template": "np", "volume": {"name": "v"}}"#,
            r#"{"template": "np", "egress": ["203.0.113.1:80"]}"#,
        ] {
            assert!(
                spec(bad).unwrap().check_template_request().is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn command_env_lets_later_values_win() {
        let mut session = BTreeMap::new();
        session.insert("HOME".to_string(), "/data".to_string());
        let env = command_env(&session, &["X=1".into(), "HOME=/w".into()]);
        assert!(env.contains(&"HOME=/w".to_string()), "{env:?}");
        assert_eq!(env.iter().filter(|e| e.starts_with("HOME=")).count(), 1);
        assert!(env.iter().any(|e| e.starts_with("PATH=")));
    }

    #[test]
    fn exec_requests_are_checked() {
        let e = |j: &str| serde_json::from_str::<ExecSpec>(j).unwrap().check();
        assert!(e(r#"{"command": []}"#).is_err());
        assert!(e(r#"{"command": ["true"], "timeout_s": -1}"#).is_err());
        assert!(e(r#"{"command": ["true"], "env": {"": "x"}}"#).is_err());
        assert!(e(r#"{"command": ["true"], "cwd": "rel"}"#).is_err());
        assert!(e(r#"{"command": ["true"], "timeout_s": 2.5}"#).is_ok());
        assert!(serde_json::from_str::<ExecSpec>(r#"{"command": ["true"], "x": 1}"#).is_err());
    }
}
