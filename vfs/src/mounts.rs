//! Mount specifications of the sandbox's view: what the user asked for
//! with `--ro`, `--rw`, `--tmpfs`, `--mask` and `--rootfs`, checked and
//! normalised, and the fixed parts of the default view (which host
//! directories show, which /etc entries are hidden).
//!
//! Owns: parsing and validating mount specs, masked paths, the rootfs
//! path and sizes ("64m", "1.5G").
//! Does not own: doing the mounts (the supervisor's `launch` module) or
//! resolving guest paths later (the rest of this crate).
//!
//! Checks made here, at parse time: the guest path is absolute, is
//! normalised lexically (`.` and `//` dropped, `..` folded, never above
//! `/`), is not `/` and not under /proc, /dev or /sys (the sandbox owns
//! those). A relative host path is made absolute against the current
//! directory (canonicalised when it exists). Whether the host path exists
//! is checked at launch, which names the spec in its error.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Host directories of the default view, each shown through an overlay
/// whose writes land in the sandbox's layer (or recreated as a symlink
/// when the host has a symlink there, as merged-/usr systems do).
pub const HOST_DIRS: &[&str] = &["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64"];

/// Entries of the host's /etc that the guest must not see (relative to
/// /etc; a trailing `*` matches any suffix). passwd and group are
/// rewritten for the sandbox, so their backups go too. The private keys
/// and secrets of the host's services go as well: root's sandbox maps its
/// root to the host's root, the owner of these 0600 and 0700 entries,
/// and until 2026-12-01 its guest read the host's TLS keys
/// (`ssl/private`) and the docker daemon's key (`docker/key.json`).
/// Since 2026-12-04 the list also names the credential stores of common
/// cluster, CI, database, mail, directory, VPN, Wi-Fi and configuration
/// management services (a Kubernetes node's `admin.conf` and CA key, a
/// CI runner's tokens, MySQL's maintenance password...). It is a list:
/// a root-only file it does not name stays readable to root's guest
/// (docs/launch-and-view.md, "What the guest shares with the host"). Looking the
/// list up costs one read of /etc's top level, whatever its length
/// (`launch/etc.rs`).
pub const ETC_HIDDEN: &[&str] = &[
    // Accounts and privilege.
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "passwd-",
    "group-",
    "sudoers",
    "sudoers.d",
    "security/opasswd",
    // Host keys and TLS.
    "ssh/ssh_host_*",
    "dropbear",
    "ssl/private",
    "pki/tls/private",
    "pki/CA/private",
    "cups/ssl",
    // Containers and clusters.
    "docker/key.json",
    "docker/daemon-key.json",
    "containers/auth.json",
    "kubernetes",
    "rancher",
    "ceph/ceph.client.*",
    "vault.d",
    "consul.d",
    "nomad.d",
    // CI, configuration management.
    "gitlab",
    "gitlab-runner",
    "salt/pki",
    "puppetlabs/puppet/ssl",
    "puppet/ssl",
    "chef",
    // Networks: VPN, Wi-Fi, dial-up, IPsec.
    "wireguard",
    "openvpn",
    "NetworkManager/system-connections",
    "netplan",
    "wpa_supplicant",
    "ipsec.secrets",
    "ipsec.d/private",
    "swanctl/private",
    "ppp/chap-secrets",
    "ppp/pap-secrets",
    // Directories and Kerberos.
    "krb5.keytab",
    "krb5kdc",
    "sssd",
    "nslcd.conf",
    "ldap.secret",
    "pam_ldap.secret",
    "libnss-ldap.secret",
    // Databases, mail, file services.
    "mysql/debian.cnf",
    "pgbouncer/userlist.txt",
    "postfix/sasl_passwd*",
    "exim4/passwd.client",
    "msmtprc",
    "ssmtp",
    "fetchmailrc",
    "rsyncd.secrets",
    "snmp/snmpd.conf",
    // Certificates and disk keys.
    "letsencrypt",
    "libvirt/secrets",
    "cryptsetup-keys.d",
    "credstore",
    "credstore.encrypted",
];

