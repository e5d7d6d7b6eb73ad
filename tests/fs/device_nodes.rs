//! Device nodes and set-id bits of the guest's own files
//! (`syscalls/src/handlers/mknod.rs`, `sandbox/src/trap/nodes.rs`,
//! `handlers/setid.rs`).
//!
//! A root supervisor makes the character and block nodes its guest asks
//! for in the sandbox's own file systems, all mounted nodev: the node is
//! made, listed, chmod'ed, chowned, linked, renamed and removed as by a
//! container's root with CAP_MKNOD, and never opened (EACCES). The native
//! side is uid 0 with CAP_MKNOD alone in a nodev tmpfs of its own mount
//! namespace. On a `--rw` host directory, where a host process could open
//! the node, and under an unprivileged supervisor, the kernel's EPERM
//! stands; FIFOs are made everywhere. The guest's own files keep the
//! set-id bits it sets (as natively), and nothing it makes in a `--rw`
//! directory is a set-user-ID or set-group-ID program of the host's root.

use crate::common;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::*;

/// Makes and handles device nodes in `$1`; every line is comparable
/// across runs (no times, no inode numbers).
const NODES: &str = r#"umask 022; cd "$1" || exit 9
err() { sed 's/.*: //'; }
mknod null c 1 3 && echo made null
mknod -m 0640 loop b 7 0 && echo made loop
ls -l null loop | awk '{print $1, $2, $3, $4, $5, $6, $NF}'
stat -c '%F %t:%T %a %u:%g %h %n' null loop
cat null 2>&1 | err
(echo x > null) 2>&1 | err
dd if=loop of=/dev/null count=1 2>&1 | head -n 1 | err
chmod 0600 null && chown 0:0 null && stat -c '%a %u:%g' null
ln null hard && stat -c '%h %n' null hard
mv hard moved && ls
mkfifo fifo && stat -c '%F %a' fifo
mknod taken c 1 3 && mknod taken c 1 3 2>&1 | err
rm null moved loop fifo taken && ls -A | wc -l
"#;

/// uid 0 with CAP_MKNOD alone.
const MKNOD_ONLY: &[&str] = &["setpriv", "--bounding-set=-all,+mknod", "--inh-caps=-all"];

fn cannot_run() -> Option<&'static str> {
    if !is_root() {
        return Some("needs root (a supervisor with CAP_MKNOD; a tmpfs natively)");
    }
    ["setpriv", "unshare", "mknod", "mkfifo", "dd"]
        .into_iter()
        .find(|t| !have(t))
}

#[test]
fn device_nodes_in_the_sandbox_s_tmp_match_native_with_cap_mknod() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let t = Tree::new();
    let dir = t.dir("nodes").display().to_string();
    let mount = r#"mount -t tmpfs -o nodev tmpfs "$1" && shift && exec "$@""#;
    let mut argv = vec!["unshare", "-m", "sh", "-c", mount, "sh", &dir];
    argv.extend_from_slice(MKNOD_ONLY);
    argv.extend_from_slice(&["sh", "-c", NODES, "sh", &dir]);
    let native = Run::new(&argv).native().ok("native");
    assert!(
        native.stdout.contains("made null\nmade loop\n"),
        "natively:\n{}",
        native.dump()
    );
    assert!(
        native.stdout.contains("Permission denied"),
        "{}",
        native.dump()
    );
    let sup = Run::sh(
        r#"mkdir "$1" && exec sh -c "$2" sh "$1""#,
        &["/tmp/nodes", NODES],
    )
    .supervised()
    .ok("supervised");
    assert_same("device nodes in /tmp", &native.stdout, &sup.stdout);
}

#[test]
fn device_nodes_in_a_tmpfs_mount_are_made() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let sup = Run::sh(NODES, &["/scratch"])
        .sup(&["--tmpfs", "/scratch"])
        .supervised()
        .ok("supervised");
    assert!(
        sup.stdout.starts_with("made null\nmade loop\n"),
        "{}",
        sup.dump()
    );
    assert!(sup.stdout.ends_with("\n0\n"), "{}", sup.dump());
}

/// A host directory: a host process could open a node there as the
/// device, so the kernel's EPERM stands (after its own EEXIST), as for
/// uid 0 without CAP_MKNOD natively; a FIFO is made.
#[test]
fn device_nodes_on_a_rw_host_directory_are_refused() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let script = r#"cd "$1" || exit 9
mknod null c 1 3 2>&1 | sed 's/.*: //'
mknod loop b 7 0 2>&1 | sed 's/.*: //'
mknod f c 1 3 2>&1 | sed 's/.*: //'
mkfifo fifo && stat -c '%F' fifo
ls"#;
    let pair = Pair::new(|d| std::fs::write(d.join("f"), "x").unwrap());
    let a = pair.a.display().to_string();
    let mut argv = vec!["setpriv", "--bounding-set=-all", "--inh-caps=-all"];
    argv.extend_from_slice(&["sh", "-c", script, "sh", &a]);
    let native = Run::new(&argv).native().ok("native");
    assert_eq!(
        native.stdout,
        "Operation not permitted\nOperation not permitted\nFile exists\nfifo\nf\nfifo\n"
    );
    let b = pair.b.display().to_string();
    let sup = Run::sh(script, &[&b])
        .rw(&pair.b)
        .supervised()
        .ok("supervised");
    assert_same(
        "device nodes on a host directory",
        &native.stdout,
        &sup.stdout,
    );
    assert!(!pair.b.join("null").exists());
}

