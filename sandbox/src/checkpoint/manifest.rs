//! The manifest of a directory of images, `manifest.json`: each image's
//! file name, length and SHA-256. It is written last (after every image
//! is synced) and checked in full before any restored process runs (a
//! restore may proceed beside the check, its processes held stopped), so
//! a truncated, damaged or altered image is refused with its name and
//! nothing restored from it ever runs.
//!
//! Owns the manifest and the check; not the images' contents.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const MANIFEST: &str = "manifest.json";
/// The version of the image format this build writes and reads.
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub processes: Vec<Entry>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            format: FORMAT,
            processes: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// The image's file name in the directory.
    pub file: String,
    /// Hex SHA-256 of the whole file.
    pub sha256: String,
    pub bytes: u64,
}

impl Manifest {
    /// Writes the manifest into `dir` and syncs it and the directory.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(MANIFEST);
        let text = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut f = create_private(&path).map_err(io)?;
        std::io::Write::write_all(&mut f, &text).map_err(io)?;
        f.sync_all().map_err(io)?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(io)
    }

    /// Reads `dir`'s manifest and checks every image against it.
    pub fn load_checked(dir: &Path) -> Result<Manifest, String> {
        let m = Manifest::load(dir)?;
        for e in &m.processes {
            let (hash, bytes) = hash_file(&dir.join(&e.file))?;
            e.compare(&hash, bytes)?;
        }
        Ok(m)
    }
}

impl Entry {
    /// Checks the image's bytes (all of its file) against the entry.
    pub fn check(&self, image: &[u8]) -> Result<(), String> {
        // The length first: a cut image is named so without hashing it.
        self.compare(&self.sha256, image.len() as u64)?;
        self.compare(&sha256_hex(image), image.len() as u64)
    }

    fn compare(&self, hash: &str, bytes: u64) -> Result<(), String> {
        if bytes != self.bytes {
            return Err(format!(
                "image {} has {bytes} bytes, the manifest says {} (truncated?)",
                self.file, self.bytes
            ));
        }
        if hash != self.sha256 {
            return Err(format!(
                "image {} does not match its SHA-256 in the manifest (damaged or altered)",
                self.file
            ));
        }
        Ok(())
    }
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    // In pieces of 1 MiB: the same speed, and a long check's progress
    // stays in the cache a piece at a time.
    for piece in bytes.chunks(1 << 20) {
        h.update(piece);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Manifest {
    /// Reads `dir`'s manifest (the images unchecked).
    pub fn load(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let m: Manifest =
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if m.format != FORMAT {
            return Err(format!(
                "images of format {}, this build reads {FORMAT}",
                m.format
            ));
        }
        if let Some(e) = m
            .processes
            .iter()
            .find(|e| e.file.contains('/') || e.file.starts_with('.'))
        {
            return Err(format!("{MANIFEST} names {:?}", e.file));
        }
        Ok(m)
    }
}

/// Creates (or truncates) `path`, readable by its owner only: an image
/// holds a process's memory.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// A file's hex SHA-256 and length.
pub fn hash_file(path: &Path) -> Result<(String, u64), String> {
    let mut f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        total += n as u64;
    }
    Ok((
        h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_cut_image_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0.img"), b"some image bytes").unwrap();
        let (sha256, bytes) = hash_file(&dir.path().join("0.img")).unwrap();
        let m = Manifest {
            format: FORMAT,
            processes: vec![Entry {
                file: "0.img".into(),
                sha256,
                bytes,
            }],
        };
        m.save(dir.path()).unwrap();
        assert!(Manifest::load_checked(dir.path()).is_ok());
        std::fs::write(dir.path().join("0.img"), b"some image byteS").unwrap();
        let e = Manifest::load_checked(dir.path()).unwrap_err();
        assert!(e.contains("SHA-256"), "{e}");
        std::fs::write(dir.path().join("0.img"), b"some image").unwrap();
        let e = Manifest::load_checked(dir.path()).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn an_image_in_memory_is_checked_as_its_file() {
        let (sha256, bytes) = (sha256_hex(b"some image bytes"), 16);
        let e = Entry {
            file: "0.img".into(),
            sha256,
            bytes,
        };
        assert!(e.check(b"some image bytes").is_ok());
        assert!(e
            .check(b"some image byteS")
            .unwrap_err()
            .contains("SHA-256"));
        assert!(e.check(b"some image").unwrap_err().contains("truncated"));
        assert!(e.check(b"").unwrap_err().contains("truncated"));
    }
}
