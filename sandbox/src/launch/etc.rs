//! The sandbox's own /etc files and the host /etc entries it hides: plain
//! text computed in the supervisor before launch (`plan.rs` puts them in
//! the plan, `view.rs` writes them in the upper layer of the view's /etc,
//! the host's or the `--rootfs` tree's).
//!
//! Owns: the contents of passwd, group, hostname, hosts, resolv.conf and
//! machine-id, the guest's $HOME as passwd names it, and finding the
//! secret entries of the host's /etc (`ETC_HIDDEN`). Does not own writing
//! them.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::net::IpAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use vfs::mounts::ETC_HIDDEN;

/// The files written into the view's /etc: (name relative to /etc,
/// contents). passwd comes first. `users_from`: the /etc whose system
/// users and groups passwd and group add (`None`: none).
pub fn files(
    uid: u32,
    gid: u32,
    home: &Path,
    hostname: &str,
    nameserver: Option<IpAddr>,
    users_from: Option<&Path>,
) -> Vec<(PathBuf, Vec<u8>)> {
    let host_file = |name: &str| {
        users_from
            .and_then(|etc| fs::read_to_string(etc.join(name)).ok())
            .unwrap_or_default()
    };
    vec![
        (
            "passwd".into(),
            (passwd(uid, gid, home) + &system_entries(&host_file("passwd"), uid, 2)).into_bytes(),
        ),
        (
            "group".into(),
            (group(gid) + &system_entries(&host_file("group"), gid, 2)).into_bytes(),
        ),
        ("hostname".into(), format!("{hostname}\n").into_bytes()),
        ("hosts".into(), hosts(hostname).into_bytes()),
        ("resolv.conf".into(), resolv_conf(nameserver).into_bytes()),
    ]
}

/// The sandbox's /etc/resolv.conf. Its network namespace holds loopback
/// only, so no name server is reachable and none is named: the host's
/// (a LAN or systemd-resolved address) would only make lookups wait for
/// a timeout. Without a `nameserver` line the C library tries
/// 127.0.0.1:53, which the empty namespace refuses at once, so a lookup
/// fails fast with "no such host". `ndots:0` keeps it from also trying
/// search domains. With `--allow-net` name rules, [`resolv_conf`] names
/// the netstack's DNS stub instead.
pub const RESOLV_CONF: &str = "\
# The sandbox has no network beyond loopback, and so no DNS server.
options ndots:0
";

/// The sandbox's /etc/resolv.conf: [`RESOLV_CONF`], or one naming the
/// DNS stub at `nameserver`, which answers at once (one attempt is enough).
pub fn resolv_conf(nameserver: Option<IpAddr>) -> String {
    match nameserver {
        None => RESOLV_CONF.to_string(),
        Some(ip) => format!(
            "# The sandbox's DNS stub: it resolves only the names --allow-net allows.\n\
             nameserver {ip}\n\
             options ndots:0 attempts:1\n"
        ),
    }
}

/// A fresh machine id for one sandbox, in machine-id(5)'s form: 32
/// lowercase hex digits and a newline, a random (version 4) UUID as
/// systemd makes one. The host's own /etc/machine-id names the host for
/// good: two tenants who read the same one know they share a machine, and
/// a tenant can recognise the host again across runs. Each sandbox gets
/// its own, as a systemd-nspawn container does. The bytes come from
/// /dev/urandom; a host without it fails the plan with one line.
pub fn machine_id() -> Result<String, String> {
    let mut id = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut id))
        .map_err(|e| format!("a machine id for the sandbox: /dev/urandom: {e}"))?;
    Ok(format!("{}\n", id128_v4_hex(id)))
}

