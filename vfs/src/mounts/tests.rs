//! The mount specs' parsing against what each flag accepts and refuses:
//! sizes, --ro/--rw/--tmpfs specs, masks, --remount-ro, --rootfs, and the
//! lexical normalisation of guest paths.

use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("512").unwrap(), 512);
    assert_eq!(parse_size("64k").unwrap(), 64 << 10);
    assert_eq!(parse_size("64m").unwrap(), 64 << 20);
    assert_eq!(parse_size("64M").unwrap(), 64 << 20);
    assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
    assert_eq!(parse_size("64MB").unwrap(), 64 << 20);
    assert_eq!(parse_size("1g").unwrap(), 1 << 30);
    assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
    assert_eq!(parse_size("0.5k").unwrap(), 512);
    assert_eq!(parse_size("2t").unwrap(), 2 << 40);
    for bad in [
        "",
        "m",
        "0",
        "0k",
        "-1",
        "1x",
        "1.2.3",
        "64 m",
        "99999999999999999999999t",
        "1..5g",
    ] {
        let e = parse_size(bad).unwrap_err();
        assert!(e.0.contains("size"), "{bad}: {e}");
    }
}

#[test]
fn ro_and_rw() {
    let m = MountSpec::parse_ro("/srv/data:/data").unwrap();
    assert_eq!(m.kind, MountKind::ReadOnly);
    assert_eq!(m.host.as_deref(), Some(Path::new("/srv/data")));
    assert_eq!(m.guest, Path::new("/data"));
    assert_eq!(m.label(), "--ro /srv/data:/data");

    let m = MountSpec::parse_rw("/srv/data").unwrap();
    assert_eq!(m.kind, MountKind::ReadWrite);
    assert_eq!(m.guest, Path::new("/srv/data"));

    let m = MountSpec::parse_ro("/a/./b//c/../d:/x/./y/").unwrap();
    assert_eq!(m.host.as_deref(), Some(Path::new("/a/b/d")));
    assert_eq!(m.guest, Path::new("/x/y"));
}

#[test]
fn relative_host_paths_become_absolute() {
    let cwd = std::env::current_dir().unwrap();
    let m = MountSpec::parse_ro("no-such-dir-xyz:/data").unwrap();
    assert_eq!(m.host.unwrap(), cwd.join("no-such-dir-xyz"));
    let m = MountSpec::parse_ro(".:/data").unwrap();
    assert_eq!(m.host.unwrap(), std::fs::canonicalize(&cwd).unwrap());
    // `--ro data` mounts it at the same (absolute) place.
    let m = MountSpec::parse_rw("no-such-dir-xyz").unwrap();
    assert_eq!(m.guest, cwd.join("no-such-dir-xyz"));
}

#[test]
fn bad_guest_paths() {
    for (spec, why) in [
        ("/a:data", "must be absolute"),
        ("/a:/", "guest's /"),
        ("/a:/x/../..", "climbs above"),
        ("/a:/proc", "/proc"),
        ("/a:/dev/shm", "/dev"),
        ("/a:/sys/x", "/sys"),
        ("/a:", "empty guest path"),
        (":/a", "empty host path"),
        ("/", "guest's /"),
    ] {
        let e = MountSpec::parse_ro(spec).unwrap_err();
        assert!(e.0.starts_with(&format!("--ro {spec}: ")), "{e}");
        assert!(e.0.contains(why), "{spec}: {e}");
    }
    // /procfoo is not /proc.
    assert!(MountSpec::parse_ro("/a:/procfoo").is_ok());
}

#[test]
fn tmpfs() {
    let m = MountSpec::parse_tmpfs("/scratch").unwrap();
    assert_eq!(
        m.kind,
        MountKind::Tmpfs {
            size: DEFAULT_TMPFS_SIZE
        }
    );
    assert_eq!(m.host, None);
    let m = MountSpec::parse_tmpfs("/scratch:1.5g").unwrap();
    assert_eq!(m.kind, MountKind::Tmpfs { size: 3 << 29 });
    let e = MountSpec::parse_tmpfs("/scratch:lots").unwrap_err();
    assert!(e.0.starts_with("--tmpfs /scratch:lots: size"), "{e}");
    assert!(MountSpec::parse_tmpfs("scratch").is_err());
    assert!(MountSpec::parse_tmpfs("/dev/x:1m").is_err());
}

#[test]
fn masks() {
    assert_eq!(parse_mask("/etc//x/../y").unwrap(), Path::new("/etc/y"));
    assert_eq!(parse_mask("/proc/kcore").unwrap(), Path::new("/proc/kcore"));
    for (bad, why) in [
        ("rel", "absolute"),
        ("/", "guest's /"),
        ("/a/../..", "climbs"),
        ("", "absolute"),
    ] {
        let e = parse_mask(bad).unwrap_err();
        assert!(
            e.0.starts_with("--mask ") && e.0.contains(why),
            "{bad}: {e}"
        );
        let e = parse_remount_ro(bad).unwrap_err();
        assert!(
            e.0.starts_with("--remount-ro ") && e.0.contains(why),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        parse_remount_ro("/data/./in/").unwrap(),
        Path::new("/data/in")
    );
}

#[test]
fn rootfs_paths() {
    assert_eq!(parse_rootfs("/srv/img/").unwrap(), Path::new("/srv/img"));
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        parse_rootfs("no-such-img").unwrap(),
        cwd.join("no-such-img")
    );
    assert!(parse_rootfs("").is_err());
}

#[test]
fn normalise_paths() {
    assert_eq!(normalise(Path::new("/a/../b")).unwrap(), Path::new("/b"));
    assert_eq!(normalise(Path::new("/..")), None);
    assert_eq!(normalise(Path::new("/")).unwrap(), Path::new("/"));
}
