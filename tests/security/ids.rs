//! Ids and capabilities with a range of ids (`--userns-range`): the guest
//! gets ids 0–65535 mapped onto an unused host range (root: the
//! `supervisor` entry of /etc/subuid and /etc/subgid; an unprivileged
//! invoker: its own subordinate ids), its processes are those host ids
//! seen from outside, its root holds Docker's default capability set in
//! its own user namespace (chown, setuid, tar keeping owners),
//! `--cap-drop`, `--cap-add` and `--user` act as in `docker run`, and a
//! `--rw` directory appears owned by the guest's root while what it
//! creates there belongs on the host to the directory's owner. Also: the
//! view's /etc/passwd and /etc/group name the host's system users.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};

use crate::common;
use common::*;

const AUTO: [&str; 2] = ["--userns-range", "auto"];

/// The `supervisor` entry (start, count) of `file`, once a run made it.
fn entry(file: &str, owner: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == owner).then_some(())?;
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    })
}

/// Runs `script` with the root range and returns the range's start.
fn run_root(script: &str, extra: &[&str]) -> (Out, u32) {
    let out = Run::sh(script, &[]).sup(&AUTO).sup(extra).supervised();
    let (start, count) = entry("/etc/subuid", "supervisor").expect("a supervisor entry");
    assert_eq!(
        entry("/etc/subgid", "supervisor"),
        Some((start, count)),
        "subgid entry differs"
    );
    assert!(start >= 100_000 && count >= 65536, "{start}:{count}");
    (out, start)
}

/// The map lines of a `/proc/self/{uid,gid}_map`, whitespace collapsed.
fn map_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn guest_maps_a_full_range_onto_the_supervisor_entry() {
    if !is_root() {
        skip!("needs root");
    }
    let (out, start) = run_root(
        "cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g",
        &[],
    );
    let out = out.ok("maps");
    let want = format!("0 {start} 65536");
    assert_eq!(
        map_lines(&out.stdout),
        [want.as_str(), want.as_str(), "0", "0"],
        "{}",
        out.dump()
    );
}