/// `bytes` as an id128 with the version-4 and variant bits set, in hex.
fn id128_v4_hex(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The ETC_HIDDEN entries present under `etc`, `*` patterns expanded.
/// One read of `etc`'s top level first: a pattern whose first name is not
/// there is not looked up, so most of the list costs nothing.
pub fn hidden_entries(etc: &Path) -> Vec<PathBuf> {
    let Ok(dir) = fs::read_dir(etc) else {
        return Vec::new();
    };
    let top: Vec<OsString> = dir.filter_map(Result::ok).map(|e| e.file_name()).collect();
    let mut out = Vec::new();
    for pattern in ETC_HIDDEN {
        let rel = Path::new(pattern);
        let first = rel.iter().next().unwrap_or_default();
        let nested = rel.components().count() > 1;
        let name = rel.file_name().map(OsStr::as_bytes).unwrap_or_default();
        let parent = rel.parent().unwrap_or(Path::new(""));
        match name.strip_suffix(b"*") {
            Some(prefix) if !nested => out.extend(matching(top.iter().cloned(), prefix, parent)),
            _ if !top.iter().any(|n| n == first) => {}
            Some(prefix) => {
                if let Ok(dir) = fs::read_dir(etc.join(parent)) {
                    let names = dir.filter_map(Result::ok).map(|e| e.file_name());
                    out.extend(matching(names, prefix, parent));
                }
            }
            None if !nested => out.push(rel.to_path_buf()),
            None => {
                if fs::symlink_metadata(etc.join(rel)).is_ok() {
                    out.push(rel.to_path_buf());
                }
            }
        }
    }
    out
}

/// The `names` that start with `prefix`, beneath `parent`, sorted.
fn matching(names: impl Iterator<Item = OsString>, prefix: &[u8], parent: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = names
        .filter(|n| n.as_bytes().starts_with(prefix))
        .map(|n| parent.join(n))
        .collect();
    found.sort();
    found
}

/// $HOME of the guest environment, when it is a usable absolute path.
pub fn guest_home(env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let (_, v) = env.iter().rev().find(|(k, _)| k == "HOME")?;
    let home = vfs::mounts::guest_path(v.to_str()?).ok()?;
    Some(home)
}

/// The home passwd gives the sandbox user when the guest has no $HOME.
pub fn default_home(uid: u32) -> PathBuf {
    if uid == 0 {
        "/root".into()
    } else {
        "/home/sandbox".into()
    }
}

/// The sandbox's /etc/passwd: root, the sandbox user (when not root) and
/// nobody, who owns every host file whose owner has no id inside.
pub fn passwd(uid: u32, gid: u32, home: &Path) -> String {
    let home = home.display();
    let mut s = String::new();
    if uid == 0 {
        s.push_str(&format!("root:x:0:{gid}:root:{home}:/bin/sh\n"));
    } else {
        s.push_str("root:x:0:0:root:/root:/bin/sh\n");
        s.push_str(&format!("sandbox:x:{uid}:{gid}:sandbox:{home}:/bin/sh\n"));
    }
    s.push_str("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    s
}

/// The sandbox's /etc/group.
pub fn group(gid: u32) -> String {
    let mut s = String::from("root:x:0:\n");
    if gid != 0 {
        s.push_str(&format!("sandbox:x:{gid}:\n"));
    }
    s.push_str("nogroup:x:65534:\n");
    s
}

/// The host's system users (or groups) of `host` (passwd or group
/// lines), so that a program finds `daemon`, `bin`, `_apt`, `nogroup`
/// by name: ids 1–999 (root, nobody/nogroup and the sandbox's own `id`
/// are written above), without secrets (the password field is `x`) and,
/// for groups, without members (those name the host's people). `id_at`:
/// the field holding the id (2 in both files).
fn system_entries(host: &str, own: u32, id_at: usize) -> String {
    let mut out = String::new();
    for line in host.lines() {
        let mut fields: Vec<&str> = line.split(':').collect();
        let Some(id) = fields.get(id_at).and_then(|f| f.parse::<u32>().ok()) else {
            continue;
        };
        if !(1..1000).contains(&id) || id == own || fields[0].is_empty() {
            continue;
        }
        if fields.len() > 1 {
            fields[1] = "x";
        }
        if fields.len() == 4 {
            fields[3] = ""; // a group's members
        }
        out.push_str(&fields.join(":"));
        out.push('\n');
    }
    out
}

/// The sandbox's /etc/hosts.
pub fn hosts(hostname: &str) -> String {
    format!(
        "127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_group_hosts() {
        let p = passwd(1000, 1000, Path::new("/home/alice"));
        assert!(
            p.contains("sandbox:x:1000:1000:sandbox:/home/alice:/bin/sh\n"),
            "{p}"
        );
        assert!(p.starts_with("root:x:0:0:root:/root:/bin/sh\n"));
        assert!(passwd(0, 0, Path::new("/tmp")).starts_with("root:x:0:0:root:/tmp:/bin/sh\n"));
        assert_eq!(group(0), "root:x:0:\nnogroup:x:65534:\n");
        assert!(group(5).contains("sandbox:x:5:\n"));
        assert!(hosts("box").contains("127.0.1.1\tbox\n"));
    }

    #[test]
    fn system_users_and_groups() {
        let host = "root:x:0:0:root:/root:/bin/bash\ndaemon:$6$secret:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
                    alice:x:1000:1000:Alice:/home/alice:/bin/bash\nnobody:x:65534:65534::/:/x\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n";
        assert_eq!(
            system_entries(host, 0, 2),
            "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n"
        );
        assert_eq!(system_entries(host, 42, 2).lines().count(), 1);
        let groups = "root:x:0:\ndaemon:x:1:\nsudo:x:27:alice,bob\nusers:x:100:\nalice:x:1000:\n";
        assert_eq!(
            system_entries(groups, 0, 2),
            "daemon:x:1:\nsudo:x:27:\nusers:x:100:\n"
        );
    }

    #[test]
    fn resolv_conf_names_no_server() {
        let f = files(0, 0, Path::new("/root"), "box", None, None);
        let (name, text) = f.last().unwrap();
        assert_eq!(name, Path::new("resolv.conf"));
        let text = String::from_utf8(text.clone()).unwrap();
        assert!(!text.contains("nameserver"), "{text}");
        assert!(text
            .lines()
            .all(|l| l.starts_with('#') || l.starts_with("options ")));
    }

    #[test]
    fn resolv_conf_names_the_stub() {
        let stub = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 53));
        let f = files(0, 0, Path::new("/root"), "box", Some(stub), None);
        let (_, text) = f.last().unwrap();
        let text = String::from_utf8(text.clone()).unwrap();
        let servers: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("nameserver"))
            .collect();
        assert_eq!(servers, ["nameserver 127.0.0.53"], "{text}");
        assert!(text.contains("options ndots:0"), "{text}");
    }

    #[test]
    fn machine_ids_are_fresh_v4_ids() {
        let (a, b) = (machine_id().unwrap(), machine_id().unwrap());
        assert_ne!(a, b);
        let hex = a.strip_suffix('\n').unwrap();
        assert_eq!(hex.len(), 32, "{a:?}");
        assert!(
            hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
            "{a:?}"
        );
        assert_eq!(&hex[12..13], "4", "{a:?}");
        assert!(matches!(&hex[16..17], "8" | "9" | "a" | "b"), "{a:?}");
        assert_eq!(id128_v4_hex([0xff; 16]), "ffffffffffff4fffbfffffffffffffff");
    }

    #[test]
    fn hidden_etc() {
        let dir = std::env::temp_dir().join(format!("etc-test-{}", std::process::id()));
        let etc = dir.as_path();
        fs::create_dir_all(etc.join("ssh")).unwrap();
        for f in [
            "shadow",
            "ssh/ssh_host_rsa_key",
            "ssh/ssh_host_rsa_key.pub",
            "ssh/ssh_config",
            "passwd",
        ] {
            fs::write(etc.join(f), "").unwrap();
        }
        fs::create_dir(etc.join("sudoers.d")).unwrap();
        fs::create_dir_all(etc.join("ssl/private")).unwrap();
        for d in [
            "docker",
            "kubernetes/pki",
            "ceph",
            "mysql",
            "postfix",
            "gitlab-runner",
        ] {
            fs::create_dir_all(etc.join(d)).unwrap();
        }
        for f in [
            "docker/key.json",
            "docker/daemon.json",
            "kubernetes/admin.conf",
            "kubernetes/pki/ca.key",
            "ceph/ceph.conf",
            "ceph/ceph.client.admin.keyring",
            "mysql/my.cnf",
            "mysql/debian.cnf",
            "postfix/main.cf",
            "postfix/sasl_passwd",
            "postfix/sasl_passwd.db",
            "gitlab-runner/config.toml",
        ] {
            fs::write(etc.join(f), "").unwrap();
        }
        let hidden = hidden_entries(etc);
        // In ETC_HIDDEN's order; what shares a directory with them stays.
        let want: Vec<PathBuf> = [
            "shadow",
            "sudoers.d",
            "ssh/ssh_host_rsa_key",
            "ssh/ssh_host_rsa_key.pub",
            "ssl/private",
            "docker/key.json",
            "kubernetes",
            "ceph/ceph.client.admin.keyring",
            "gitlab-runner",
            "mysql/debian.cnf",
            "postfix/sasl_passwd",
            "postfix/sasl_passwd.db",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        fs::remove_dir_all(etc).unwrap();
        assert_eq!(hidden, want);
    }
}
