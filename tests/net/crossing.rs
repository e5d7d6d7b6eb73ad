//! Netstack sockets crossing into other descriptors and processes
//! (tests/net/crossing.py): passed by SCM_RIGHTS (and accepted on, sent
//! and received on there), inherited by fork and exec, duplicated by
//! dup, dup2, dup3 and fcntl; their `/proc/<pid>/fd` links and fdinfo,
//! the guest's `/proc/<pid>/net` files by every path, `ss` and
//! `netstat`, a sock_diag dump, UDP sources (recvfrom, recvmsg with and
//! without MSG_CMSG_CLOEXEC, recvmmsg), TCP receives with a name, and
//! SO_PEERNAME, SO_PEERCRED and SO_PEERGROUPS. Each is compared with a
//! native run line by line, but for the known differences in
//! [`GAPS`]; no line of the sandboxed run may show the host socket's
//! face (its unix family or its name behind the sandbox's token).

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const CROSSING: &str = concat!(include_str!("faces.py"), include_str!("crossing.py"));

/// Lines that differ from Linux, each by design (docs/network.md,
/// "Sockets that cross processes"): the start of the native line and
/// the whole sandboxed one. fdinfo shows the host `AF_UNIX` socket's
/// `scm_fds` line; pidfd_getfd is denied; the guest cannot open a
/// sock_diag socket; SO_PASSCRED and SO_PEERPIDFD are ENOPROTOOPT
/// (Linux 6.16 and later: EOPNOTSUPP; before: accepted).
const GAPS: &[(&str, &str)] = &[
    (
        "fdinfo listener",
        "fdinfo listener ['pos', 'flags', 'mnt_id', 'ino', 'scm_fds'] ['flags:\\t02000002'] True",
    ),
    (
        "fdinfo client",
        "fdinfo client ['pos', 'flags', 'mnt_id', 'ino', 'scm_fds'] ['flags:\\t02000002'] True",
    ),
    (
        "fdinfo udp",
        "fdinfo udp ['pos', 'flags', 'mnt_id', 'ino', 'scm_fds'] ['flags:\\t02000002'] True",
    ),
    ("pidfd_getfd ", "pidfd_getfd EPERM"),
    ("sock_diag ", "sock_diag socket EAFNOSUPPORT"),
    ("passcred set ", "passcred set ENOPROTOOPT ENOPROTOOPT"),
    ("peerpidfd ", "peerpidfd ENOPROTOOPT"),
];

#[test]
fn sockets_crossing_processes_show_only_tcp_and_udp() {
    let run = Run::new(&[PY, "-c", CROSSING]);
    let native = run.native().ok("native crossing");
    let mut isolated = run;
    isolated.wrap = vec!["unshare".into(), "-n".into()];
    let sandboxed = isolated.supervised().ok("sandboxed crossing");
    for face in ["sbx-", "family 1 ", "unix:"] {
        assert!(
            !sandboxed.stdout.contains(face),
            "{face}: {}",
            sandboxed.dump()
        );
    }
    let (ours, linux): (Vec<_>, Vec<_>) = (
        sandboxed.stdout.lines().collect(),
        native.stdout.lines().collect(),
    );
    assert_eq!(ours.len(), linux.len(), "{}", sandboxed.dump());
    let mut seen = vec![0; GAPS.len()];
    for (o, l) in ours.iter().zip(&linux) {
        match GAPS.iter().position(|(start, _)| l.starts_with(start)) {
            Some(i) => {
                assert_eq!(*o, GAPS[i].1, "native: {l}\n{}", sandboxed.dump());
                seen[i] += 1;
            }
            None => assert_eq!(o, l, "{}", sandboxed.dump()),
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}: {}", native.stdout);
    for line in [
        "scm AF_INET client ids=[2, 1, 6] name=127.0.0.1:eph peer=127.0.0.1:eph peername=127.0.0.1:eph \
         peercred=(0, -1, -1) peergroups=ENODATA",
        "udp recvmsg cloexec 127.0.0.1:eph b'three'",
        "tcp recvmsg cloexec (b'b', None)",
        "recvmmsg waitforone (3, [('127.0.0.1:eph', b'a'), ('127.0.0.1:eph', b'bb'), ('127.0.0.1:eph', b'ccc')])",
        "open /proc/self/fd client ENXIO",
        "done",
    ] {
        assert!(linux.contains(&line), "{line}: {}", native.stdout);
    }
}
