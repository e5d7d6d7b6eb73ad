//! The trial remake of an engine's overlay at `create`
//! ([`EngineOverlay::try_remake`]), and the runtime root's record of the
//! trials that passed on this boot, so that the containers of one engine
//! pay for the trial once rather than at every `create`.
//!
//! What a trial depends on is the running kernel and the layers' mounts,
//! not the layers' paths: whether overlayfs takes idmapped layers with
//! these options, whether each layer's file system (and mount: an
//! idmapped mount takes no second idmap) can be idmapped. A passed trial
//! is recorded under that key ([`trial_key`]): the boot, this binary, the
//! subordinate range, the number of lower layers, each layer's mount id
//! and file-system type, the engine's other options and whether the root
//! is read-only. Docker's containers share one storage mount and the
//! same options, so every container after the first on a boot matches
//! the record and skips the trial. A failed trial is not recorded (it
//! keeps the host's ids, a rare path, and is tried again each time).
//!
//! The record is one file per key in `<root>/@overlay-trials` (`@` is not
//! a character of a container id, so no container's directory can be
//! it), named by a hash of the key and holding the whole key, compared on
//! read; written to a temporary name and renamed, so concurrent `create`s
//! see either the whole record or none. The root is the runtime's
//! (root's, as this path runs only for root). Records of other boots can
//! never match again: writing a record removes them ([`prune`]), so the
//! directory holds at most this boot's.
//!
//! Owns the key and the record; not the remake itself
//! (`launch/engine_overlay.rs`) nor the choice of ids (`user.rs`).

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sandbox::launch::engine_overlay::EngineOverlay;
use sandbox::launch::subids::HostRange;

/// The directory of passed trials in the runtime's root.
const RECORDS: &str = "@overlay-trials";

/// Makes the overlay a container on `overlay` would get, with the ids of
/// `range`, unless a trial of the same key passed on this boot
/// (recorded in `root`); `Err` says why the kernel refused it.
pub fn remake_passes(
    root: &Path,
    overlay: &EngineOverlay,
    range: HostRange,
    count: u32,
    read_only: bool,
) -> Result<(), String> {
    // Without a key (a layer that cannot be opened...), the trial decides.
    let key = trial_key(overlay, range, count, read_only).ok();
    if let Some(key) = &key {
        if recorded(root, key) {
            return Ok(());
        }
    }
    let ids = vfs::IdMap::shifted(range.start, count);
    overlay.try_remake(&ids, read_only)?;
    if let Some(key) = &key {
        // A record that cannot be written only costs the next create a trial.
        let _ = record(root, key);
    }
    Ok(())
}

/// What the trial's outcome depends on, as text (see the module's doc).
pub fn trial_key(
    overlay: &EngineOverlay,
    range: HostRange,
    count: u32,
    read_only: bool,
) -> Result<String, String> {
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").map_err(|e| e.to_string())?;
    let exe = fs::metadata("/proc/self/exe").map_err(|e| e.to_string())?;
    let mut key = format!(
        "boot {}\nbinary {} {} {} {}\nrange {} {count}\nread-only {read_only}\nlowers {}\n",
        boot.trim(),
        exe.dev(),
        exe.ino(),
        exe.mtime(),
        exe.mtime_nsec(),
        range.start,
        overlay.lowers.len()
    );
    let mut layers: Vec<&Path> = overlay.lowers.iter().map(PathBuf::as_path).collect();
    if let Some((upper, work)) = &overlay.upper {
        layers.extend([upper.as_path(), work.as_path()]);
    }
    for layer in layers {
        key += &format!("layer {}\n", layer_mount(layer)?);
    }
    for option in &overlay.options {
        key += &format!("option {option}\n");
    }
    Ok(key)
}

/// The mount id and file-system type of the mount `path` is on.
fn layer_mount(path: &Path) -> Result<String, String> {
    let dir = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let info = fs::read_to_string(format!("/proc/self/fdinfo/{}", dir.as_raw_fd()))
        .map_err(|e| format!("{}: its fdinfo: {e}", path.display()))?;
    let mnt_id = (info.lines())
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .map(str::trim)
        .ok_or_else(|| format!("{}: no mount id", path.display()))?;
    let fs_type = nix::sys::statfs::fstatfs(&dir)
        .map_err(|e| format!("{}: {}", path.display(), e.desc()))?
        .filesystem_type()
        .0;
    Ok(format!("{mnt_id} {fs_type:x}"))
}

fn record_path(root: &Path, key: &str) -> PathBuf {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    root.join(RECORDS).join(format!("{:016x}", hasher.finish()))
}

/// Whether a trial of `key` passed (its record holds exactly `key`).
pub fn recorded(root: &Path, key: &str) -> bool {
    fs::read_to_string(record_path(root, key)).is_ok_and(|held| held == key)
}

