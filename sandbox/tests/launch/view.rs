//! What the guest sees: the view's files and mounts (secrets hidden,
//! host directories absent, /usr read-only unless `writable_system`,
//! writes landing in the layer, `--ro`, `--rw`,
//! `--tmpfs` and the disk quota), its ids, hostname, pid, umask and cwd,
//! no capabilities, only stdio open, and a network namespace of its own;
//! and the view as the root of
//! init's mount namespace. Not the sandbox's lifecycle (`lifecycle.rs`).

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::unistd::{getgid, getuid};
use sandbox::launch::*;

use super::{config, run, serial, TempDir};

/// The script behind `view_contents`: one `name=value` line per check.
const PROBE: &str = r#"
exec >/out/result 2>&1
t() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
for f in shadow gshadow sudoers; do t "etc_$f" "test -e /etc/$f"; done
t etc_ssh_keys 'ls /etc/ssh/ssh_host_* 2>/dev/null | grep -q .'
for d in root home var run srv mnt opt boot; do t "dir_$d" "test -e /$d"; done
t tmp_write 'echo x > /tmp/f && test -s /tmp/f'
t usr_write 'echo x > /usr/launch-test-file'
t usr_bin_write 'echo x > /usr/bin/launch-test-file'
t cwd_write 'touch ./launch-test-file'
t dev_null 'echo x > /dev/null'
t dev_shm 'echo x > /dev/shm/x'
t dev_create 'touch /dev/newfile'
t ro_read 'test -s /data/f'
t ro_write 'touch /data/g'
t rw_write 'echo hi > /rw/file'
t tmpfs_write 'echo hi > /scratch/f'
t quota 'dd if=/dev/zero of=/tmp/big bs=1M count=32'
echo "enospc=$(dd if=/dev/zero of=/tmp/big2 bs=1M count=32 2>&1 | grep -c 'No space left')"
echo "tmpfs_kb=$(df -k /scratch | tail -1 | awk '{print $2}')"
echo "uid=$(id -u)"
echo "gid=$(id -g)"
echo "user=$(id -un)"
echo "hostname=$(cat /proc/sys/kernel/hostname)"
echo "etc_hostname=$(cat /etc/hostname)"
echo "pid=$$"
echo "umask=$(umask)"
echo "cwd=$(pwd)"
echo "sys=$(ls -A /sys /sys/devices /sys/devices/system | tr '\n' ' ')"
echo "root_ls=$(ls / | tr '\n' ' ')"
echo "dev_ls=$(ls /dev | tr '\n' ' ')"
grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -d ' \t' | sed 's/:/=/'
echo "fds=$(ls /proc/self/fd | tr '\n' ' ')"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
echo "netns=$(readlink /proc/self/ns/net)"
echo "net_devs=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
"#;

