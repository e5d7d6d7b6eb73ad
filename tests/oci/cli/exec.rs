//! `exec` in a running container (the runtime's `exec` command as
//! containerd's shim drives it): a process in the sandbox with its
//! arguments, environment and working directory; a terminal whose master
//! goes to the console socket; and other users (`--user`,
//! `process.user`) with their own file access, ids the sandbox does not
//! map refused. Part of the `oci` test binary's `cli` module
//! (`tests/oci/cli.rs` owns the bundle and the helpers used here).

use super::*;

#[test]
fn exec_runs_a_process_in_the_running_sandbox() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| {
        set_args(c, "sleep 100");
        c["process"]["env"] = json!(["PATH=/bin", "FROM_CONFIG=yes"]);
    });
    let pid = create(&rt, t.path(), "ex");
    assert!(rt.run(&["start", "ex"]).status.success());
    // Whoever can connect runs code in the container: root only.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(rt.root.join("ex/exec.sock"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Same sandbox: the container's command is visible in its /proc; the config's env.
    let script = "cat; echo \"env=$FROM_CONFIG extra=$EXTRA\"; cat /proc/*/cmdline | tr '\\0' ' ' | grep -c 'sleep 100'; exit 4";
    let mut child = rt
        .cmd(&["exec", "--env", "EXTRA=1", "ex", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"in\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "in\nenv=yes extra=1\n1\n"
    );
    assert_eq!(out.status.code(), Some(4));
    // A missing program fails the exec command itself.
    let missing = rt.run(&["exec", "ex", "no-such-program"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("No such file"));
    // --detach: the waiter in --pid-file carries the status.
    let pid_file = t.join("exec.pid");
    let detached = rt
        .cmd(&["exec", "--detach", "--pid-file"])
        .arg(&pid_file)
        .args(["ex", "sh", "-c", "exit 6"])
        .status()
        .unwrap();
    assert!(detached.success());
    let waiter: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(matches!(wait_exit(waiter), WaitStatus::Exited(_, 6)));
    assert!(rt.run(&["delete", "--force", "ex"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
    // Not running: exec is refused.
    assert!(!rt.run(&["exec", "ex", "true"]).status.success());
}

/// Accepts one connection on `listener` and receives the terminal master
/// the runtime sends there (SCM_RIGHTS, as runc's console socket
/// protocol); fails if `sender` ends first or nothing comes within 30 s.
fn receive_master(
    listener: &std::os::unix::net::UnixListener,
    sender: &mut std::process::Child,
) -> (String, std::os::fd::OwnedFd) {
    use std::os::fd::AsFd;
    listener.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + Duration::from_secs(30);
    let conn = loop {
        match listener.accept() {
            Ok((conn, _)) => break conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = sender.try_wait() {
                    panic!("the runtime ended ({status}) without sending a terminal");
                }
                assert!(Instant::now() < deadline, "no terminal within 30 s");
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept on the console socket: {e}"),
        }
    };
    conn.set_nonblocking(false).expect("blocking");
    let mut name = [0u8; 256];
    let (len, fd) = sandbox::sys::fd::recv_with_fd(conn.as_fd(), &mut name)
        .expect("recvmsg on the console socket");
    let master = fd.expect("a descriptor with the console message");
    (String::from_utf8_lossy(&name[..len]).into_owned(), master)
}

#[test]
fn exec_with_a_terminal_sends_its_master_to_the_console_socket() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| set_args(c, "sleep 100"));
    let pid = create(&rt, t.path(), "tty");
    assert!(rt.run(&["start", "tty"]).status.success());
    let sock_path = t.join("console.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock_path).expect("bind");
    let script = "tty; read x; echo got=$x; exit 5";
    let mut exec = rt
        .cmd(&["exec", "--tty", "--console-socket"])
        .arg(&sock_path)
        .args(["tty", "sh", "-c", script])
        .stdout(Stdio::piped())
        .spawn()
        .expect("exec --tty");
    let (name, master) = receive_master(&listener, &mut exec);
    assert!(name.starts_with("/dev/pts/"), "console name {name:?}");
    let mut master = fs::File::from(master);
    use std::io::{Read, Write};
    master.write_all(b"typed\n").expect("write to the master");
    // Read what the terminal shows until the process is gone (EIO).
    let reader = thread::spawn(move || {
        let mut shown = Vec::new();
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            shown.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&shown).into_owned()
    });
    let out = exec.wait_with_output().expect("exec output");
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(out.stdout.is_empty(), "the terminal, not stdout: {out:?}");
    let shown = reader.join().expect("reader");
    // The process's stdin and stdout are the terminal, which it knows by
    // the name the console socket was told; the input was echoed.
    let lines: Vec<&str> = shown.split("\r\n").collect();
    assert!(lines.contains(&name.as_str()), "{shown:?}");
    assert!(lines.contains(&"typed"), "echoed input: {shown:?}");
    assert!(lines.contains(&"got=typed"), "{shown:?}");
    // Without a console socket a terminal cannot be given.
    let no_socket = rt.run(&["exec", "--tty", "tty", "true"]);
    assert_eq!(no_socket.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&no_socket.stderr).contains("--console-socket"));
    assert!(rt.run(&["delete", "--force", "tty"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}

/// A host directory for /data, writable by all: `secret` (root's, 0600)
/// and `rootdir` (root's, 0755); and a world-writable /tmp in the rootfs.
fn users_bundle(t: &Tree, script: &str, user: serde_json::Value) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shared = t.join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    fs::write(shared.join("secret"), "root only\n").unwrap();
    fs::set_permissions(shared.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::create_dir(shared.join("rootdir")).unwrap();
    fs::set_permissions(shared.join("rootdir"), fs::Permissions::from_mode(0o755)).unwrap();
    bundle(t.path(), |c| {
        set_args(c, script);
        c["process"]["user"] = user;
        // Writable, as the engines pass it (`spec`'s default, runc's, is
        // a read-only root, which refuses the writes to /tmp).
        c["root"]["readonly"] = false.into();
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.push(json!({"destination": "/data", "type": "bind",
            "source": shared, "options": ["rbind", "rw"]}));
    });
    fs::set_permissions(t.join("rootfs/tmp"), fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

/// What a process of each user does with root's files: uid 1000 cannot
/// read root's 0600 file nor create in root's 0755 directory (EACCES), and what it
/// creates is its own (inside, and on the host through the bind).
const FILE_ACCESS: &str = "cat /data/secret 2>&1; \
    touch /data/rootdir/x 2>&1 && echo created; \
    echo hi > /data/mine-$(id -u) && stat -c %u:%g /data/mine-$(id -u); \
    touch /tmp/t-$(id -u) && stat -c %u:%g /tmp/t-$(id -u)";

/// What [`FILE_ACCESS`] says for uid 1000 on root's files.
const DENIED: &str = "cat: can't open '/data/secret': Permission denied\n\
    touch: /data/rootdir/x: Permission denied\n";

#[test]
fn exec_runs_as_other_users_with_their_file_access() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let shared = users_bundle(&t, "sleep 100", json!({"uid": 0, "gid": 0}));
    let pid = create(&rt, t.path(), "usr");
    assert!(rt.run(&["start", "usr"]).status.success());
    let exec = |user: &str, script: &str| {
        let out = rt.run(&["exec", "--user", user, "usr", "sh", "-c", script]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (text, out)
    };
    let (id, out) = exec("1000:1000", "id -u; id -g; id -G");
    assert_eq!(id, "1000\n1000\n1000\n", "{out:?}");
    let (seen, out) = exec("1000:1000", FILE_ACCESS);
    assert_eq!(seen, format!("{DENIED}1000:1000\n1000:1000\n"), "{out:?}");
    use std::os::unix::fs::MetadataExt;
    let mine = fs::metadata(shared.join("mine-1000")).unwrap();
    assert_eq!((mine.uid(), mine.gid()), (1000, 1000));
    assert!(!shared.join("rootdir/x").exists());
    // The container's own user (root) may.
    let (seen, out) = exec("0:0", FILE_ACCESS);
    assert_eq!(seen, "root only\ncreated\n0:0\n0:0\n", "{out:?}");
    // process.user with additionalGids (--process), as runc sets them.
    let process = t.join("process.json");
    let p = json!({"user": {"uid": 1000, "gid": 100, "additionalGids": [10, 20]},
        "args": ["id", "-G"], "cwd": "/"});
    fs::write(&process, p.to_string()).unwrap();
    let groups = rt
        .cmd(&["exec", "--process"])
        .arg(&process)
        .arg("usr")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&groups.stdout),
        "100 10 20\n",
        "{groups:?}"
    );
    // Ids the sandbox does not map, or not numeric: one line, exit 1, nothing run.
    for user in ["70000", "1000:70000", "nobody"] {
        let out = rt.run(&["exec", "--user", user, "usr", "id", "-u"]);
        assert_eq!(out.status.code(), Some(1), "--user {user}: {out:?}");
        assert!(out.stdout.is_empty());
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
    assert!(rt.run(&["delete", "--force", "usr"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}

#[test]
fn the_containers_command_runs_as_process_user() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    let script = format!("id -u; id -G; {FILE_ACCESS}");
    let user = json!({"uid": 1000, "gid": 1000, "additionalGids": [27]});
    let shared = users_bundle(&t, &script, user);
    let pid = create(&rt, t.path(), "cmd");
    assert!(rt.run(&["start", "cmd"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Exited(_, 0)));
    assert_eq!(
        fs::read_to_string(t.join("stdout")).unwrap(),
        format!("1000\n1000 27\n{DENIED}1000:1000\n1000:1000\n"),
        "stderr: {}",
        fs::read_to_string(t.join("stderr")).unwrap()
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::metadata(shared.join("mine-1000")).unwrap().uid(), 1000);
    assert!(rt.run(&["delete", "cmd"]).status.success());
}

/// A directory root resolved for one of its calls is not lent to another
/// user: root makes a symlink in `/tmp/priv/pub` (0777, under root's 0700
/// `/tmp/priv`), which keeps that directory resolved; uid 1000 then makes
/// a symlink and removes a directory there by the same spellings, and is
/// refused for want of search permission on `/tmp/priv` (EACCES), as
/// natively.
#[test]
fn a_directory_resolved_for_one_user_is_not_lent_to_another() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    users_bundle(&t, "sleep 100", json!({"uid": 0, "gid": 0}));
    let pid = create(&rt, t.path(), "lend");
    assert!(rt.run(&["start", "lend"]).status.success());
    let exec = |user: &str, script: &str| {
        let out = rt.run(&["exec", "--user", user, "lend", "sh", "-c", script]);
        (String::from_utf8_lossy(&out.stdout).into_owned(), out)
    };
    let setup = "mkdir -p /tmp/priv/pub/d1 /tmp/priv/pub/d2 && chmod 777 /tmp/priv/pub && \
        chmod 700 /tmp/priv && ln -s x /tmp/priv/pub/l && echo ok";
    let (seen, out) = exec("0:0", setup);
    assert_eq!(seen, "ok\n", "{out:?}");
    for i in 1..=2 {
        let probe = format!(
            "ln -s y /tmp/priv/pub/m{i} && echo linked; rmdir /tmp/priv/pub/d{i} && echo removed; \
             echo end"
        );
        let (seen, out) = exec("1000:1000", &probe);
        assert_eq!(seen, "end\n", "{out:?}");
        let errors = String::from_utf8_lossy(&out.stderr);
        assert_eq!(errors.matches("Permission denied").count(), 2, "{out:?}");
    }
    // Root's own calls still work there.
    let (seen, out) = exec(
        "0:0",
        "rmdir /tmp/priv/pub/d1 && ln -s y /tmp/priv/pub/m && echo ok",
    );
    assert_eq!(seen, "ok\n", "{out:?}");
    assert!(rt.run(&["delete", "--force", "lend"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}