/// Guest directories the sandbox provides itself; user mounts may not
/// cover them.
pub const RESERVED: &[&str] = &["/proc", "/dev", "/sys"];

/// Size of a `--tmpfs` mount when the spec names none.
pub const DEFAULT_TMPFS_SIZE: u64 = 64 << 20;

/// What kind of mount a spec asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountKind {
    /// `--ro HOST:GUEST`: a read-only bind mount of a host path.
    ReadOnly,
    /// `--rw HOST:GUEST`: a writable bind mount; writes reach the host.
    ReadWrite,
    /// `--tmpfs GUEST[:SIZE]`: an empty scratch filesystem of this size.
    Tmpfs { size: u64 },
}

/// One checked mount request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountSpec {
    pub kind: MountKind,
    /// The host path (absolute); `None` for tmpfs.
    pub host: Option<PathBuf>,
    /// Where the guest sees it (absolute, normalised).
    pub guest: PathBuf,
    /// The spec as the user wrote it, for error messages.
    pub spec: String,
}

/// A bad mount spec or size; the message names the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl MountSpec {
    /// `--ro HOST:GUEST` or `--ro PATH` (same path on both sides).
    pub fn parse_ro(s: &str) -> Result<MountSpec, SpecError> {
        parse_bind(s, MountKind::ReadOnly)
    }

    /// `--rw HOST:GUEST` or `--rw PATH`.
    pub fn parse_rw(s: &str) -> Result<MountSpec, SpecError> {
        parse_bind(s, MountKind::ReadWrite)
    }

    /// `--tmpfs GUEST[:SIZE]`, size defaulting to 64 MiB.
    pub fn parse_tmpfs(s: &str) -> Result<MountSpec, SpecError> {
        let bad = |why: String| SpecError(format!("--tmpfs {s}: {why}"));
        let (guest, size) = match s.rsplit_once(':') {
            Some((g, sz)) => (g, parse_size(sz).map_err(|e| bad(e.0))?),
            None => (s, DEFAULT_TMPFS_SIZE),
        };
        let guest = guest_path(guest).map_err(bad)?;
        Ok(MountSpec {
            kind: MountKind::Tmpfs { size },
            host: None,
            guest,
            spec: s.to_string(),
        })
    }

    /// The flag this spec came from: `--ro`, `--rw` or `--tmpfs`.
    pub fn flag(&self) -> &'static str {
        match self.kind {
            MountKind::ReadOnly => "--ro",
            MountKind::ReadWrite => "--rw",
            MountKind::Tmpfs { .. } => "--tmpfs",
        }
    }

    /// `--ro /a:/b` as the user wrote it, to prefix error messages.
    pub fn label(&self) -> String {
        format!("{} {}", self.flag(), self.spec)
    }
}

fn parse_bind(s: &str, kind: MountKind) -> Result<MountSpec, SpecError> {
    let flag = if kind == MountKind::ReadOnly {
        "--ro"
    } else {
        "--rw"
    };
    let bad = |why: String| SpecError(format!("{flag} {s}: {why}"));
    let (host, guest) = match s.split_once(':') {
        Some((h, g)) => (h, Some(g)),
        None => (s, None),
    };
    if host.is_empty() {
        return Err(bad("empty host path (expected HOST:GUEST)".into()));
    }
    let host = host_path(host).map_err(bad)?;
    // `--ro PATH`: the guest sees it where the host has it.
    let guest = match guest {
        Some(g) => guest_path(g),
        None => guest_path(&host.to_string_lossy()),
    }
    .map_err(bad)?;
    Ok(MountSpec {
        kind,
        host: Some(host),
        guest,
        spec: s.to_string(),
    })
}

/// `--mask PATH`: a guest path to hide (absolute, normalised, not `/`).
/// Unlike mount targets it may lie under /proc, /dev or /sys: hiding
/// something there is what masks are for (runc masks /proc/kcore).
pub fn parse_mask(s: &str) -> Result<PathBuf, SpecError> {
    parse_view_path("--mask", s)
}

