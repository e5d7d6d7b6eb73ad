//! The ids in a process's `status` and `loginuid` as the guest's user
//! namespace sees them.
//!
//! The kernel prints those ids relative to the user namespace of the
//! process that opened the file (`seq_user_ns`, the file's `f_cred`):
//! `status`'s `Uid:`, `Gid:` and `Groups:` through `from_kuid_munged`
//! (an id the namespace does not map reads as the overflow id, 65534),
//! `loginuid` through `from_kuid` (unmapped: 4294967295). The supervisor
//! opens a guest's /proc files for it (the fence keeps the guest from
//! opening them itself), in its own user namespace, so the kernel's text
//! gives the supervisor's view of the ids; these are translated here
//! through the sandbox's maps, as the kernel would print them for the
//! guest. Every other file of a process reads the same for either
//! opener: its `uid_map` and `gid_map` print the parent's ids to a reader
//! in the namespace itself or in the parent (the guest cannot make a
//! namespace of its own), and `/proc/net`'s socket owners are the
//! netstack's (`net.rs`).
//!
//! Owns: whether the texts differ at all for a sandbox ([`GuestIds::new`]:
//! not when its map is the invoker's ids as themselves and every group
//! and login uid a guest inherits is mapped), and the translation. Does
//! not own: recognising or serving the files (`served.rs`, `texts.rs`).

use vfs::idmap::Extent;
use vfs::IdMap;

use super::covers::read_host;

/// The kernel's overflow ids when its sysctls cannot be read.
const OVERFLOW_ID: u32 = 65534;

/// The id `from_kuid` gives an id the namespace does not map.
const NO_ID: u32 = u32::MAX;

/// The sandbox's uid and gid maps (the supervisor's ids onto the
/// guest's) and the kernel's overflow ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GuestIds {
    uids: Vec<Extent>,
    gids: Vec<Extent>,
    overflow_uid: u32,
    overflow_gid: u32,
}

/// What a guest process inherits of the supervisor's ids beyond its
/// uid and gid (which the map gives): its supplementary groups and its
/// login uid, which a guest can change only to mapped ids (groups) or
/// not at all (the login uid needs CAP_AUDIT_CONTROL in the host's
/// namespace); and the kernel's overflow ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Inherited {
    pub groups: Vec<u32>,
    pub loginuid: u32,
    pub overflow: (u32, u32),
}

impl Inherited {
    /// This process's, and the host kernel's overflow ids.
    pub(super) fn own() -> Inherited {
        let number = |path: &str| -> Option<u32> { read_host(path).ok()?.trim().parse().ok() };
        let groups = nix::unistd::getgroups().unwrap_or_default();
        Inherited {
            groups: groups.into_iter().map(|g| g.as_raw()).collect(),
            loginuid: number("/proc/self/loginuid").unwrap_or(NO_ID),
            overflow: (
                number("/proc/sys/kernel/overflowuid").unwrap_or(OVERFLOW_ID),
                number("/proc/sys/kernel/overflowgid").unwrap_or(OVERFLOW_ID),
            ),
        }
    }
}

impl GuestIds {
    /// The translation for a sandbox whose user namespace has `map`, its
    /// processes inheriting `inherited`; `None` when no text would
    /// change: the map gives every id it maps itself (the invoker's ids)
    /// and the inherited groups and login uid are all mapped (a guest
    /// process holds no other id: it may take only mapped ones).
    pub(super) fn new(map: &IdMap, inherited: &Inherited) -> Option<GuestIds> {
        let ids = GuestIds {
            uids: map.uid_extents().collect(),
            gids: map.gid_extents().collect(),
            overflow_uid: inherited.overflow.0,
            overflow_gid: inherited.overflow.1,
        };
        let same = |e: &Extent| e.inside == e.outside;
        let identity = ids.uids.iter().all(same) && ids.gids.iter().all(same);
        let groups_mapped = (inherited.groups.iter()).all(|&g| inside(&ids.gids, g).is_some());
        let login_same =
            inherited.loginuid == NO_ID || inside(&ids.uids, inherited.loginuid).is_some();
        (!identity || !groups_mapped || !login_same).then_some(ids)
    }

    /// `status` with its `Uid:`, `Gid:` and `Groups:` lines' ids as the
    /// guest's namespace maps them (`from_kuid_munged`), every other
    /// byte as the kernel wrote it.
    pub(super) fn status(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 32);
        for line in text.split_inclusive('\n') {
            if line.starts_with("Uid:") {
                map_numbers(line, |id| self.uid_munged(id), &mut out);
            } else if line.starts_with("Gid:") || line.starts_with("Groups:") {
                map_numbers(line, |id| self.gid_munged(id), &mut out);
            } else {
                out.push_str(line);
            }
        }
        out
    }

    /// `loginuid`'s text (a number, no newline) as the guest's namespace
    /// maps it (`from_kuid`: 4294967295 when unmapped).
    pub(super) fn loginuid(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        map_numbers(text, |id| inside(&self.uids, id).unwrap_or(NO_ID), &mut out);
        out
    }

    fn uid_munged(&self, host: u32) -> u32 {
        inside(&self.uids, host).unwrap_or(self.overflow_uid)
    }

    fn gid_munged(&self, host: u32) -> u32 {
        inside(&self.gids, host).unwrap_or(self.overflow_gid)
    }
}