/// Read from outside: every process of the sandbox (init and the guest)
/// runs as the range's first host id, never as host root.
#[test]
fn guest_processes_run_as_mapped_host_ids() {
    if !is_root() {
        skip!("needs root");
    }
    let marker = "31.4159";
    let mut child = Command::new(bin())
        .args(["run", "--userns-range", "auto", "--", "sh", "-c"])
        .arg(format!("echo ready; exec sleep {marker}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("ready line");
    assert_eq!(line, "ready\n");
    let start = entry("/etc/subuid", "supervisor").expect("entry").0;
    // "ready" comes before the exec: look until the sleep shows.
    let find = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c == format!("sleep\0{marker}\0").as_bytes())
            })
    };
    let sleeper = (0..200).find_map(|_| {
        find().or_else(|| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            None
        })
    });
    let status = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |st: &str, name: &str| -> Vec<u32> {
        let line = st.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len()..]
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let result = sleeper.map(|pid| {
        let guest = status(pid);
        let init_pid = field(&guest, "PPid:")[0];
        let init = status(init_pid);
        (
            field(&guest, "Uid:"),
            field(&guest, "Gid:"),
            field(&init, "Uid:"),
        )
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let (uids, gids, init_uids) = result.expect("the guest's sleep on the host");
    assert_eq!(uids, [start; 4]);
    assert_eq!(gids, [start; 4]);
    assert_eq!(init_uids, [start; 4], "init");
}

#[test]
fn guest_root_holds_dockers_default_set() {
    if !is_root() {
        skip!("needs root");
    }
    let (out, _) = run_root("grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status", &[]);
    out.ok("caps").assert_lines(&[
        "CapPrm:\t00000000a80405fb",
        "CapEff:\t00000000a80405fb",
        "CapBnd:\t00000000a80405fb",
    ]);
}

/// chown to another user, and a process dropping to another user with
/// python's os.setuid and with setpriv.
#[test]
fn guest_root_chowns_and_drops_to_another_user() {
    if !is_root() {
        skip!("needs root");
    }
    let script = "touch /tmp/x && chown 65534:65534 /tmp/x && stat -c %u:%g /tmp/x && \
                  python3 -c 'import os; os.setgroups([]); os.setgid(1000); os.setuid(1000); print(os.getuid(), os.getgid())' && \
                  setpriv --reuid=1000 --regid=1000 --clear-groups id -u && \
                  setpriv --reuid=1000 --regid=1000 --clear-groups sh -c 'grep ^CapEff /proc/self/status'";
    let (out, _) = run_root(script, &[]);
    let out = out.ok("chown and setuid");
    assert_eq!(
        out.stdout,
        "65534:65534\n1000 1000\n1000\nCapEff:\t0000000000000000\n",
        "{}",
        out.dump()
    );
}

/// The socket name and option calls are served without taking the
/// caller's ids (`trap/creds.rs`, `needs_ids`): the worker keeps the ids
/// of the call it served before. A uid-1000 child's getsockname and
/// getsockopt after its root parent's symlink (served as root), and then
/// its own symlink into root's 0700 directory: EACCES as natively, never
/// made with the ids the worker kept.
#[test]
fn socket_names_leave_no_other_ids_behind() {
    if !is_root() {
        skip!("needs root");
    }
    let script = r#"
import os, shutil, socket, tempfile
base = tempfile.mkdtemp()
os.chmod(base, 0o755)
os.mkdir(base + "/locked", 0o700)
s = socket.socket()
s.bind(("127.0.0.1", 0))
r, w = os.pipe()
r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setgid(1000); os.setuid(1000)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    os.write(w, b"x"); os.read(r2, 1)
    name = s.getsockname()[0]
    opt = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    try:
        os.symlink("t", base + "/locked/child")
        print("made", flush=True)
    except PermissionError:
        print("EACCES", flush=True)
    print(name, opt, flush=True)
    os._exit(0)
os.read(r, 1)
os.symlink("t", base + "/root")
os.write(w2, b"x")
os.waitpid(pid, 0)
print(sorted(os.listdir(base + "/locked")), os.path.islink(base + "/root"))
shutil.rmtree(base)
"#;
    let run = Run::new(&["python3", "-c", script]);
    let native = run.native().ok("native");
    assert_eq!(native.stdout, "EACCES\n127.0.0.1 1\n[] True\n");
    let out = run.sup(&AUTO).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// tar --same-owner restores the owners it recorded, as natively as root.
#[test]
fn tar_extracts_owners() {
    if !is_root() {
        skip!("needs root");
    }
    let script = "mkdir -p \"$T/src\" \"$T/out\" && echo a > \"$T/src/f\" && chown 1234:4321 \"$T/src/f\" && \
                  tar -C \"$T\" -cf \"$T/a.tar\" src && tar --same-owner -C \"$T/out\" -xf \"$T/a.tar\" && \
                  stat -c %u:%g \"$T/out/src/f\"";
    let dir = tempfile::tempdir().unwrap();
    let native = Run::sh(script, &[])
        .env("T", &dir.path().display().to_string())
        .native()
        .ok("native tar");
    let out = Run::sh(script, &[])
        .sup(&["--env", "T=/tmp/t"])
        .sup(&AUTO)
        .supervised()
        .ok("tar");
    assert_eq!(out.stdout, native.stdout);
    assert_eq!(out.stdout, "1234:4321\n");
}

#[test]
fn cap_drop_chown_makes_chown_fail() {
    if !is_root() {
        skip!("needs root");
    }
    let script = "grep ^CapEff /proc/self/status; touch /tmp/x; chown 65534 /tmp/x";
    let (out, _) = run_root(script, &["--cap-drop", "CHOWN"]);
    assert_eq!(out.code, Some(1), "{}", out.dump());
    assert_eq!(out.stdout, "CapEff:\t00000000a80405fa\n", "{}", out.dump());
    assert!(
        out.stderr.contains("Operation not permitted"),
        "{}",
        out.dump()
    );
}

#[test]
fn cap_add_outside_the_default_set_is_a_bad_flag() {
    let bad = Run::new(&["true"])
        .sup(&AUTO)
        .sup(&["--cap-add", "SYS_ADMIN"])
        .supervised();
    let other = Run::new(&["true"]).sup(&["--disk", "0"]).supervised();
    assert_eq!(bad.code, other.code, "{}", bad.dump());
    assert_ne!(bad.code, Some(0));
    assert!(bad.stderr.contains("SYS_ADMIN"), "{}", bad.dump());
    assert_eq!(bad.stderr.lines().count(), 1, "{}", bad.dump());
}

#[test]
fn user_flag_runs_as_that_user() {
    if !is_root() {
        skip!("needs root");
    }
    let (out, _) = run_root(
        "id -u; id -g; grep ^CapEff /proc/self/status",
        &["--user", "1000:1000"],
    );
    assert_eq!(
        out.ok("--user").stdout,
        "1000\n1000\nCapEff:\t0000000000000000\n"
    );
    let (out, _) = run_root("id -u", &["--user", "1000"]);
    assert_eq!(out.ok("--user 1000").stdout, "1000\n");
}

/// A `--rw` directory appears owned by the guest's root; what its root
/// makes there belongs on the host to the directory's owner (here
/// tester, 1001), never to a mapped id or to host root, and keeps no
/// set-user-ID bit.
#[test]
fn files_made_in_rw_belong_to_the_directory_owner() {
    if !is_root() {
        skip!("needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(d, Some(1001), Some(1001)).unwrap();
    let p = d.display().to_string();
    let script = format!(
        "stat -c %u:%g {p} && echo hi > {p}/new && mkdir {p}/sub && chmod 4755 {p}/new && stat -c %u:%g {p}/new"
    );
    let (out, _) = {
        let out = Run::sh(&script, &[]).sup(&AUTO).rw(d).supervised();
        (out, ())
    };
    let out = out.ok("--rw");
    assert_eq!(out.stdout, "0:0\n0:0\n", "{}", out.dump());
    for name in ["new", "sub"] {
        let meta = std::fs::metadata(d.join(name)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (1001, 1001), "{name}");
    }
    let mode = std::fs::metadata(d.join("new")).unwrap().mode();
    assert_eq!(mode & 0o6000, 0, "{mode:o}");
}

/// The view's /etc/passwd and /etc/group name the host's system users and
/// groups, as natively.
#[test]
fn system_users_and_groups_resolve_by_name() {
    let script =
        "import grp, pwd; print(grp.getgrnam('daemon').gr_gid, pwd.getpwnam('daemon').pw_uid, \
                  grp.getgrnam('nogroup').gr_gid, pwd.getpwnam('nobody').pw_uid)";
    let run = Run::new(&["python3", "-c", script]);
    let native = run.native().ok("native");
    let out = run.supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout);
}

/// An unprivileged invoker with subordinate ids (tester) gets a range
/// through newuidmap: guest 0 as itself, 1–65535 onto its own.
#[test]
fn unprivileged_with_subordinate_ids_gets_a_range() {
    let Ok((uid, gid, bin)) = tester_bin() else {
        skip!("needs root and user tester");
    };
    let Some((sub, count)) = entry("/etc/subuid", "tester") else {
        panic!("tester has no /etc/subuid entry (.ci/run adds one)");
    };
    assert!(count >= 65535);
    let out = Run::sh(
        "cat /proc/self/uid_map; id -u; grep ^CapEff /proc/self/status",
        &[],
    )
    .user(uid, gid)
    .bin(&bin)
    .sup(&AUTO)
    .supervised()
    .ok("as tester");
    assert_eq!(
        map_lines(&out.stdout),
        [
            format!("0 {uid} 1"),
            format!("1 {sub} 65535"),
            "0".into(),
            "CapEff: 00000000a80405fb".into()
        ],
        "{}",
        out.dump()
    );
}

/// Without subordinate ids (nobody has none), the guest keeps the
/// invoker's one id, with a one-line note.
#[test]
fn unprivileged_without_subordinate_ids_keeps_one_id() {
    if !is_root() {
        skip!("needs root to become nobody");
    }
    let bin = copy_for_others("ids-bin").expect("a copy of the binary");
    let out = Run::new(&["id", "-u"])
        .user(65534, 65534)
        .bin(&bin)
        .sup(&AUTO)
        .supervised();
    let out = out.ok("as nobody");
    assert_eq!(out.stdout, "65534\n");
    assert_eq!(
        out.stderr,
        "supervisor: note: uid 65534 has no range in /etc/subuid and /etc/subgid: the guest has one id, 65534\n"
    );
}

/// The host's /usr and /etc (root's) show as the guest root's, as on the
/// host, and its root may change /etc (in its layer, by copy-up).
#[test]
fn host_system_files_show_as_the_guest_roots() {
    if !is_root() {
        skip!("needs root");
    }
    let stat = Run::sh("stat -c %u:%g /usr/bin/env /etc/profile /usr", &[]);
    let native = stat.native().ok("native stat");
    let out = stat.clone().sup(&AUTO).supervised().ok("stat");
    assert_eq!(out.stdout, native.stdout);
    let (out, _) = run_root(
        "echo '# guest' >> /etc/profile && tail -n 1 /etc/profile",
        &[],
    );
    assert_eq!(out.ok("/etc write").stdout, "# guest\n");
    assert!(!std::fs::read_to_string("/etc/profile")
        .unwrap()
        .contains("# guest"));
}
