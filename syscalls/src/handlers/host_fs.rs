//! Which file systems are the host's: those whose device a mount of the
//! supervisor's own mount table (the host's, `/proc/self/mountinfo`)
//! names, but the view's root — the sandbox's layer, or an OCI
//! container's root file system, which is that container's alone.
//!
//! The sandbox's layer, its overlays of /etc, its procfs and `--tmpfs`
//! mounts exist only in the sandbox's mount namespace, so the host's table
//! does not name them. What the host does name is shared with the host and
//! every other sandbox: /usr and the other read-only binds, `--ro` and
//! `--rw` mounts, the device nodes of /dev, a redirected stdout.
//!
//! Owns only this decision, for `setid` (no set-id programs made there)
//! and `notify` (no watching others' reads there). The table is read at
//! each question: both calls are rare, and the host mounts and unmounts.

/// Whether the file system of device `dev` is the host's. `root_dev`: the
/// device of the view's root, never counted as the host's. A table that
/// cannot be read counts every other file system as the host's.
pub(super) fn is_hosts(dev: u64, root_dev: u64) -> bool {
    if dev == root_dev {
        return false;
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts.is_empty() || names_device(&mounts, dev)
}

/// Whether a line of `mountinfo` names device `dev` (its third field,
/// `major:minor`).
fn names_device(mountinfo: &str, dev: u64) -> bool {
    let want = (libc::major(dev), libc::minor(dev));
    mountinfo.lines().any(|line| {
        let Some(field) = line.split(' ').nth(2) else {
            return false;
        };
        let Some((major, minor)) = field.split_once(':') else {
            return false;
        };
        (major.parse(), minor.parse()) == (Ok(want.0), Ok(want.1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                         30 22 0:26 / /tmp rw shared:5 - tmpfs tmpfs rw\n";

    #[test]
    fn a_device_the_host_mounts_is_the_hosts() {
        assert!(names_device(TABLE, libc::makedev(254, 0)));
        assert!(names_device(TABLE, libc::makedev(0, 26)));
    }

    #[test]
    fn a_device_only_the_sandbox_mounts_is_its_own() {
        assert!(!names_device(TABLE, libc::makedev(0, 53)));
        assert!(!names_device(TABLE, libc::makedev(26, 0)));
        assert!(!names_device("garbage\n\n1 2\n", libc::makedev(0, 0)));
    }

    #[test]
    fn the_view_s_root_is_never_the_hosts() {
        let st = std::fs::metadata("/").unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(is_hosts(st.dev(), 0), "the supervisor's / is the host's");
        assert!(!is_hosts(st.dev(), st.dev()));
    }
}
