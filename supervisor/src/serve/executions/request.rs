//! `POST /v1/executions`'s body ([`ExecutionRequest`], unknown fields
//! refused) and its checks, which turn it into a [`Plan`]: the argv, the
//! environment, stdin, the files, and the sandbox's [`Shape`] (the limits
//! a pool is shaped by) with the execution's own timeout and output cap.
//! Every bad value is a one-line error (400).
//!
//! Does not own running the plan.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

/// The body.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ExecutionRequest {
    /// argv: the program and its arguments.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// `python3` or `sh` (with `code`), instead of `command`.
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    /// Files placed in the sandbox's scratch directory (/tmp, the
    /// starting directory) before the command starts.
    #[serde(default)]
    pub files: Vec<FileSpec>,
    #[serde(default)]
    pub stdin: Option<String>,
    /// `utf-8` (default) or `base64`.
    #[serde(default)]
    pub stdin_encoding: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: LimitsSpec,
    /// Egress rules (`supervisor run --allow-net`'s syntax); none: no egress.
    #[serde(default)]
    pub egress: Vec<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Relative to the scratch directory.
    pub path: String,
    pub content: String,
    /// `utf-8` (default) or `base64`.
    #[serde(default)]
    pub encoding: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    pub memory_bytes: Option<u64>,
    pub cpus: Option<f64>,
    pub pids: Option<u64>,
    pub timeout_s: Option<f64>,
    pub output_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
}

/// What shapes a sandbox (a pool's flags): executions of one shape share
/// a pool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    pub memory_bytes: Option<u64>,
    /// Thousandths of a CPU (a key must be exact).
    pub millicpus: Option<u64>,
    pub pids: Option<u64>,
    pub output_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
    pub egress: Vec<String>,
}

impl Shape {
    /// The flags `supervisor run` and `supervisor pool` take for it.
    pub fn flags(&self) -> Vec<String> {
        let mut f = vec![];
        if let Some(m) = self.memory_bytes {
            f.push(format!("--memory={m}"));
        }
        if let Some(c) = self.millicpus {
            f.push(format!("--cpus={}", c as f64 / 1000.0));
        }
        if let Some(p) = self.pids {
            f.push(format!("--pids={p}"));
        }
        if let Some(o) = self.output_bytes {
            f.push(format!("--output-limit={o}"));
        }
        if let Some(d) = self.disk_bytes {
            f.push(format!("--disk={d}"));
        }
        for rule in &self.egress {
            f.push(format!("--allow-net={rule}"));
        }
        f
    }
}

/// A checked request.
#[derive(Debug)]
pub struct Plan {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub shape: Shape,
    pub timeout_s: f64,
    /// Bytes of stdout, and of stderr, kept in the result.
    pub capture_bytes: usize,
}

/// The timeout when the request gives none (if `--max-timeout` is not
/// shorter).
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Bytes of each stream kept when `limits.output_bytes` is not given.
pub const DEFAULT_CAPTURE: usize = 1 << 20;
const MAX_FILES: usize = 1000;
const MAX_ARGS: usize = 4096;

/// The starting directory and scratch of every execution.
pub const SCRATCH: &str = "/tmp";

