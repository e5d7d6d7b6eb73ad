//! The pool's daemon itself: flags that would shape its sandboxes apart
//! from it, a socket no pool serves and a pool that cannot start are
//! refused with one line and 125; SIGTERM tears its idle sandboxes down,
//! and so does the daemon's death (none keeps the listening socket it
//! was lent); an unprivileged pool serves its own user and no other,
//! whoever accepts the connection; idle sandboxes add nothing to the
//! load average.
//!
//! Each test starts its own daemon (socket in a temp dir) and stops it by
//! its pid.

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use common::pool::Pool;
use common::*;

/// Only the pool's own flags shape its sandboxes.
#[test]
fn shaping_flags_with_pool_are_refused() {
    let pool = Pool::start(&[]);
    for flags in [
        &["--memory", "1g"][..],
        &["--ro", "/usr:/x"],
        &["--workdir", "/tmp"],
        &["--allow-net", "127.0.0.1:80"],
        &["--writable-system"],
    ] {
        let out = Run::new(&["/bin/true"])
            .sup(&pool.flag())
            .sup(flags)
            .supervised();
        refused(&out, "cannot go with --pool");
    }
}

/// Exit 125 with one line on stderr, saying `why`.
fn refused(out: &Out, why: &str) {
    assert_eq!(out.code, Some(125), "{}", out.dump());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(out.stderr.contains(why), "{}", out.dump());
}

#[test]
fn a_socket_no_pool_serves_is_one_line_and_125() {
    let dir = Tree::new();
    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    let file = dir.file("plain", "");
    for path in [dir.join("missing.sock"), stale, file] {
        let out = Run::new(&["/bin/true"])
            .sup(&["--pool".to_string(), path.display().to_string()])
            .supervised();
        refused(&out, "no pool answers there");
    }
}

#[test]
fn a_pool_that_cannot_start_says_why_in_one_line() {
    let pool = Pool::start(&[]);
    let run = Run::new(&["/bin/true"]);
    let sock = pool.socket.display().to_string();
    let dir = Tree::new();
    let fresh = |name: &str| dir.join(name).display().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["--socket".into(), sock],
        vec![
            "--socket".into(),
            fresh("x"),
            "--ro".into(),
            "/no/such/dir:/x".into(),
        ],
        vec!["--socket".into(), fresh("y"), "--".into(), "true".into()],
        vec!["--socket".into(), fresh("z"), "--size".into(), "0".into()],
        vec!["--socket".into(), fresh("w"), "--report".into(), fresh("r")],
        // --warm names paths in the sandbox's view.
        vec!["--socket".into(), fresh("u"), "--warm".into(), "usr".into()],
        // Every sandbox would bind the same host port.
        vec![
            "--socket".into(),
            fresh("v"),
            "--publish".into(),
            "127.0.0.1:1:80".into(),
        ],
    ];
    for args in cases {
        let out = run.supervisor_raw(&[&["pool".to_string()], &args[..]].concat());
        refused(&out, "supervisor: ");
    }
    assert_eq!(
        listing(dir.path()),
        Vec::<String>::new(),
        "sockets left behind"
    );
}

/// Pids whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if procfs::StatLine::parse(&stat).and_then(|l| l.number::<u32>(4)) == Some(pid) {
            found.extend(entry.file_name().to_string_lossy().parse::<u32>());
        }
    }
    found
}

/// The daemon's children that hold the pool's listening socket (the
/// one lent it: at most one at a time).
fn holders_of_the_socket(pool: &Pool) -> Vec<u32> {
    let unix = std::fs::read_to_string("/proc/net/unix").expect("/proc/net/unix");
    // Bound under a temporary name beside it, then renamed: the kernel
    // keeps the name it was bound at. Flags 00010000: listening.
    let path = pool.socket.display().to_string();
    let Some(inode) = unix.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() == 8 && f[3] == "00010000" && f[7].starts_with(&path)).then(|| f[6].to_string())
    }) else {
        return Vec::new();
    };
    let link = format!("socket:[{inode}]");
    let holds = |pid: &u32| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == &*link))
            })
            .unwrap_or(false)
    };
    // A child between the daemon's fork and its exec holds a copy too
    // (close-on-exec): not a sandbox yet.
    let sandbox = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).nth(1) == Some(b"pool-sandbox"))
    };
    children_of(pool.pid())
        .into_iter()
        .filter(|pid| sandbox(pid) && holds(pid))
        .collect()
}

