//! Persistent volumes: a directory per name under the daemon's data
//! directory (`<data-dir>/volumes/<name>`), bound read-write into a
//! session. A volume outlives its session and a restart of the daemon:
//! the next session that names it finds it again.
//!
//! Owns volume names and their directories; not the sessions using them.

use std::path::{Path, PathBuf};

/// A checked volume name: 1 to 64 of `A-Z a-z 0-9 _ . -`, not starting
/// with a dot (so never `.` or `..`): safe as one path component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeName(String);

impl VolumeName {
    pub fn parse(name: &str) -> Result<VolumeName, String> {
        let ok = (1..=64).contains(&name.len())
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        match ok {
            true => Ok(VolumeName(name.to_string())),
            false => Err(format!(
                "volume name {name:?}: expected 1 to 64 of A-Z a-z 0-9 _ . - (not starting with '.')"
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The volumes' directory under `data_dir`.
pub fn volumes_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("volumes")
}

/// The volume's directory under `data_dir`.
pub fn dir(data_dir: &Path, name: &VolumeName) -> PathBuf {
    volumes_dir(data_dir).join(name.as_str())
}

/// Makes the volume's directory `dir` (mode 0700) if it is new.
pub fn ensure(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("volume {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_safe_component() {
        for good in ["a", "user-42", "v1.data", "A_b"] {
            assert!(VolumeName::parse(good).is_ok(), "{good}");
        }
        let long = "x".repeat(65);
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "a b",
            "é",
            long.as_str(),
        ] {
            assert!(VolumeName::parse(bad).is_err(), "{bad:?}");
        }
    }
}