/// An unprivileged supervisor holds no CAP_MKNOD to lend: EPERM, as for
/// its invoker natively; FIFOs are made.
#[test]
fn an_unprivileged_supervisor_s_guest_gets_eperm() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    let script = r#"cd /tmp && mknod null c 1 3 2>&1 | sed 's/.*: //'
mkfifo fifo && stat -c '%F' fifo"#;
    let sup = Run::sh(script, &[])
        .user(uid, gid)
        .bin(bin)
        .supervised()
        .ok("supervised");
    assert_eq!(
        sup.stdout,
        "Operation not permitted\nfifo\n",
        "{}",
        sup.dump()
    );
}

/// Set-id bits the guest sets on its own files stay, as natively (uid 0
/// without capabilities: the owner needs none).
const SETID: &str = r#"umask 022; cd "$1" || exit 9
printf '\177ELF' > prog
for m in 4755 2755 6755 4644 2711 6777 1777; do chmod $m prog && stat -c "$m %a" prog; done
mkdir d && chmod 2775 d && stat -c '%a' d && touch d/in && stat -c '%a %g' d/in
mkdir d/sub && stat -c '%a' d/sub
python3 -c 'import os; fd = os.open("made", os.O_CREAT | os.O_WRONLY, 0o6755); print(oct(os.fstat(fd).st_mode & 0o7777))'
python3 -c 'import os; fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755); print(oct(os.fstat(fd).st_mode & 0o7777))'
"#;

#[test]
fn set_id_bits_of_the_guest_s_own_files_stay_as_natively() {
    if let Some(why) = cannot_run() {
        skip!("{why}");
    }
    let t = Tree::new();
    let dir = t.dir("setid").display().to_string();
    let mut argv = vec!["setpriv", "--bounding-set=-all", "--inh-caps=-all"];
    argv.extend_from_slice(&["sh", "-c", SETID, "sh", &dir]);
    let native = Run::new(&argv).native().ok("native");
    assert!(
        native.stdout.starts_with("4755 4755\n"),
        "{}",
        native.dump()
    );
    let sup = Run::sh(
        r#"mkdir "$1" && exec sh -c "$2" sh "$1""#,
        &["/tmp/setid", SETID],
    )
    .supervised()
    .ok("supervised");
    assert_same("set-id bits in /tmp", &native.stdout, &sup.stdout);
    let sup = Run::sh(SETID, &["/scratch"])
        .sup(&["--tmpfs", "/scratch"])
        .supervised()
        .ok("supervised");
    assert_same("set-id bits in a --tmpfs", &native.stdout, &sup.stdout);
}

/// Nothing a root guest makes in a `--rw` directory is a set-id program
/// of the host's root, however it asks (chmod, fchmod, a created mode,
/// then written).
#[test]
fn no_set_id_root_program_lands_in_a_rw_directory() {
    if !is_root() {
        skip!("needs root: the guest is then the host's root");
    }
    let t = Tree::new();
    let rw = t.dir("rw");
    let script = r#"cd "$1" || exit 9
printf '\177ELF' > a && chmod 4755 a
printf '\177ELF' > b && chmod 6755 b
printf '\177ELF' > c && chmod 755 c && chmod u+s,g+s c
python3 -c 'import os; fd = os.open("d", os.O_CREAT | os.O_WRONLY, 0o755); os.write(fd, b"\x7fELF"); os.fchmod(fd, 0o6755)'
python3 -c 'import os; fd = os.open("e", os.O_CREAT | os.O_WRONLY, 0o6755); os.write(fd, b"\x7fELF")'
true"#;
    Run::sh(script, &[&rw.display().to_string()])
        .rw(&rw)
        .supervised()
        .ok("supervised");
    for name in ["a", "b", "c", "d", "e"] {
        let m = std::fs::metadata(rw.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mode = m.permissions().mode();
        // (bits that make no program stay, as on Linux: `handlers/setid.rs`)
        let setuid_root = mode & 0o4000 != 0 && mode & 0o111 != 0 && m.uid() == 0;
        let setgid_root = mode & 0o2010 == 0o2010 && m.gid() == 0;
        assert!(
            !setuid_root && !setgid_root,
            "{name}: mode {mode:o} owner {}:{} on the host",
            m.uid(),
            m.gid()
        );
    }
}