/// The sandbox lent the listening socket, once one is (it accepts the
/// next client itself).
fn armed(pool: &Pool) -> u32 {
    let until = Instant::now() + TIMEOUT;
    loop {
        let holders = holders_of_the_socket(pool);
        assert!(holders.len() <= 1, "lent to more than one: {holders:?}");
        if let [pid] = holders[..] {
            return pid;
        }
        assert!(Instant::now() < until, "no sandbox was lent the socket");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Serves one run, then waits until the pool has `n` sandboxes set up
/// again (its children), and returns their pids.
fn served_one_and_set_up(pool: &Pool, n: usize) -> Vec<u32> {
    Run::new(&["/bin/true"])
        .sup(&pool.flag())
        .supervised()
        .ok("one run");
    let until = Instant::now() + TIMEOUT;
    let mut sandboxes = children_of(pool.pid());
    while sandboxes.len() < n {
        assert!(Instant::now() < until, "no {n} sandboxes: {sandboxes:?}");
        std::thread::sleep(Duration::from_millis(20));
        sandboxes = children_of(pool.pid());
    }
    sandboxes
}

#[test]
fn sigterm_tears_the_idle_sandboxes_down() {
    let mut pool = Pool::start(&["--size", "3"]);
    let mode = std::fs::symlink_metadata(&pool.socket).expect("socket");
    assert!(mode.file_type().is_socket());
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    // Every sandbox ready: a client was served, and three are set up.
    let sandboxes = served_one_and_set_up(&pool, 3);
    let status = pool.stop();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!pool.socket.exists(), "the socket is left");
    for pid in sandboxes {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "sandbox {pid} outlived the pool"
        );
    }
}

#[test]
fn an_unprivileged_pool_serves_its_user() {
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start_as(
        &["--memory", "256m", "--pids", "32"],
        Some((uid, gid)),
        &tbin,
    );
    let run = Run::sh("id -u; id -un; exit 4", &[])
        .user(uid, gid)
        .bin(&tbin);
    let pooled = run.clone().sup(&pool.flag()).supervised();
    assert_eq!(pooled.code, Some(4), "{}", pooled.dump());
    assert!(
        pooled.stdout.starts_with(&format!("{uid}\n")),
        "{}",
        pooled.dump()
    );
    let cold = run.sup(&["--memory", "256m", "--pids", "32"]).supervised();
    // (A warning about limits enforced as rlimits is the pool's, at set-up.)
    assert_eq!((pooled.code, &pooled.stdout), (cold.code, &cold.stdout));
    // Root may use it too; the socket's mode keeps every other user out.
    let as_root = Run::new(&["/usr/bin/id", "-u"])
        .sup(&pool.flag())
        .supervised();
    assert_eq!(as_root.ok("root's run").stdout, format!("{uid}\n"));
}

