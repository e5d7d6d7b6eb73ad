//! The guest's mount tables (`/proc/<pid>/mountinfo`, `mounts` and
//! `mountstats`, with `/proc/mounts` and `/proc/self/...` leading to them)
//! without the host in them.
//!
//! Owns: rewriting the kernel's text (recognising the files, by the path
//! the kernel gives the descriptor on the view's procfs, is
//! `served.rs`'s): every mount's root within its source filesystem
//! (mountinfo's fourth field: the host directory a `--ro`/`--rw` source
//! or the host cwd came from) becomes `/`; the host's disk and device
//! names (any source with a `/`: `/dev/vda`, `server:/export`) become
//! `sandbox`; options that describe the host — the overlay's
//! `lowerdir`/`upperdir`/`workdir`, the size and inode count of the
//! host's devtmpfs (its memory size), an NFS mount's server and client
//! addresses — are dropped, and so are `mountstats`' per-mount
//! statistics (the indented lines an NFS mount has, which repeat its
//! options and addresses); the
//! view's covers of global /proc files (`covers.rs`) are left out, as
//! the files they cover are what the guest reads there. Does not own
//! serving the result (`served::substitute`).

use super::covers::is_cover;

/// Which mount table a procfs file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    MountInfo,
    Mounts,
    MountStats,
}

/// The rewritten text of `table`.
pub fn rewrite(table: Table, text: &str) -> String {
    let line = match table {
        Table::MountInfo => mountinfo_line,
        Table::Mounts => mounts_line,
        Table::MountStats => mountstats_line,
    };
    let point = match table {
        Table::MountInfo => 4,
        Table::Mounts => 1,
        Table::MountStats => 4,
    };
    text.lines()
        .filter(|l| !l.starts_with(char::is_whitespace) && !l.is_empty())
        .filter(|l| !l.split(' ').nth(point).is_some_and(is_cover))
        .map(|l| line(l) + "\n")
        .collect()
}

/// `id parent dev root point opts [optional...] - fstype source superopts`
fn mountinfo_line(l: &str) -> String {
    let Some((left, right)) = l.split_once(" - ") else {
        return l.to_string();
    };
    let mut fields: Vec<&str> = left.split(' ').collect();
    if fields.len() > 3 {
        fields[3] = "/";
    }
    let mut r: Vec<String> = right.split(' ').map(str::to_string).collect();
    if r.len() >= 3 {
        r[1] = source(&r[0], &r[1]);
        r[2] = options(&r[0], &r[2]);
    }
    format!("{} - {}", fields.join(" "), r.join(" "))
}

/// `source point fstype opts freq passno`
fn mounts_line(l: &str) -> String {
    let mut f: Vec<String> = l.split(' ').map(str::to_string).collect();
    if f.len() >= 4 {
        f[0] = source(&f[2], &f[0]);
        f[3] = options(&f[2], &f[3]);
    }
    f.join(" ")
}

/// `device SOURCE mounted on POINT with fstype TYPE [statvers=...]`,
/// without the statistics version (its statistics lines are dropped).
fn mountstats_line(l: &str) -> String {
    let mut f: Vec<String> = l.split(' ').map(str::to_string).collect();
    if f.len() >= 8 {
        f[1] = source(&f[7], &f[1]);
        f.truncate(8);
    }
    f.join(" ")
}

/// A host device (`/dev/vda`), path or remote export (`server:/export`)
/// as a mount's source says `sandbox`.
fn source(_fstype: &str, src: &str) -> String {
    if src.contains('/') {
        "sandbox".to_string()
    } else {
        src.to_string()
    }
}

/// Options without the ones that describe the host.
fn options(fstype: &str, opts: &str) -> String {
    let hides = |o: &str| {
        let key = o.split('=').next().unwrap_or(o);
        match fstype {
            "overlay" => matches!(key, "lowerdir" | "upperdir" | "workdir" | "datadir"),
            "devtmpfs" => matches!(key, "size" | "nr_inodes"),
            "nfs" | "nfs4" => matches!(key, "addr" | "clientaddr" | "mountaddr" | "mounthost"),
            _ => false,
        }
    };
    let kept: Vec<&str> = opts.split(',').filter(|o| !hides(o)).collect();
    kept.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths_and_sizes_are_gone() {
        let info = "\
60 58 254:0 /tmp/mt1 /out rw,nosuid,relatime - ext4 /dev/vda rw
61 58 0:5 /null /dev/null rw,relatime - devtmpfs devtmpfs rw,size=12334524k,nr_inodes=3083631,mode=755
62 58 0:40 / /usr rw,relatime - overlay overlay rw,lowerdir=/oldroot/usr,upperdir=/upper/usr,workdir=/work/usr,userxattr
";
        assert_eq!(
            rewrite(Table::MountInfo, info),
            "\
60 58 254:0 / /out rw,nosuid,relatime - ext4 sandbox rw
61 58 0:5 / /dev/null rw,relatime - devtmpfs devtmpfs rw,mode=755
62 58 0:40 / /usr rw,relatime - overlay overlay rw,userxattr
"
        );
        let mounts = "/dev/vda /out ext4 rw,relatime 0 0\noverlay /usr overlay rw,lowerdir=/oldroot/usr 0 0\n";
        assert_eq!(
            rewrite(Table::Mounts, mounts),
            "sandbox /out ext4 rw,relatime 0 0\noverlay /usr overlay rw 0 0\n"
        );
    }

    #[test]
    fn covers_are_left_out() {
        let info = "\
75 67 0:48 / /proc rw,nosuid - proc proc rw
90 75 0:47 /.cover-empty//deleted /proc/meminfo ro,nosuid - tmpfs tmpfs ro,size=64k
";
        assert_eq!(
            rewrite(Table::MountInfo, info),
            "75 67 0:48 / /proc rw,nosuid - proc proc rw\n"
        );
        let mounts = "proc /proc proc rw 0 0\ntmpfs /proc/kcore tmpfs ro 0 0\n";
        assert_eq!(rewrite(Table::Mounts, mounts), "proc /proc proc rw 0 0\n");
    }

    #[test]
    fn mountstats_names_no_host_device_server_or_cover() {
        let stats = "\
device /dev/vda mounted on /out with fstype ext4
device proc mounted on /proc with fstype proc
device tmpfs mounted on /proc/stat with fstype tmpfs
device 10.0.0.2:/export mounted on /data with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,clientaddr=10.0.0.9,addr=10.0.0.2
\tage:\t42
";
        assert_eq!(
            rewrite(Table::MountStats, stats),
            "\
device sandbox mounted on /out with fstype ext4
device proc mounted on /proc with fstype proc
device sandbox mounted on /data with fstype nfs4
"
        );
    }

    #[test]
    fn nfs_addresses_are_dropped() {
        let info = "70 60 0:55 /export /data ro - nfs4 10.0.0.2:/export rw,vers=4.2,addr=10.0.0.2,clientaddr=10.0.0.9\n";
        assert_eq!(
            rewrite(Table::MountInfo, info),
            "70 60 0:55 / /data ro - nfs4 sandbox rw,vers=4.2\n"
        );
    }
}
