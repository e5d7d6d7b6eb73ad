//! The manifest of a directory of images, `manifest.json`: each image's
//! file name, length and BLAKE3 hash. It is written last (after every
//! image is synced) and checked in full before any restored process runs
//! (a restore may proceed beside the check, its processes held stopped),
//! so a truncated, damaged or altered image is refused with its name and
//! nothing restored from it ever runs.
//!
//! BLAKE3 (unkeyed) because it is a cryptographic hash like SHA-256 at
//! about twice its speed here (SHA-256 with SHA-NI: ~67 ms per 100 MiB;
//! BLAKE3 with AVX2: ~31 ms), and the check is on a wake's path. A key
//! would add nothing: it would have to live beside the images, under the
//! daemon's data directory, and whoever can write an image there can
//! write the manifest too; the hash catches damage (a cut, a flipped
//! bit, a file replaced by another) and any change made without also
//! rewriting the manifest. Manifests written with a SHA-256 (`sha256`)
//! are still checked by it, so states saved before still wake.
//!
//! Owns the manifest and the check; not the images' contents.

use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::Digest;

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
    /// Hex BLAKE3 of the whole file (what this build writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    /// Hex SHA-256 of the whole file (what earlier builds wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
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
            let path = dir.join(&e.file);
            let image = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
            e.check(&image)?;
        }
        Ok(m)
    }
}

impl Entry {
    /// Checks the image's bytes (all of its file) against the entry.
    /// By its BLAKE3 if the entry has one, else by its SHA-256; an entry
    /// with neither is refused.
    pub fn check(&self, image: &[u8]) -> Result<(), String> {
        // The length first: a cut image is named so without hashing it.
        if image.len() as u64 != self.bytes {
            return Err(format!(
                "image {} has {} bytes, the manifest says {} (truncated?)",
                self.file,
                image.len(),
                self.bytes
            ));
        }
        let (name, want, got): (&str, &str, HexHash) = match (&self.blake3, &self.sha256) {
            (Some(h), _) => ("BLAKE3", h, blake3_hex),
            (None, Some(h)) => ("SHA-256", h, sha256_hex),
            (None, None) => return Err(format!("image {} has no hash in the manifest", self.file)),
        };
        if got(image) != *want {
            return Err(format!(
                "image {} does not match its {name} in the manifest (damaged or altered)",
                self.file
            ));
        }
        Ok(())
    }
}

/// A hash function's hex digest of bytes.
type HexHash = fn(&[u8]) -> String;

/// Hex BLAKE3 of `bytes`.
pub fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = sha2::Sha256::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_cut_image_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0.img"), b"some image bytes").unwrap();
        let m = Manifest {
            format: FORMAT,
            processes: vec![Entry {
                file: "0.img".into(),
                blake3: Some(blake3_hex(b"some image bytes")),
                sha256: None,
                bytes: 16,
            }],
        };
        m.save(dir.path()).unwrap();
        assert!(Manifest::load_checked(dir.path()).is_ok());
        std::fs::write(dir.path().join("0.img"), b"some image byteS").unwrap();
        let e = Manifest::load_checked(dir.path()).unwrap_err();
        assert!(e.contains("BLAKE3"), "{e}");
        std::fs::write(dir.path().join("0.img"), b"some image").unwrap();
        let e = Manifest::load_checked(dir.path()).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn an_image_in_memory_is_checked_as_its_file() {
        let e = Entry {
            file: "0.img".into(),
            blake3: Some(blake3_hex(b"some image bytes")),
            sha256: None,
            bytes: 16,
        };
        assert!(e.check(b"some image bytes").is_ok());
        assert!(e.check(b"some image byteS").unwrap_err().contains("BLAKE3"));
        assert!(e.check(b"some image").unwrap_err().contains("truncated"));
        assert!(e.check(b"").unwrap_err().contains("truncated"));
    }

    #[test]
    fn a_manifest_of_sha256_is_still_checked_by_it() {
        let text = format!(
            r#"{{"file": "0.img", "sha256": "{}", "bytes": 16}}"#,
            sha256_hex(b"some image bytes")
        );
        let e: Entry = serde_json::from_str(&text).unwrap();
        assert!(e.check(b"some image bytes").is_ok());
        assert!(e
            .check(b"some image byteS")
            .unwrap_err()
            .contains("SHA-256"));
        let none: Entry = serde_json::from_str(r#"{"file": "0.img", "bytes": 16}"#).unwrap();
        assert!(none
            .check(b"some image bytes")
            .unwrap_err()
            .contains("no hash"));
    }

    #[test]
    fn a_new_manifest_names_its_blake3_alone() {
        let e = Entry {
            file: "0.img".into(),
            blake3: Some(blake3_hex(b"x")),
            sha256: None,
            bytes: 1,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["blake3"], blake3_hex(b"x"));
        assert!(v.get("sha256").is_none(), "{v}");
    }
}
