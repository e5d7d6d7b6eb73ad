//! A session's files, as its own commands see them: a put is `cat` into
//! the path (parents made) and a get is `cat` of it, each run in the
//! session like any exec, so the session's view, mounts and permissions
//! decide what is reachable, and a symbolic link the guest made can lead
//! nowhere the guest could not go itself. Paths are relative to the
//! session's working directory (its volume's path, else /tmp); an
//! absolute path, `..`, `.` or an empty component is refused before
//! anything runs.
//!
//! Owns path checks and the two commands; not running them (`exec.rs`).

use std::time::Duration;

use super::exec::Command;

/// Largest file put or got.
pub const MAX_FILE: usize = 64 << 20;
/// The exit code of a get whose path is not a regular file.
pub const NOT_A_FILE: i32 = 44;
/// How long a put or get may take.
const FILE_TIMEOUT: Duration = Duration::from_secs(120);

/// `path` checked: relative, no `.`/`..`/empty component, no NUL.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("file path: empty".into());
    }
    if path.starts_with('/') {
        return Err(format!(
            "file path {path:?}: must be relative to the session's working directory"
        ));
    }
    if path.len() > 4096 || path.contains('\0') {
        return Err("file path: too long or contains NUL".into());
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(format!(
            "file path {path:?}: '.', '..' and empty components are not allowed"
        ));
    }
    Ok(())
}

/// The command that writes `data` to `path` under `workdir`.
pub fn put(workdir: &str, path: &str, data: Vec<u8>, env: Vec<String>) -> Command {
    Command {
        args: vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"mkdir -p -- "$(dirname -- "$1")" && cat > "$1""#.into(),
            "sh".into(),
            path.into(),
        ],
        env,
        cwd: workdir.into(),
        stdin: data,
        timeout: FILE_TIMEOUT,
        cap: 4096,
    }
}

/// The command that prints `path` under `workdir` (exit 44 when it is not a regular file).
pub fn get(workdir: &str, path: &str, env: Vec<String>) -> Command {
    Command {
        args: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!(r#"[ -f "$1" ] || exit {NOT_A_FILE}; exec cat -- "$1""#),
            "sh".into(),
            path.into(),
        ],
        env,
        cwd: workdir.into(),
        stdin: Vec::new(),
        timeout: FILE_TIMEOUT,
        cap: MAX_FILE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/.",
            "a/",
            "a\0b",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "dir/file.txt", "..hidden", "a..b/c"] {
            assert!(check_path(good).is_ok(), "{good:?}");
        }
    }
}