/// Records that a trial of `key` passed.
pub fn record(root: &Path, key: &str) -> std::io::Result<()> {
    let path = record_path(root, key);
    let dir = root.join(RECORDS);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let tmp = dir.join(format!(".{}", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(key.as_bytes())?;
    drop(f);
    fs::rename(&tmp, &path)?;
    prune(&dir, key);
    Ok(())
}

/// Removes the entries of `dir` (records, and temporary files a crash
/// left) whose boot is not `key`'s: they can never match again. An empty
/// file may be another `create`'s record being written, and stays.
/// Best effort: an entry that cannot be read or removed stays.
fn prune(dir: &Path, key: &str) {
    let boot = key.lines().next().unwrap_or_default();
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(held) = fs::read(&path) else {
            continue;
        };
        let first = held.split(|&b| b == b'\n').next().unwrap_or_default();
        if !held.is_empty() && first != boot.as_bytes() {
            let _ = fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("trial-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn overlay(dir: &Path) -> EngineOverlay {
        EngineOverlay {
            lowers: vec![dir.join("l1"), dir.join("l2")],
            upper: Some((dir.join("u"), dir.join("w"))),
            options: vec!["userxattr".into()],
        }
    }

    fn range() -> HostRange {
        HostRange {
            start: 100_000,
            count: 65_536,
        }
    }

    #[test]
    fn the_key_names_mounts_not_paths() {
        let dir = Scratch::new("key");
        let other = dir.path().join("other");
        for d in [
            "l1", "l2", "u", "w", "other/l1", "other/l2", "other/u", "other/w",
        ] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let key = trial_key(&overlay(dir.path()), range(), 65_536, false).unwrap();
        // Layers elsewhere on the same mount: the same key.
        let same = trial_key(&overlay(&other), range(), 65_536, false).unwrap();
        assert_eq!(key, same);
        assert!(!key.contains(dir.path().to_str().unwrap()), "{key}");
        assert!(key.contains("option userxattr\n"), "{key}");
        // Anything the outcome depends on changes it.
        assert_ne!(
            key,
            trial_key(&overlay(dir.path()), range(), 65_536, true).unwrap()
        );
        let moved = HostRange {
            start: 200_000,
            count: 65_536,
        };
        assert_ne!(
            key,
            trial_key(&overlay(dir.path()), moved, 65_536, false).unwrap()
        );
        let mut volatile = overlay(dir.path());
        volatile.options.push("volatile".into());
        assert_ne!(key, trial_key(&volatile, range(), 65_536, false).unwrap());
        let mut fewer = overlay(dir.path());
        fewer.lowers.pop();
        assert_ne!(key, trial_key(&fewer, range(), 65_536, false).unwrap());
        // A layer that is not there: no key (the trial decides).
        let mut missing = overlay(dir.path());
        missing.lowers.push(dir.path().join("absent"));
        assert!(trial_key(&missing, range(), 65_536, false).is_err());
    }

    #[test]
    fn a_record_holds_its_whole_key() {
        let root = Scratch::new("record");
        let key = "boot x\nlayer 1 794c7630\n";
        assert!(!recorded(root.path(), key));
        record(root.path(), key).unwrap();
        assert!(recorded(root.path(), key));
        assert!(!recorded(root.path(), "boot y\nlayer 1 794c7630\n"));
        // A file of the right name holding another key is not a record.
        fs::write(record_path(root.path(), key), "boot x\n").unwrap();
        assert!(!recorded(root.path(), key));
        // The records' directory is no container's.
        assert!(super::super::state::check_id(RECORDS).is_err());
        assert_eq!(
            super::super::state::list_ids(root.path()),
            Vec::<String>::new()
        );
    }

    /// The names in the records' directory, sorted.
    fn entries(root: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(root.join(RECORDS))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_record_removes_those_of_other_boots() {
        let root = Scratch::new("prune");
        let old = ["boot a\nlayer 1 794c7630\n", "boot a\nlayer 2 794c7630\n"];
        for key in old {
            record(root.path(), key).unwrap();
        }
        let dir = root.path().join(RECORDS);
        // What a crash left: a temporary file of that boot; and one being
        // written now (still empty).
        fs::write(dir.join(".1"), old[0]).unwrap();
        fs::write(dir.join(".2"), "").unwrap();
        assert_eq!(entries(root.path()).len(), 4);
        // Records of one boot keep each other.
        let new = ["boot b\nlayer 1 794c7630\n", "boot b\nlayer 3 794c7630\n"];
        record(root.path(), new[0]).unwrap();
        let mut kept = vec![".2".to_string(), record_name(root.path(), new[0])];
        kept.sort();
        assert_eq!(entries(root.path()), kept);
        record(root.path(), new[1]).unwrap();
        assert!(new.iter().all(|k| recorded(root.path(), k)));
        assert!(!old.iter().any(|k| recorded(root.path(), k)));
        assert_eq!(entries(root.path()).len(), 3);
    }

    fn record_name(root: &Path, key: &str) -> String {
        let path = record_path(root, key);
        path.file_name().unwrap().to_string_lossy().into_owned()
    }
}