/// `--remount-ro PATH`: a guest path to make read-only, with all below it
/// (absolute, normalised, not `/`; like masks, it may lie under /proc).
pub fn parse_remount_ro(s: &str) -> Result<PathBuf, SpecError> {
    parse_view_path("--remount-ro", s)
}

/// A path of the finished view that `flag` changes: absolute, normalised,
/// not `/`.
fn parse_view_path(flag: &str, s: &str) -> Result<PathBuf, SpecError> {
    let bad = |why: String| SpecError(format!("{flag} {s}: {why}"));
    if s.contains('\0') {
        return Err(bad("path contains a NUL byte".into()));
    }
    let p = Path::new(s);
    if !p.is_absolute() {
        return Err(bad("must be an absolute path".into()));
    }
    let n = normalise(p).ok_or_else(|| bad("climbs above /".into()))?;
    if n == Path::new("/") {
        return Err(bad("cannot apply to the guest's /".into()));
    }
    Ok(n)
}

/// `--rootfs DIR`: made absolute like a bind source; whether it exists
/// and is a directory is checked at launch.
pub fn parse_rootfs(s: &str) -> Result<PathBuf, SpecError> {
    if s.is_empty() {
        return Err(SpecError("--rootfs: empty path".into()));
    }
    if s.contains('\0') {
        return Err(SpecError(format!("--rootfs {s}: path contains a NUL byte")));
    }
    host_path(s).map_err(|e| SpecError(format!("--rootfs {s}: {e}")))
}

/// Makes a host path absolute: relative ones against the current
/// directory, canonicalised when they exist.
fn host_path(s: &str) -> Result<PathBuf, String> {
    let p = Path::new(s);
    if p.is_absolute() {
        return normalise(p).ok_or_else(|| format!("host path {s} climbs above /"));
    }
    if let Ok(real) = std::fs::canonicalize(p) {
        return Ok(real);
    }
    let cwd = std::env::current_dir().map_err(|e| {
        format!("host path {s} is relative and the current directory is unknown: {e}")
    })?;
    normalise(&cwd.join(p)).ok_or_else(|| format!("host path {s} climbs above /"))
}

/// Checks and normalises a guest path.
pub fn guest_path(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        return Err("empty guest path".into());
    }
    if s.contains('\0') {
        return Err("guest path contains a NUL byte".into());
    }
    let p = Path::new(s);
    if !p.is_absolute() {
        return Err(format!("guest path {s} must be absolute"));
    }
    let n = normalise(p).ok_or_else(|| format!("guest path {s} climbs above /"))?;
    if n == Path::new("/") {
        return Err("cannot mount over the guest's /".into());
    }
    if let Some(r) = RESERVED.iter().find(|r| n.starts_with(r)) {
        return Err(format!(
            "guest path {} is inside {r}, which the sandbox provides",
            n.display()
        ));
    }
    Ok(n)
}

/// Lexical normalisation of an absolute path: drops `.` and empty
/// components, folds `..`; `None` when `..` would climb above `/`.
pub fn normalise(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Parses a size: a number (decimal fractions allowed) and an optional
/// binary unit: `512`, `64k`, `64m`, `1g`, `1.5G`, `64MiB`, `2TB`.
pub fn parse_size(s: &str) -> Result<u64, SpecError> {
    let bad = |why: &str| SpecError(format!("size {s:?}: {why}"));
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad("unknown unit (use k, m, g or t)")),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err(bad("expected a number, as in 64m or 1.5g"));
    }
    if frac.contains('.') || frac.len() > 9 {
        return Err(bad("malformed number"));
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad("number too large"))?
    };
    let frac_den = 10u128.pow(frac.len() as u32);
    let frac_num: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad("malformed number"))?
    };
    let bytes = (whole << shift) + ((frac_num << shift) / frac_den);
    if bytes == 0 {
        return Err(bad("must be greater than zero"));
    }
    u64::try_from(bytes).map_err(|_| bad("too large"))
}

#[cfg(test)]
mod tests;
