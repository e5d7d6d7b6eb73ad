//! The guest root's capabilities reach the serviced calls with a range of
//! ids (`--userns-range auto`): a rename, link, symlink, rmdir or device
//! node in another user's directory (CAP_DAC_OVERRIDE), a rename or
//! removal in a sticky directory of another's file (CAP_FOWNER), a chown
//! of a set-id file (CAP_CHOWN with CAP_FOWNER) all succeed as they do
//! for root natively, and fail as natively for a root without those
//! capabilities and for another user. Each script runs natively as root
//! in a fresh directory and under the supervisor in the sandbox's /tmp;
//! the answers (exit codes and owners) must be the same.

use crate::common;
use common::*;

const AUTO: [&str; 2] = ["--userns-range", "auto"];

/// Root acting in directories of other users' (65534's, 0755) and in a
/// sticky one, and another user (65532) refused the same.
const AS_ROOT: &str = r#"
set -u
cd "$T"
r() { "$@" 2>/dev/null; echo "$1 $?"; }
mkdir d s && chown 65534:65534 d s && chmod 0755 d && chmod 1777 s
r touch d/a
r mv d/a d/b
r ln -s target d/sym
r ln d/b d/hard
r mkdir d/sub
r rmdir d/sub
r mknod d/null c 1 3
r rm d/null
stat -c '%n %u:%g %a' d/b d/sym d/hard
touch s/f && chown 65533:65533 s/f && r mv s/f s/g
mkdir s/dir && chown 65533:65533 s/dir && r rmdir s/dir
touch s/h && chown 65533:65533 s/h
r setpriv --reuid=65532 --regid=65532 --clear-groups mv s/h s/i
r setpriv --reuid=65532 --regid=65532 --clear-groups mv d/b d/c
touch x && chown 65534:65533 x && chmod 06555 x
r chown 65532:65531 x
stat -c '%n %u:%g' x
stat -c '%n %u:%g' s/g s/h
"#;