/// The guest's id of `host` under `map`, if it maps it.
fn inside(map: &[Extent], host: u32) -> Option<u32> {
    map.iter().find_map(|e| {
        let off = host.checked_sub(e.outside)?;
        (off < e.count).then(|| e.inside + off)
    })
}

/// `text` onto `out` with each run of decimal digits that fits a `u32`
/// replaced by `f` of it (procfs prints ids as plain decimals).
fn map_numbers(text: &str, f: impl Fn(u32) -> u32, out: &mut String) {
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        out.push_str(&rest[..start]);
        let digits = &rest[start..];
        let len = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        let (number, after) = digits.split_at(len);
        match number.parse::<u32>() {
            Ok(id) => out.push_str(&f(id).to_string()),
            Err(_) => out.push_str(number),
        }
        rest = after;
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nNgid:\t0\n\
        Pid:\t7\nPPid:\t1\nTracerPid:\t0\nUid:\t196608\t196609\t196608\t196608\n\
        Gid:\t196608\t196608\t196608\t196608\nFDSize:\t64\nGroups:\t196608 4 \n\
        NStgid:\t7\nCpus_allowed_list:\t0-1\n";

    fn none_inherited() -> Inherited {
        Inherited {
            groups: vec![],
            loginuid: NO_ID,
            overflow: (65534, 65534),
        }
    }

    #[test]
    fn a_shifted_range_reads_as_the_guest_ids() {
        let ids = GuestIds::new(&IdMap::shifted(196608, 65536), &none_inherited()).unwrap();
        let want = STATUS
            .replace("Uid:\t196608\t196609", "Uid:\t0\t1")
            .replace("Uid:\t0\t1\t196608\t196608", "Uid:\t0\t1\t0\t0")
            .replace("Gid:\t196608\t196608\t196608\t196608", "Gid:\t0\t0\t0\t0")
            .replace("Groups:\t196608 4 ", "Groups:\t0 65534 ");
        assert_eq!(ids.status(STATUS), want);
        assert_eq!(ids.loginuid("0"), "4294967295");
        assert_eq!(ids.loginuid("196708"), "100");
        assert_eq!(ids.loginuid("4294967295"), "4294967295");
        assert_eq!(ids.loginuid("x"), "x");
    }

    #[test]
    fn a_subordinate_range_maps_the_invoker_as_root() {
        let map = IdMap::subordinate(1001, 1001, 100000, 100000, 65535);
        let ids = GuestIds::new(&map, &none_inherited()).unwrap();
        let text =
            "Uid:\t1001\t100000\t100999\t4\nGid:\t1001\t1001\t1001\t1001\nGroups:\t1001 100000 \n";
        assert_eq!(
            ids.status(text),
            "Uid:\t0\t1\t1000\t65534\nGid:\t0\t0\t0\t0\nGroups:\t0 1 \n"
        );
        // The kernel's own overflow ids, whatever they are.
        let other = Inherited {
            overflow: (99, 98),
            ..none_inherited()
        };
        let ids = GuestIds::new(&map, &other).unwrap();
        assert_eq!(
            ids.status("Uid:\t5\nGid:\t5\nGroups:\t5 \n"),
            "Uid:\t99\nGid:\t98\nGroups:\t98 \n"
        );
    }

    #[test]
    fn the_invokers_own_ids_change_nothing_unless_it_inherits_unmapped_ones() {
        let map = IdMap::new(1001, 1001);
        assert_eq!(GuestIds::new(&map, &none_inherited()), None);
        let mapped = Inherited {
            groups: vec![1001],
            loginuid: 1001,
            ..none_inherited()
        };
        assert_eq!(GuestIds::new(&map, &mapped), None);
        let group = Inherited {
            groups: vec![1001, 100],
            ..none_inherited()
        };
        let ids = GuestIds::new(&map, &group).unwrap();
        let text = "Uid:\t1001\t1001\t1001\t1001\nGroups:\t1001 100 \n";
        assert_eq!(
            ids.status(text),
            "Uid:\t1001\t1001\t1001\t1001\nGroups:\t1001 65534 \n"
        );
        let login = Inherited {
            loginuid: 0,
            ..none_inherited()
        };
        let ids = GuestIds::new(&IdMap::new(0, 0), &login);
        assert_eq!(ids, None, "root's own login uid, mapped to itself");
        let ids = GuestIds::new(&map, &login).unwrap();
        assert_eq!(ids.loginuid("0"), "4294967295");
    }

    #[test]
    fn only_the_id_lines_change() {
        let ids = GuestIds::new(&IdMap::shifted(1000, 10), &none_inherited()).unwrap();
        let text = "Name:\t1005\nNgid:\t1005\nUid:\t1005\nTgid:\t1005\n";
        assert_eq!(
            ids.status(text),
            "Name:\t1005\nNgid:\t1005\nUid:\t5\nTgid:\t1005\n"
        );
        // Numbers past u32 stay as written; no newline at the end stays so.
        assert_eq!(ids.status("Uid:\t99999999999"), "Uid:\t99999999999");
        assert_eq!(ids.status(""), "");
    }

    #[test]
    fn own_ids_are_read() {
        let own = Inherited::own();
        assert!(own.overflow.0 > 0 && own.overflow.1 > 0, "{own:?}");
    }
}