fn probe(tweak: impl FnOnce(&mut LaunchConfig, &Path)) -> HashMap<String, String> {
    let out = TempDir::new("out");
    fs::set_permissions(&out.0, fs::Permissions::from_mode(0o777)).unwrap();
    let mut cfg = config(&["/bin/sh", "-c", PROBE]);
    cfg.mounts
        .push(vfs::mounts::MountSpec::parse_rw(&format!("{}:/out", out.0.display())).unwrap());
    tweak(&mut cfg, &out.0);
    assert_eq!(run(&cfg), Ok(Outcome::Exited(0)));
    let text = fs::read_to_string(out.0.join("result")).unwrap();
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

pub fn view_contents() {
    let data = TempDir::new("data");
    fs::write(data.0.join("f"), "data").unwrap();
    let rw = TempDir::new("rw");
    let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
    let r = probe(|cfg, _| {
        cfg.hostname = "testbox".into();
        cfg.disk_size = 16 << 20;
        cfg.mounts.push(
            vfs::mounts::MountSpec::parse_ro(&format!("{}:/data", data.0.display())).unwrap(),
        );
        cfg.mounts
            .push(vfs::mounts::MountSpec::parse_rw(&format!("{}:/rw", rw.0.display())).unwrap());
        cfg.mounts
            .push(vfs::mounts::MountSpec::parse_tmpfs("/scratch:1m").unwrap());
    });
    let get = |k: &str| {
        r.get(k)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{k} missing in {r:?}"))
    };
    for k in ["etc_shadow", "etc_gshadow", "etc_sudoers", "etc_ssh_keys"] {
        assert_eq!(get(k), "no", "{k}");
    }
    for d in ["root", "home", "var", "run", "srv", "mnt", "opt", "boot"] {
        assert_eq!(get(&format!("dir_{d}")), "no", "/{d} visible: {r:?}");
    }
    assert_eq!(get("tmp_write"), "yes");
    // /usr is a read-only bind of the host's unless `writable_system`.
    assert_eq!(get("usr_write"), "no");
    assert_eq!(get("usr_bin_write"), "no");
    let w = probe(|cfg, _| cfg.writable_system = true);
    // The top of each overlay is the layer's own directory: a root
    // invoker's guest may write there; an unprivileged invoker's copy of
    // root's /usr loses its write bits (`view::guest_mode`), so its guest
    // meets the host's permissions, as deeper down for everyone.
    let usr = w.get("usr_write").map(String::as_str);
    assert_eq!(usr, Some(if uid == 0 { "yes" } else { "no" }), "{w:?}");
    let usr_bin = w.get("usr_bin_write").map(String::as_str);
    assert_eq!(usr_bin, Some(if uid == 0 { "yes" } else { "no" }), "{w:?}");
    assert!(
        !Path::new("/usr/launch-test-file").exists(),
        "a write reached the host's /usr"
    );
    assert!(
        !Path::new("/usr/bin/launch-test-file").exists(),
        "a write reached the host's /usr/bin"
    );
    assert_eq!(get("cwd_write"), "no");
    assert_eq!(get("dev_null"), "yes");
    assert_eq!(get("dev_shm"), "yes");
    assert_eq!(get("dev_create"), "no");
    assert_eq!(get("ro_read"), "yes");
    assert_eq!(get("ro_write"), "no");
    assert_eq!(get("rw_write"), "yes");
    assert_eq!(fs::read_to_string(rw.0.join("file")).unwrap(), "hi\n");
    assert_eq!(get("tmpfs_write"), "yes");
    assert_eq!(get("tmpfs_kb"), "1024");
    assert_eq!(get("quota"), "no");
    assert_eq!(get("enospc"), "1");
    assert_eq!(get("uid"), uid.to_string());
    assert_eq!(get("gid"), gid.to_string());
    assert_eq!(get("user"), if uid == 0 { "root" } else { "sandbox" });
    assert_eq!(get("hostname"), "testbox");
    assert_eq!(get("etc_hostname"), "testbox");
    assert_eq!(get("pid"), "2");
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(get("umask"), umask);
    assert_eq!(
        get("cwd"),
        std::env::current_dir().unwrap().to_str().unwrap()
    );
    assert_eq!(
        get("sys"),
        "/sys: devices  /sys/devices: system  /sys/devices/system: cpu"
    );
    assert_eq!(get("CapEff"), "0000000000000000");
    assert_eq!(get("CapPrm"), "0000000000000000");
    assert_eq!(get("CapBnd"), "0000000000000000");
    assert_eq!(get("CapAmb"), "0000000000000000");
    assert_eq!(get("NoNewPrivs"), "1");
    assert_eq!(get("Seccomp"), "2");
    // Only stdio (and ls's own directory fd) are open in the guest.
    assert_eq!(get("fds"), "0 1 2 3");
    // init, sh, and the pipeline's processes: nothing of the host.
    assert!(get("procs").parse::<u32>().unwrap() < 10);
    // A network namespace of its own (made beside init's clone and joined
    // before the guest: launch/netns.rs), holding only its loopback.
    let own_net = fs::read_link("/proc/self/ns/net").unwrap();
    assert!(get("netns").starts_with("net:["), "{r:?}");
    assert_ne!(get("netns"), own_net.to_str().unwrap());
    assert_eq!(get("net_devs"), "lo");
    for entry in [
        "null", "zero", "full", "random", "urandom", "pts", "ptmx", "shm", "fd", "stdin", "stdout",
        "stderr",
    ] {
        assert!(
            get("dev_ls").split(' ').any(|e| e == entry),
            "/dev/{entry} missing: {}",
            get("dev_ls")
        );
    }
}

pub fn root_is_the_view() {
    let _g = serial();
    // Start in /tmp: the host cwd (e.g. /work/...) would be bound and show
    // up as a top-level name of its own.
    let mut cfg = config(&["/bin/true"]);
    cfg.workdir = Some("/tmp".into());
    let sandbox = launch(&cfg).unwrap();
    let names: Vec<String> = {
        let dir = fs::read_dir(format!("/proc/{}/root/", sandbox.init_pid)).unwrap();
        let mut v: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    for want in ["dev", "etc", "proc", "sys", "tmp", "usr"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    for absent in ["root", "home", "var", "oldroot", "newroot", "upper", "work"] {
        assert!(
            !names.iter().any(|n| n == absent),
            "{absent} present in {names:?}"
        );
    }
    sandbox.start().unwrap();
    assert_eq!(sandbox.wait(), Ok(Outcome::Exited(0)));
}

/// Init's mount table as the kernel has it (not as the guest is served
/// it): by the time `launch` returns, the old root its last pivot left
/// stacked on the view's (the layer, the host's root beneath it) is
/// detached, so `/` is mounted once and nothing lies under the layer's
/// own directories.
pub fn the_old_root_is_detached_at_launch() {
    let _g = serial();
    let mut cfg = config(&["/bin/true"]);
    cfg.workdir = Some("/tmp".into());
    let sandbox = launch(&cfg).unwrap();
    let table = fs::read_to_string(format!("/proc/{}/mountinfo", sandbox.init_pid)).unwrap();
    let points: Vec<&str> = table.lines().filter_map(|l| l.split(' ').nth(4)).collect();
    assert_eq!(
        points.iter().filter(|p| **p == "/").count(),
        1,
        "one mount at /:\n{table}"
    );
    for layer in ["/oldroot", "/newroot", "/lower", "/covers", "/proc-ro"] {
        assert!(
            !points.iter().any(|p| p.starts_with(layer)),
            "{layer} in init's mount table:\n{table}"
        );
    }
    sandbox.start().unwrap();
    assert_eq!(sandbox.wait(), Ok(Outcome::Exited(0)));
}