#[test]
fn guest_root_renames_and_removes_in_others_directories_as_natively() {
    if !is_root() {
        skip!("needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let native = Run::sh(AS_ROOT, &[])
        .env("T", &dir.path().display().to_string())
        .native()
        .ok("native");
    let out = Run::sh(AS_ROOT, &[])
        .sup(&["--env", "T=/tmp"])
        .sup(&AUTO)
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    // The script's own claims, so that a run where both fail alike fails.
    out.assert_lines(&[
        "mv 0",
        "ln 0",
        "rmdir 0",
        "mknod 0",
        "setpriv 1",
        "chown 0",
        "x 65532:65531",
        "s/g 65533:65533",
    ]);
}

/// The same steps by a root without CAP_DAC_OVERRIDE and CAP_FOWNER
/// (`--cap-drop`; natively, `setpriv` dropping them from the bounding
/// set) are refused as natively. The set-up needs neither: root makes
/// everything, then gives it away (CAP_CHOWN).
const WITHOUT_CAPS: &str = r#"
set -u
cd "$T"
r() { "$@" 2>/dev/null; echo "$1 $?"; }
mkdir d s && chmod 0755 d && chmod 1777 s
touch s/f d/a && mkdir d/sub
chown 65533:65533 s/f && chown 65534:65534 d s
$DROP sh -c '
r() { "$@" 2>/dev/null; echo "$1 $?"; }
r mv d/a d/b
r ln -s target d/sym
r rmdir d/sub
r mv s/f s/g
'
"#;

#[test]
fn guest_root_without_the_capabilities_is_refused_as_natively() {
    if !is_root() {
        skip!("needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let native = Run::sh(WITHOUT_CAPS, &[])
        .env("T", &dir.path().display().to_string())
        .env(
            "DROP",
            "setpriv --bounding-set=-dac_override,-fowner,-dac_read_search",
        )
        .native()
        .ok("native");
    let out = Run::sh(WITHOUT_CAPS, &[])
        .sup(&["--env", "T=/tmp", "--env", "DROP="])
        .sup(&AUTO)
        .sup(&["--cap-drop", "DAC_OVERRIDE", "--cap-drop", "FOWNER"])
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&["mv 1", "ln 1", "rmdir 1"]);
}

/// Extended attribute writes of each namespace, as a user namespace's
/// root makes them: `trusted.*` and other `security.*` names refused, a
/// file capability (CAP_NET_RAW, v2 as `setcap` writes it) stored and
/// read back, a malformed one EINVAL, `user.*` by path and descriptor.
const XATTRS: &str = r#"
import errno, os, struct, sys
d = sys.argv[1]
f = os.path.join(d, 'f')
open(f, 'w').close()
def t(label, fn):
    try:
        fn()
        print(label, 'ok')
    except OSError as e:
        print(label, errno.errorcode[e.errno])
v2 = struct.pack('<IIIII', 0x02000001, 1 << 13, 0, 0, 0)
t('trusted', lambda: os.setxattr(f, 'trusted.x', b'1'))
t('security', lambda: os.setxattr(f, 'security.x', b'1'))
t('user', lambda: os.setxattr(f, 'user.x', b'1'))
fd = os.open(f, os.O_RDONLY)
t('user by fd', lambda: os.setxattr(fd, 'user.y', b'2'))
t('caps bad', lambda: os.setxattr(f, 'security.capability', b'xx'))
t('caps', lambda: os.setxattr(f, 'security.capability', v2))
try:
    print('caps read', os.getxattr(f, 'security.capability').hex())
except OSError as e:
    print('caps read', errno.errorcode[e.errno])
print(sorted(os.listxattr(f)))
"#;

/// In the sandbox's own /tmp the writes behave as for the root of an
/// unprivileged user namespace (natively: `unshare -Ur` as tester).
#[test]
fn xattr_writes_are_a_user_namespace_roots() {
    if !is_root() || !tester_exists() {
        skip!("needs root and the user tester");
    }
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(1001), Some(1001)).unwrap();
    let p = dir.path().display().to_string();
    let native = Run::new(&["unshare", "-Ur", "python3", "-c", XATTRS, &p])
        .user(1001, 1001)
        .native()
        .ok("native");
    let out = Run::new(&["python3", "-c", XATTRS, "/tmp"])
        .sup(&AUTO)
        .supervised()
        .ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    out.assert_lines(&[
        "trusted EPERM",
        "security EPERM",
        "user ok",
        "user by fd ok",
        "caps bad EINVAL",
        "caps ok",
        "caps read 0100000200200000000000000000000000000000",
    ]);
}

/// Seen from the host, the capability a guest root sets in the sandbox's
/// own file system is namespaced (v3) and tied to the guest's root (the
/// range's first host id): no host process gains it.
#[test]
fn a_file_capability_is_tied_to_the_guests_root_on_the_host() {
    if !is_root() {
        skip!("needs root");
    }
    let marker = "32.7183";
    let script = format!("python3 -c \"$1\" /tmp >/dev/null && echo ready && exec sleep {marker}");
    let mut child = std::process::Command::new(bin())
        .args([
            "run",
            "--userns-range",
            "auto",
            "--",
            "sh",
            "-c",
            &script,
            "sh",
            XATTRS,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("ready line");
    let want = format!("sleep\0{marker}\0");
    let sleeper = (0..200).find_map(|_| {
        let found = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
            });
        if found.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        found
    });
    let caps = sleeper.map(|pid| xattr_of(&format!("/proc/{pid}/root/tmp/f")));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line, "ready\n");
    let start = std::fs::read_to_string("/etc/subuid")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("supervisor:")?
                .split(':')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .expect("supervisor entry");
    let mut want = vec![0x01, 0, 0, 0x03, 0, 0x20, 0, 0];
    want.extend_from_slice(&[0; 12]);
    want.extend_from_slice(&start.to_le_bytes());
    assert_eq!(caps, Some(Some(want)), "the stored security.capability");
}

/// On a `--rw` directory (the host's file system) a file capability is
/// refused, so none reaches a host file; `user.*` is written.
#[test]
fn no_file_capability_reaches_a_host_directory() {
    if !is_root() {
        skip!("needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().display().to_string();
    let out = Run::new(&["python3", "-c", XATTRS, &p])
        .sup(&AUTO)
        .rw(dir.path())
        .supervised()
        .ok("supervised");
    out.assert_lines(&["user ok", "caps EPERM", "caps read ENODATA"]);
    assert_eq!(xattr_of(&format!("{p}/f")), None);
}

/// The raw `security.capability` of `path` as the host reads it.
fn xattr_of(path: &str) -> Option<Vec<u8>> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], 'security.capability', follow_symlinks=False).hex())",
            path,
        ])
        .output()
        .ok()?;
    let hex = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !hex.is_empty()).then(|| {
        (0..hex.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect()
    })
}
