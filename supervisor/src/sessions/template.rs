//! What a template is ([`TemplateSpec`]): a name, the session fields that
//! shape a sandbox (limits, egress, env, lifetimes), the `setup` commands
//! run in each of its sessions before anyone asks for one, and how many
//! such sessions to keep warm. Checked as hostile input, kept on disk as
//! `<data-dir>/templates/<name>.json`, and its setup run in a fresh
//! session sandbox ([`run_setup`]).
//!
//! Owns the template's type, its checks, its file and its setup; not the
//! warm sessions (`templates.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::exec;
use super::host::EXEC_SOCKET;
use super::registry::{one_line, SessionError};
use super::spec::{self, ExecSpec, SessionLimits, SessionSpec};

/// Warm sessions a template may ask for.
pub const MAX_WARM: u32 = 16;
/// Setup commands a template may have.
const MAX_SETUP: usize = 64;
/// Bytes of a setup command's output kept (for the error's last line).
const SETUP_OUTPUT_CAP: usize = 64 << 10;

/// A template (`POST /v1/templates`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// 1 to 64 of `A-Z a-z 0-9 _ . -`, not starting with a dot.
    pub name: String,
    #[serde(default)]
    pub limits: SessionLimits,
    #[serde(default)]
    pub egress: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Defaults of its sessions (a request may give its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ttl_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lifetime_s: Option<u64>,
    /// Commands run in order in each new session of the template; each
    /// must exit 0. Processes they leave running are the warm state.
    #[serde(default)]
    pub setup: Vec<ExecSpec>,
    /// Sessions kept set up and ready (0: each is set up when asked for).
    #[serde(default = "default_warm")]
    pub warm: u32,
    /// Refused with a reason (a fixed host port cannot be had by two warm sessions).
    #[serde(default, skip_serializing)]
    pub publish: Option<serde_json::Value>,
    /// Refused with a reason (a shared volume would join the siblings).
    #[serde(default, skip_serializing)]
    pub volume: Option<serde_json::Value>,
}

fn default_warm() -> u32 {
    1
}

/// The templates' directory under `data_dir`.
pub fn templates_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("templates")
}

impl TemplateSpec {
    /// The session every one of its sessions is, before it is handed out.
    pub fn session_spec(&self) -> SessionSpec {
        SessionSpec {
            limits: self.limits.clone(),
            egress: self.egress.clone(),
            env: self.env.clone(),
            idle_ttl_s: self.idle_ttl_s,
            max_lifetime_s: self.max_lifetime_s,
            ..SessionSpec::default()
        }
    }

    /// Checks everything that can be checked before anything runs; the
    /// sandbox's `run` flags.
    pub fn check(&self) -> Result<Vec<std::ffi::OsString>, String> {
        check_name(&self.name)?;
        if self.publish.is_some() {
            return Err("publish: a template's sessions cannot publish ports (two warm sessions cannot hold one host port)".into());
        }
        if self.volume.is_some() {
            return Err("volume: a template's sessions cannot mount a volume (a write in one would show in its siblings)".into());
        }
        if self.warm > MAX_WARM {
            return Err(format!("warm {}: at most {MAX_WARM}", self.warm));
        }
        if self.setup.len() > MAX_SETUP {
            return Err(format!("setup: at most {MAX_SETUP} commands"));
        }
        for (i, cmd) in self.setup.iter().enumerate() {
            cmd.check().map_err(|e| format!("setup[{i}]: {e}"))?;
        }
        let session = self.session_spec();
        session.lifetimes()?;
        let flags = session.run_flags(None)?;
        super::registry::check_flags(&flags)?;
        Ok(flags)
    }

    /// Writes the template to `<data-dir>/templates/<name>.json` (whole,
    /// through a rename).
    pub fn save(&self, data_dir: &Path) -> Result<(), String> {
        let dir = templates_dir(data_dir);
        let text = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        let tmp = dir.join(format!(".{}.json.tmp", self.name));
        let path = dir.join(format!("{}.json", self.name));
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Removes the template's file.
    pub fn remove(data_dir: &Path, name: &str) {
        let _ = std::fs::remove_file(templates_dir(data_dir).join(format!("{name}.json")));
    }

    /// Every template kept under `data_dir`; unreadable ones are skipped
    /// with a line on stderr.
    pub fn load_all(data_dir: &Path) -> Vec<TemplateSpec> {
        let Ok(entries) = std::fs::read_dir(templates_dir(data_dir)) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_slice::<TemplateSpec>(&t).map_err(|e| e.to_string()))
                .and_then(|t| t.check().map(|_| t))
            {
                Ok(t) => found.push(t),
                Err(e) => eprintln!("supervisor: templates: skipping {}: {e}", path.display()),
            }
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }
}

