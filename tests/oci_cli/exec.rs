//! `exec` in a running container (the runtime's `exec` command as
//! containerd's shim drives it): a process in the sandbox with its
//! arguments, environment and working directory; a terminal whose master
//! goes to the console socket; and the container's own user, with other
//! users refused. Part of the `oci_cli` test binary (`tests/oci_cli.rs`
//! owns the bundle and the helpers used here).

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
    let (len, fd) = supervisor::sys::fd::recv_with_fd(conn.as_fd(), &mut name)
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

#[test]
fn exec_runs_as_the_containers_user_and_refuses_others() {
    need_busybox!();
    let t = Tree::new();
    let rt = Runtime::new(t.path());
    bundle(t.path(), |c| set_args(c, "sleep 100"));
    let pid = create(&rt, t.path(), "usr");
    assert!(rt.run(&["start", "usr"]).status.success());
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let own = format!("{uid}:{gid}");
    let id = rt.run(&["exec", "--user", &own, "usr", "id", "-u"]);
    assert_eq!(
        String::from_utf8_lossy(&id.stdout),
        format!("{uid}\n"),
        "{id:?}"
    );
    // Another user: one line saying why, exit 1, nothing run.
    let other = format!("{}", uid.as_raw() + 4242);
    for user in [
        other.as_str(),
        &format!("{uid}:{}", gid.as_raw() + 4242),
        "nobody",
    ] {
        let out = rt.run(&["exec", "--user", user, "usr", "id", "-u"]);
        assert_eq!(out.status.code(), Some(1), "--user {user}: {out:?}");
        assert!(out.stdout.is_empty());
    }
    // process.user in --process is checked the same way.
    let process = t.join("process.json");
    let with_user = |uid: u32| {
        let p =
            json!({"user": {"uid": uid, "gid": gid.as_raw()}, "args": ["id", "-u"], "cwd": "/"});
        fs::write(&process, p.to_string()).unwrap();
        rt.cmd(&["exec", "--process"])
            .arg(&process)
            .arg("usr")
            .output()
            .unwrap()
    };
    let same = with_user(uid.as_raw());
    assert_eq!(
        String::from_utf8_lossy(&same.stdout),
        format!("{uid}\n"),
        "{same:?}"
    );
    assert_eq!(with_user(uid.as_raw() + 4242).status.code(), Some(1));
    assert!(rt.run(&["delete", "--force", "usr"]).status.success());
    assert!(matches!(wait_exit(pid), WaitStatus::Signaled(..)));
}
