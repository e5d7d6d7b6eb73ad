//! The IPC, UTS and pid namespaces a sandbox joins instead of making its
//! own (`LaunchConfig::join_ipc`, `join_uts`, `join_pid`: an OCI
//! container naming another's, as a pod's containers do). The launching
//! process enters the IPC and UTS ones with `setns` before it clones init
//! without `CLONE_NEWIPC` or `CLONE_NEWUTS`, so init and the guest are
//! born in them. It must be the launching process: init, once in its new
//! user namespace, holds no capability in the namespace that owns them
//! and could not join.
//!
//! A joined pid namespace is another sandbox's, owned by that sandbox's
//! user namespace: mounting its /proc takes CAP_SYS_ADMIN there. So the
//! launching process sets the pid namespace its next child is born in,
//! forks init with no namespace flag and takes its own back ([`PidJoin`]);
//! init, still the host's root, joins that user namespace and only then
//! makes its mount, IPC and UTS namespaces ([`enter_user`]), which that
//! user namespace then owns (as it does the network namespace, made in
//! it beside init's set-up: `netns.rs`). Both sandboxes map the same ids
//! ([`enter_pid`] refuses other maps), so the guest's ids mean the same
//! in either.
//!
//! Owns: entering them, the clone flags left, and the hostname a joined
//! UTS namespace already has (the view's /etc/hostname says it). Does
//! not own choosing them (the front-end) or the clone itself (`mod.rs`).

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use nix::sched::{setns, unshare, CloneFlags};

use crate::config::JoinedPid;

/// What joining left to the launch.
pub(super) struct Joined {
    ipc: bool,
    /// The joined UTS namespace's hostname (init leaves it as it is).
    pub hostname: Option<String>,
}

impl Joined {
    /// `all` without the namespaces that were joined (for the clone, or,
    /// in a joined pid namespace, for init to make: [`enter_user`]).
    pub fn clone_flags(&self, all: CloneFlags) -> CloneFlags {
        let mut flags = all;
        if self.ipc {
            flags.remove(CloneFlags::CLONE_NEWIPC);
        }
        if self.hostname.is_some() {
            flags.remove(CloneFlags::CLONE_NEWUTS);
        }
        flags
    }
}

/// Enters the IPC namespace at `ipc` and the UTS one at `uts` (either may
/// be absent). A path that is not such a namespace, or one this process
/// may not join, is a one-line error.
pub(super) fn enter(ipc: Option<&Path>, uts: Option<&Path>) -> Result<Joined, String> {
    if let Some(path) = ipc {
        join(path, "IPC", CloneFlags::CLONE_NEWIPC)?;
    }
    let hostname = match uts {
        Some(path) => {
            join(path, "UTS", CloneFlags::CLONE_NEWUTS)?;
            let name = nix::sys::utsname::uname()
                .map_err(|e| format!("reading the joined UTS namespace's hostname: {}", e.desc()))?
                .nodename()
                .to_string_lossy()
                .into_owned();
            Some(name)
        }
        None => None,
    };
    Ok(Joined {
        ipc: ipc.is_some(),
        hostname,
    })
}

fn join(path: &Path, what: &str, flag: CloneFlags) -> Result<(), String> {
    let ns = File::open(path).map_err(|e| format!("{what} namespace {}: {e}", path.display()))?;
    setns(ns, flag).map_err(|e| {
        format!(
            "joining the {what} namespace {}: {}",
            path.display(),
            e.desc()
        )
    })
}

/// A pid namespace the launching process's next child is born in (see
/// the module's doc), and the user namespace that owns it.
pub(super) struct PidJoin {
    /// The launching process's own, taken back once init is forked.
    own: File,
    user: File,
}

impl PidJoin {
    /// Makes the launching process's next child be born in the pid
    /// namespace again.
    pub fn leave(&self) -> Result<(), String> {
        setns(&self.own, CloneFlags::CLONE_NEWPID)
            .map_err(|e| format!("leaving the joined pid namespace: {}", e.desc()))
    }

    /// The user namespace init joins.
    pub fn user(&self) -> BorrowedFd<'_> {
        self.user.as_fd()
    }
}

/// Sets the pid namespace `join` names as the one the launching
/// process's next child is born in, once its user namespace's maps are
/// found to be `ids`. Only a root invoker may (the sandbox's user
/// namespace is then a child of its own).
pub(super) fn enter_pid(join: &JoinedPid, ids: &vfs::IdMap) -> Result<PidJoin, String> {
    let path = join.pid.display();
    if !nix::unistd::geteuid().is_root() {
        return Err(format!(
            "pid namespace {path}: only a root runtime joins another sandbox's pid namespace"
        ));
    }
    let uids = ids.uid_extents().map(|e| (e.inside, e.outside, e.count));
    let gids = ids.gid_extents().map(|e| (e.inside, e.outside, e.count));
    if !same_map(&join.uid_map, uids) || !same_map(&join.gid_map, gids) {
        return Err(format!(
            "pid namespace {path}: its sandbox maps other user or group ids than this one would"
        ));
    }
    let open = |p: &Path, what: &str| {
        File::open(p).map_err(|e| format!("{what} namespace {}: {e}", p.display()))
    };
    let own = open(Path::new("/proc/self/ns/pid"), "own pid")?;
    let user = open(&join.user, "user")?;
    let target = open(&join.pid, "pid")?;
    setns(&target, CloneFlags::CLONE_NEWPID)
        .map_err(|e| format!("joining the pid namespace {path}: {}", e.desc()))?;
    Ok(PidJoin { own, user })
}

/// In init, forked into a joined pid namespace as the host's root: joins
/// `user`, then makes the namespaces of `flags` (which it then owns).
pub(super) fn enter_user(user: BorrowedFd<'_>, flags: CloneFlags) -> Result<(), String> {
    setns(user, CloneFlags::CLONE_NEWUSER).map_err(|e| {
        format!(
            "joining the user namespace of the joined pid namespace: {}",
            e.desc()
        )
    })?;
    let flags = flags.difference(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID);
    unshare(flags).map_err(|e| format!("creating the sandbox's namespaces: {}", e.desc()))
}

/// Whether `text` (a `uid_map` or `gid_map`) holds exactly `extents`.
fn same_map(text: &str, extents: impl Iterator<Item = (u32, u32, u32)>) -> bool {
    let mut lines: Vec<(u32, u32, u32)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let n: Vec<u32> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let [inside, outside, count] = n[..] else {
            return false;
        };
        lines.push((inside, outside, count));
    }
    let mut wanted: Vec<_> = extents.collect();
    lines.sort_unstable();
    wanted.sort_unstable();
    lines == wanted
}

#[cfg(test)]
mod tests {
    use super::same_map;

    #[test]
    fn maps_compare_as_sets_of_extents() {
        let text = "         0     100000      65536\n";
        assert!(same_map(text, [(0, 100000, 65536)].into_iter()));
        assert!(!same_map(text, [(0, 100001, 65536)].into_iter()));
        assert!(!same_map(text, [(0, 100000, 65536), (1, 2, 3)].into_iter()));
        assert!(!same_map("0 100000\n", [(0, 100000, 65536)].into_iter()));
        let two = "1 2 3\n0 5 1\n";
        assert!(same_map(two, [(0, 5, 1), (1, 2, 3)].into_iter()));
    }
}