/// A template's name: one safe path component.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    match ok {
        true => Ok(()),
        false => Err(format!(
            "template name {name:?}: expected 1 to 64 of A-Z a-z 0-9 _ . - (not starting with '.')"
        )),
    }
}

/// Runs `spec`'s setup in the session sandbox whose directory is `dir`
/// and init `init`. A command that cannot run or does not exit 0 is a
/// [`SessionError::StartFailed`] naming it, with its last line.
pub fn run_setup(spec: &TemplateSpec, dir: &Path, init: i32) -> Result<(), SessionError> {
    for (i, cmd) in spec.setup.iter().enumerate() {
        let timeout = cmd.check().map_err(SessionError::BadRequest)?;
        let command = exec::Command {
            args: cmd.command.clone(),
            env: spec::command_env(&spec.env, &spec::env_strings(&cmd.env)),
            cwd: cmd.cwd.clone().unwrap_or_else(|| spec::SCRATCH_DIR.into()),
            stdin: cmd.stdin.clone().unwrap_or_default().into_bytes(),
            timeout,
            cap: SETUP_OUTPUT_CAP,
        };
        // The sandbox going away mid-setup (say, past its memory limit)
        // is the template's failure, not the daemon's.
        let out =
            exec::run(&dir.join(EXEC_SOCKET), init, &command, &mut |_, _| {}).map_err(|e| {
                let log = std::fs::read(dir.join("sandbox.log")).unwrap_or_default();
                SessionError::StartFailed(format!(
                    "setup[{i}] {:?}: {e}: {}",
                    cmd.command.join(" "),
                    one_line(&log, "the sandbox ended")
                ))
            })?;
        if out.exit_code == Some(0) {
            continue;
        }
        let how = match (out.reason, out.exit_code, out.signal) {
            (exec::Reason::Timeout, _, _) => format!("timed out after {:?}", timeout),
            (_, Some(code), _) => format!("exit {code}"),
            (_, None, Some(sig)) => format!("signal {sig}"),
            _ => "failed".into(),
        };
        let last = match out.message {
            Some(m) => m,
            None if !out.stderr.bytes.trim_ascii().is_empty() => one_line(&out.stderr.bytes, ""),
            None => one_line(&out.stdout.bytes, "no output"),
        };
        return Err(SessionError::StartFailed(format!(
            "setup[{i}] {:?}: {how}: {last}",
            cmd.command.join(" ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Result<TemplateSpec, String> {
        serde_json::from_str::<TemplateSpec>(json)
            .map_err(|e| e.to_string())
            .and_then(|t| t.check().map(|_| t))
    }

    #[test]
    fn templates_are_checked_before_anything_runs() {
        assert!(spec(r#"{"name": "np", "setup": [{"command": ["true"]}], "warm": 2}"#).is_ok());
        for bad in [
            r#"{"name": "../x"}"#,
            r#"{"name": ""}"#,
            r#"{"name": ".hidden"}"#,
            r#"{"name": "np", "warm": 17}"#,
            r#"{"name": "np", "setup": [{"command": []}]}"#,
            r#"{"name": "np", "publish": ["8000:8000"]}"#,
            r#"{"name": "np", "volume": {"name": "v"}}"#,
            r#"{"name": "np", "limits": {"pids": 0}}"#,
            r#"{"name": "np", "idle_ttl_s": 0}"#,
            r#"{"name": "np", "nonsense": 1}"#,
        ] {
            assert!(spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_template_is_saved_and_loaded_again() {
        let dir = std::env::temp_dir().join(format!("tpl-test-{}", std::process::id()));
        std::fs::create_dir_all(templates_dir(&dir)).unwrap();
        let t =
            spec(r#"{"name": "np", "env": {"A": "b"}, "setup": [{"command": ["true"]}]}"#).unwrap();
        t.save(&dir).unwrap();
        let all = TemplateSpec::load_all(&dir);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].name, "np");
        assert_eq!(all[0].setup[0].command, ["true"]);
        TemplateSpec::remove(&dir, "np");
        assert!(TemplateSpec::load_all(&dir).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