impl ExecutionRequest {
    /// The checked plan; `max_timeout_s`: `--max-timeout`.
    pub fn plan(self, max_timeout_s: f64) -> Result<Plan, String> {
        let argv = match (self.command, self.language, self.code) {
            (Some(c), None, None) => c,
            (None, Some(l), Some(code)) => match l.as_str() {
                "python3" | "python" => vec!["python3".into(), "-c".into(), code],
                "sh" | "bash" => vec![l.clone(), "-c".into(), code],
                other => {
                    return Err(format!(
                        "language {other:?}: one of python3, python, sh, bash"
                    ))
                }
            },
            (Some(_), _, _) => return Err("give either command or language and code".into()),
            (None, Some(_), None) => return Err("language needs code".into()),
            (None, None, Some(_)) => return Err("code needs language".into()),
            (None, None, None) => {
                return Err("no command: give command, or language and code".into())
            }
        };
        if argv.is_empty() || argv[0].is_empty() {
            return Err("command: the program is missing".into());
        }
        if argv.len() > MAX_ARGS {
            return Err(format!("command: more than {MAX_ARGS} arguments"));
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Err("command: an argument contains a NUL byte".into());
        }
        let mut env = vec![
            (
                "PATH".to_string(),
                "/usr/local/bin:/usr/bin:/bin".to_string(),
            ),
            ("HOME".to_string(), SCRATCH.to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];
        for (k, v) in self.env {
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(format!(
                    "env {k:?}: a name is non-empty without '=' or NUL, a value without NUL"
                ));
            }
            env.retain(|(old, _)| *old != k);
            env.push((k, v));
        }
        let stdin = decode(
            self.stdin.as_deref().unwrap_or(""),
            self.stdin_encoding.as_deref(),
            "stdin",
        )?;
        if self.files.len() > MAX_FILES {
            return Err(format!("files: more than {MAX_FILES}"));
        }
        let mut files = vec![];
        for f in self.files {
            let path = relative_path(&f.path)?;
            let content = decode(&f.content, f.encoding.as_deref(), &f.path)?;
            files.push((path, content));
        }
        let l = self.limits;
        let shape = Shape {
            memory_bytes: within(l.memory_bytes, "memory_bytes", 1 << 20, 1 << 40)?,
            millicpus: match l.cpus {
                None => None,
                Some(c) if c.is_finite() && (0.01..=1024.0).contains(&c) => {
                    Some((c * 1000.0).round() as u64)
                }
                Some(c) => return Err(format!("limits.cpus {c}: from 0.01 to 1024")),
            },
            pids: within(l.pids, "pids", 1, 1 << 22)?,
            output_bytes: within(l.output_bytes, "output_bytes", 1, 1 << 30)?,
            disk_bytes: within(l.disk_bytes, "disk_bytes", 1 << 20, 1 << 40)?,
            egress: {
                let mut rules = vec![];
                for r in self.egress {
                    netstack::rules::Rule::parse(&r).map_err(|e| format!("egress {r:?}: {e}"))?;
                    rules.push(r);
                }
                rules.sort();
                rules.dedup();
                rules
            },
        };
        let timeout_s = match l.timeout_s {
            None => DEFAULT_TIMEOUT_S.min(max_timeout_s),
            Some(t) if t.is_finite() && t > 0.0 && t <= max_timeout_s => t,
            Some(t) => {
                return Err(format!(
                    "limits.timeout_s {t}: more than 0, at most {max_timeout_s} (--max-timeout)"
                ))
            }
        };
        let capture_bytes = shape.output_bytes.map_or(DEFAULT_CAPTURE, |o| o as usize);
        Ok(Plan {
            argv,
            env,
            stdin,
            files,
            shape,
            timeout_s,
            capture_bytes,
        })
    }
}

fn within(v: Option<u64>, name: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
    match v {
        Some(n) if !(min..=max).contains(&n) => {
            Err(format!("limits.{name} {n}: from {min} to {max}"))
        }
        v => Ok(v),
    }
}

fn decode(text: &str, encoding: Option<&str>, what: &str) -> Result<Vec<u8>, String> {
    match encoding.unwrap_or("utf-8") {
        "utf-8" => Ok(text.as_bytes().to_vec()),
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("{what}: not base64 ({e})")),
        other => Err(format!("{what}: encoding {other:?}: utf-8 or base64")),
    }
}

/// A file's path: relative, below the scratch directory, no `..`.
fn relative_path(p: &str) -> Result<PathBuf, String> {
    let path = Path::new(p);
    let fine = !p.is_empty()
        && !p.contains('\0')
        && p.len() <= 4096
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && path.components().any(|c| matches!(c, Component::Normal(_)));
    if fine {
        Ok(path.components().collect())
    } else {
        Err(format!(
            "files: path {p:?}: relative, below the scratch directory, without '..'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> Result<Plan, String> {
        serde_json::from_str::<ExecutionRequest>(json)
            .map_err(|e| e.to_string())?
            .plan(3600.0)
    }

    #[test]
    fn language_and_code_make_argv() {
        let p = plan(r#"{"language": "python3", "code": "print(1)"}"#).unwrap();
        assert_eq!(p.argv, ["python3", "-c", "print(1)"]);
        assert_eq!(p.timeout_s, DEFAULT_TIMEOUT_S);
    }

    #[test]
    fn bad_input_is_one_line() {
        for bad in [
            r#"{}"#,
            r#"{"command": []}"#,
            r#"{"command": ["x"], "language": "sh"}"#,
            r#"{"language": "cobol", "code": ""}"#,
            r#"{"command": ["x"], "bogus": 1}"#,
            r#"{"command": ["x"], "limits": {"memory_bytes": 1}}"#,
            r#"{"command": ["x"], "limits": {"timeout_s": -1}}"#,
            r#"{"command": ["x"], "limits": {"cpus": 0}}"#,
            r#"{"command": ["x"], "files": [{"path": "../x", "content": ""}]}"#,
            r#"{"command": ["x"], "files": [{"path": "/etc/x", "content": ""}]}"#,
            r#"{"command": ["x"], "stdin": "!", "stdin_encoding": "base64"}"#,
            r#"{"command": ["x"], "env": {"A=B": "c"}}"#,
            r#"{"command": ["x"], "egress": ["not a rule at all"]}"#,
        ] {
            let e = plan(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn the_shape_is_the_pool_s_key() {
        let a =
            plan(r#"{"command": ["x"], "limits": {"memory_bytes": 104857600, "timeout_s": 5}}"#)
                .unwrap();
        let b = plan(r#"{"command": ["y"], "limits": {"memory_bytes": 104857600}}"#).unwrap();
        assert_eq!(a.shape, b.shape);
        assert_eq!(a.shape.flags(), ["--memory=104857600"]);
    }
}
