//! `exec`: a new process in a running container. The request (args,
//! env, cwd, and this command's own stdin, stdout and stderr) goes over
//! the container's exec socket to a helper that the sandbox's init forks
//! (`launch/exec_request.rs`), so the process runs under the same filter,
//! view and limits as the container's command. The process's status
//! comes back on the connection: the exit code of this command or, with
//! `--detach`, of the waiter it forks, whose pid goes to `--pid-file`
//! (the engine's shim, a subreaper, reaps it).
//!
//! Owns building and sending the request and waiting for its answers.
//! Not yet: `--tty`, users other than the container's.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use oci_spec::runtime::Process;

use super::bundle::Bundle;
use super::cli::ExecArgs;
use super::exec_socket::connect_to;
use super::state::{container_dir, Record, Status};
use crate::sys::fd::{recv_with_fd, send_with_fd};
use crate::sys::process::{fork_single_threaded, Forked};

/// What the helper is asked to run.
struct Request {
    args: Vec<String>,
    env: Vec<String>,
    cwd: String,
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
    send_request(&conn, &request)?;
    match recv_answer(&conn)? {
        Answer::Started => {}
        Answer::Failed(e) => {
            let name = request.args.first().cloned().unwrap_or_default();
            return Err(format!("exec {name}: {}", e.desc()));
        }
        Answer::Done(_) => return Err("the process ended before it started".into()),
    }
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

fn build_request(record: &Record, a: &ExecArgs) -> Result<Request, String> {
    if let Some(path) = &a.process {
        let text = fs::read(path).map_err(|e| format!("--process {}: {e}", path.display()))?;
        let p: Process = serde_json::from_slice(&text)
            .map_err(|e| format!("--process {}: {e}", path.display()))?;
        if p.terminal().unwrap_or(false) || a.tty {
            return Err("exec with a terminal is not supported yet".into());
        }
        let uid = nix::unistd::getuid().as_raw();
        if p.user().uid() != uid {
            return Err(format!(
                "process.user.uid {}: the sandbox runs as the runtime's own user ({uid})",
                p.user().uid()
            ));
        }
        return Ok(Request {
            args: p.args().clone().unwrap_or_default(),
            env: p.env().clone().unwrap_or_default(),
            cwd: p.cwd().to_string_lossy().into_owned(),
        });
    }
    if a.tty {
        return Err("exec with a terminal is not supported yet".into());
    }
    if a.command.is_empty() {
        return Err("exec: no command given".into());
    }
    let bundle = Bundle::load(&record.bundle)?;
    let spec_process = bundle.spec.process().clone();
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
    })
}

fn send_request(conn: &OwnedFd, r: &Request) -> Result<(), String> {
    let err = |e: Errno| format!("sending the exec request: {}", e.desc());
    for (tag, fd) in [
        (b"0", std::io::stdin().as_fd()),
        (b"1", std::io::stdout().as_fd()),
        (b"2", std::io::stderr().as_fd()),
    ] {
        send_with_fd(conn.as_fd(), tag, Some(fd)).map_err(err)?;
    }
    let json = serde_json::json!({"args": r.args, "env": r.env, "cwd": r.cwd});
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
    fn wait_statuses_become_exit_codes() {
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(9), 137);
        assert_eq!(exit_code(15 | 0x80), 143);
    }
}