/// Lets every user search the pool socket's directory (the socket's own
/// mode still decides who may connect).
fn searchable_dir(pool: &Pool) {
    std::fs::set_permissions(
        pool.socket.parent().expect("dir"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
}

#[test]
fn another_user_cannot_use_the_pool() {
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start(&[]);
    // The directory may be searched; the socket (0600, root's) not used.
    searchable_dir(&pool);
    let out = Run::new(&["/bin/true"])
        .user(uid, gid)
        .bin(&tbin)
        .sup(&pool.flag())
        .supervised();
    refused(&out, "Permission denied");
}

/// Sandboxes that outlived the daemon would go on accepting clients from
/// the listening socket it lent them: its death ends the idle ones.
#[test]
fn a_killed_daemon_leaves_no_sandbox_serving() {
    let mut pool = Pool::start(&["--size", "2"]);
    let sandboxes = served_one_and_set_up(&pool, 2);
    let until = Instant::now() + TIMEOUT;
    // One of them holds the listening socket, blocked in its wait.
    let lent = armed(&pool);
    assert!(sandboxes.contains(&lent), "{lent} is not {sandboxes:?}");
    let daemon = nix::unistd::Pid::from_raw(pool.pid() as i32);
    nix::sys::signal::kill(daemon, nix::sys::signal::Signal::SIGKILL).expect("kill");
    let _ = pool.stop();
    let gone = |pid: &u32| !Path::new(&format!("/proc/{pid}")).exists();
    while !sandboxes.iter().all(gone) {
        assert!(
            Instant::now() < until,
            "sandboxes outlived the daemon: {sandboxes:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = Run::new(&["/bin/true"]).sup(&pool.flag()).supervised();
    refused(&out, "no pool answers there");
}

/// A root pool whose socket someone made reachable still serves only
/// root and its own uid: the sandbox that accepts checks the peer as the
/// daemon does, closes the connection unanswered, and serves the next.
#[test]
fn a_peer_the_pool_does_not_serve_is_closed_unanswered() {
    let (uid, gid, tbin) = match tester_bin() {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    let pool = Pool::start(&[]);
    searchable_dir(&pool);
    std::fs::set_permissions(&pool.socket, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let run = Run::new(&["/usr/bin/id", "-u"]);
    let native = run.clone().native();
    for _ in 0..2 {
        // The sandbox accepts (not the daemon, which would check too).
        armed(&pool);
        let theirs = run
            .clone()
            .user(uid, gid)
            .bin(&tbin)
            .sup(&pool.flag())
            .supervised();
        // Closed unread: before or after the client sent its request.
        assert_eq!(theirs.code, Some(125), "{}", theirs.dump());
        assert_eq!(theirs.stderr.lines().count(), 1, "{}", theirs.dump());
        assert!(theirs.stdout.is_empty(), "{}", theirs.dump());
        assert!(
            theirs.stderr.starts_with("supervisor: "),
            "{}",
            theirs.dump()
        );
        let ours = run.clone().sup(&pool.flag()).supervised();
        assert_eq!(
            (ours.code, &ours.stdout),
            (native.code, &native.stdout),
            "{}",
            ours.dump()
        );
    }
}

/// The sandbox that accepted its client closes the listening socket
/// before it reads the request: it can never take a second one, and the
/// next sandbox is lent the socket while the first one's command runs.
#[test]
fn the_sandbox_that_took_a_client_holds_the_socket_no_more() {
    let pool = Pool::start(&["--size", "1"]);
    let first = armed(&pool);
    let (mut client, _out) = pool.client_running(&[], "echo up; sleep 30");
    let next = armed(&pool);
    assert_ne!(next, first, "the serving sandbox was lent the socket again");
    assert!(
        !holders_of_the_socket(&pool).contains(&first),
        "the serving sandbox still holds the socket"
    );
    let ours = Run::new(&["/usr/bin/id", "-u"])
        .sup(&pool.flag())
        .supervised();
    let native = Run::new(&["/usr/bin/id", "-u"]).native();
    assert_eq!((ours.code, &ours.stdout), (native.code, &native.stdout));
    let _ = client.kill();
    let _ = client.wait();
}

/// A pool's idle sandboxes sleep as any waiting process does: none of
/// their processes waits in the kernel's uninterruptible (killable)
/// sleep, which the load average counts as running (a vfork parent's
/// wait, as init's was while its main process waited for a command:
/// a pool of 16 showed a load of 16 with no CPU used).
#[test]
fn idle_sandboxes_add_nothing_to_the_load_average() {
    let pool = Pool::start(&["--size", "2"]);
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let tree = descendants(pool.pid());
        // The daemon, each sandbox's process, its init, its main process.
        let deep = tree.iter().filter(|(_, depth)| *depth >= 3).count();
        let waiting: Vec<String> = tree
            .iter()
            .flat_map(|(pid, _)| thread_states(*pid))
            .filter(|(_, state)| *state == 'D')
            .map(|(tid, _)| {
                format!(
                    "{tid} {}",
                    std::fs::read_to_string(format!("/proc/{tid}/wchan")).unwrap_or_default()
                )
            })
            .collect();
        if deep >= 2 && waiting.is_empty() {
            return;
        }
        let last = format!("{deep} main processes; in D state: {waiting:?}");
        assert!(
            Instant::now() < until,
            "the idle pool never settled: {last}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every process beneath `root`, with its depth below it (children 1).
fn descendants(root: u32) -> Vec<(u32, usize)> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut found = vec![(root, 0)];
    let mut i = 0;
    while i < found.len() {
        let (pid, depth) = found[i];
        found.extend(
            parents
                .iter()
                .filter(|p| p.1 == pid)
                .map(|p| (p.0, depth + 1)),
        );
        i += 1;
    }
    found.into_iter().skip(1).collect()
}

/// The parent pid in `/proc/PID/stat` (after the name's closing paren).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Each thread of `pid` with its state letter.
fn thread_states(pid: u32) -> Vec<(u32, char)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|tid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            Some((tid, stat.rsplit_once(')')?.1.trim_start().chars().next()?))
        })
        .collect()
}
