//! `exec`: a new process in a running container. The request (args,
//! env, cwd, and this command's own stdin, stdout and stderr) goes over
//! the container's exec socket to a helper that the sandbox's init forks
//! (`launch/exec_request.rs`), so the process runs under the same filter,
//! view and limits as the container's command. The process's status
//! comes back on the connection: the exit code of this command or, with
//! `--detach`, of the waiter it forks, whose pid goes to `--pid-file`
//! (the engine's shim, a subreaper, reaps it).
//!
//! With a terminal (`--tty` or `process.terminal`), this command opens
//! a pseudo-terminal in the sandbox's devpts (`console.rs`), sends its
//! master to `--console-socket`, as `create` does, and its slave to the
//! helper as the process's stdio and controlling terminal.
//!
//! The process runs as `process.user` (`--process`) or `--user UID[:GID]`
//! (the gid and `additionalGids` default to the bundle's, as in runc);
//! which users are possible is `user.rs`'s.
//!
//! Owns building and sending the request and waiting for its answers.

use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::config::Process;
use nix::errno::Errno;

use super::bundle::Bundle;
use super::cli::ExecArgs;
use super::exec_socket::connect_to;
use super::state::{container_dir, Record, Status};
use sandbox::launch::host_stdio::shielded_stdio;
use sandbox::launch::GuestUser;
use sandbox::sys::fd::{recv_with_fd, send_with_fd};
use sandbox::sys::process::{fork_single_threaded, Forked};

/// What the helper is asked to run.
struct Request {
    args: Vec<String>,
    env: Vec<String>,
    cwd: String,
    /// With a terminal: where its master goes.
    console: Option<PathBuf>,
    /// `None`: the runtime's own (rootless).
    user: Option<GuestUser>,
}

/// Runs `exec`; the exit code.
pub fn exec(root: &Path, a: &ExecArgs) -> Result<i32, String> {
    let record = Record::require(root, &a.id)?;
    if record.status() != Status::Running {
        return Err(format!(
            "cannot exec in a container that is {}",
            record.status().as_str()
        ));
    }
    let request = build_request(&record, a)?;
    let conn = connect_to(&container_dir(root, &a.id)?.join("exec.sock"))?;
    let terminal = match request.console {
        Some(_) => Some(super::console::open_in_sandbox(
            record.pid,
            record.init_pid,
        )?),
        None => None,
    };
    send_request(&conn, &request, terminal.as_ref().map(|t| t.slave.as_fd()))?;
    if let (Some(t), Some(path)) = (&terminal, &request.console) {
        sandbox::tty::send_master(path, t.name.as_bytes(), t.master.as_fd())?;
    }
    drop(terminal);
    wait_started(&conn, &request)?;
    if !a.detach {
        if let Some(path) = &a.pid_file {
            write_pid(path, std::process::id() as i32)?;
        }
        return wait_done(&conn);
    }
    match fork_single_threaded() {
        Ok(Forked::Child) => {
            let _ = nix::unistd::setsid();
            let code = wait_done(&conn).unwrap_or(255);
            std::process::exit(code)
        }
        Ok(Forked::Parent(pid)) => {
            if let Some(path) = &a.pid_file {
                write_pid(path, pid.as_raw())?;
            }
            Ok(0)
        }
        Err(e) => Err(format!("forking the exec waiter: {}", e.desc())),
    }
}

/// Waits for the helper's `P`; an error says why the process did not start.
fn wait_started(conn: &OwnedFd, request: &Request) -> Result<(), String> {
    match recv_answer(conn)? {
        Answer::Started => Ok(()),
        Answer::Failed(e) => {
            let name = request.args.first().cloned().unwrap_or_default();
            Err(format!("exec {name}: {}", e.desc()))
        }
        Answer::Done(_) => Err("the process ended before it started".into()),
    }
}

/// The console socket, when the process is to have a terminal.
fn console_for(terminal: bool, a: &ExecArgs) -> Result<Option<PathBuf>, String> {
    match (terminal, &a.console_socket) {
        (false, _) => Ok(None),
        (true, Some(path)) => Ok(Some(path.clone())),
        (true, None) => Err("exec with a terminal needs --console-socket".into()),
    }
}

/// `--user UID[:GID]` (numeric, as runc takes it).
fn parse_user(spec: &str) -> Result<(u32, Option<u32>), String> {
    let bad = || format!("--user {spec:?}: expected UID[:GID]");
    let (uid, gid) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    let uid = uid.parse().map_err(|_| bad())?;
    let gid = gid.map(|g| g.parse().map_err(|_| bad())).transpose()?;
    Ok((uid, gid))
}

fn build_request(record: &Record, a: &ExecArgs) -> Result<Request, String> {
    if let Some(path) = &a.process {
        let text = fs::read(path).map_err(|e| format!("--process {}: {e}", path.display()))?;
        let p: Process = serde_json::from_slice(&text)
            .map_err(|e| format!("--process {}: {e}", path.display()))?;
        let user = super::user::from_spec(p.user())?;
        return Ok(Request {
            user,
            args: p.args().clone().unwrap_or_default(),
            env: p.env().clone().unwrap_or_default(),
            cwd: p.cwd().to_string_lossy().into_owned(),
            console: console_for(p.terminal().unwrap_or(false) || a.tty, a)?,
        });
    }
    if a.command.is_empty() {
        return Err("exec: no command given".into());
    }
    let bundle = Bundle::load(&record.bundle)?;
    let spec_process = bundle.spec.process().clone();
    let spec_user = spec_process
        .as_ref()
        .map(|p| p.user().clone())
        .unwrap_or_default();
    let user = match &a.user {
        Some(flag) => {
            let (uid, gid) = parse_user(flag)?;
            super::user::resolve(GuestUser {
                uid,
                gid: gid.unwrap_or(spec_user.gid()),
                groups: spec_user.additional_gids().clone().unwrap_or_default(),
            })?
        }
        None => super::user::from_spec(&spec_user)?,
    };
    let mut env = spec_process
        .as_ref()
        .and_then(|p| p.env().clone())
        .unwrap_or_default();
    env.extend(a.env.iter().cloned());
    let cwd = a.cwd.clone().unwrap_or_else(|| {
        spec_process
            .map(|p| p.cwd().to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into())
    });
    Ok(Request {
        args: a.command.clone(),
        env,
        cwd,
        console: console_for(a.tty, a)?,
        user,
    })
}

/// Sends our stdio (or, with a terminal, its `slave` as all three) and the request.
fn send_request(conn: &OwnedFd, r: &Request, slave: Option<BorrowedFd>) -> Result<(), String> {
    let err = |e: Errno| format!("sending the exec request: {}", e.desc());
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    // A host device goes through a read-only mount (`launch::host_stdio`).
    let shields = shielded_stdio();
    let ours = [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()];
    let stdio = match slave {
        Some(slave) => [slave; 3],
        None => std::array::from_fn(|i| shields[i].as_ref().map_or(ours[i], |s| s.as_fd())),
    };
    for (tag, fd) in [b"0", b"1", b"2"].into_iter().zip(stdio) {
        send_with_fd(conn.as_fd(), tag, Some(fd)).map_err(err)?;
    }
    let tty = slave.is_some();
    let json = serde_json::json!({
        "args": r.args, "env": r.env, "cwd": r.cwd, "tty": tty, "user": r.user,
    });
    let mut msg = vec![b'R'];
    msg.extend_from_slice(json.to_string().as_bytes());
    send_with_fd(conn.as_fd(), &msg, None).map_err(err)
}

enum Answer {
    Started,
    Failed(Errno),
    /// The raw wait status.
    Done(i32),
}

fn recv_answer(conn: &OwnedFd) -> Result<Answer, String> {
    let mut buf = [0u8; 16];
    let (n, _) = recv_with_fd(conn.as_fd(), &mut buf)
        .map_err(|e| format!("waiting for the exec'd process: {}", e.desc()))?;
    let value = |b: &[u8]| i32::from_le_bytes([b[1], b[2], b[3], b[4]]);
    match (buf[0], n) {
        (b'P', 5) => Ok(Answer::Started),
        (b'E', 5) => Ok(Answer::Failed(Errno::from_raw(value(&buf)))),
        (b'X', 5) => Ok(Answer::Done(value(&buf))),
        _ => Err("the container ended (no answer from its exec helper)".into()),
    }
}

/// Waits for the process's end: its exit code, or 128+N.
fn wait_done(conn: &OwnedFd) -> Result<i32, String> {
    loop {
        if let Answer::Done(status) = recv_answer(conn)? {
            return Ok(exit_code(status));
        }
    }
}

/// A raw wait status as a shell's exit code.
pub fn exit_code(status: i32) -> i32 {
    match status & 0x7f {
        0 => (status >> 8) & 0xff,
        sig => 128 + sig,
    }
}

fn write_pid(path: &Path, pid: i32) -> Result<(), String> {
    fs::write(path, pid.to_string()).map_err(|e| format!("--pid-file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_numeric_uid_and_gid() {
        assert_eq!(parse_user("0"), Ok((0, None)));
        assert_eq!(parse_user("1000:100"), Ok((1000, Some(100))));
        for bad in ["", "root", "1:", ":1", "1:x", "-1"] {
            assert!(parse_user(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wait_statuses_become_exit_codes() {
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(9), 137);
        assert_eq!(exit_code(15 | 0x80), 143);
    }
}
