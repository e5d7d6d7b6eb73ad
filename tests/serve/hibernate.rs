//! Hibernate and wake (`POST /v1/sessions/{id}/hibernate`, `/wake`): a
//! Python process that holds variables and a file open in the volume is
//! saved, its sandbox ended and its memory given back, and on wake (asked,
//! implied by the next exec, after `idle_hibernate_s`, after a daemon
//! restart) it answers where it stopped, as the same program answers
//! natively; a damaged or cut state is refused and the session stays
//! hibernated; a session busy with a command is 409, one holding a pipe
//! 422, one whose state the disk cannot take 507 and keeps running.

use std::process::Command;
use std::time::Duration;

use crate::common::engine::poll_until;
use crate::sessions_daemon::Daemon;

/// A server in the session: runs the Python code it finds in DIR/req and
/// writes `repr(result)` to DIR/resp; keeps a log open in DIR. It polls
/// with `time.sleep`, which waits for an absolute `CLOCK_MONOTONIC`
/// deadline: it answers after a wake only because the woken sandbox's
/// clocks go on where the old one's stopped (docs/sessions.md).
const SERVER: &str = r#"
import os, sys, time
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
g = {"os": os}
log = open(os.path.join(d, "log"), "a", buffering=1)
while True:
    try:
        with open(os.path.join(d, "req")) as f:
            code = f.read()
    except FileNotFoundError:
        time.sleep(0.002)
        continue
    os.unlink(os.path.join(d, "req"))
    try:
        exec(code, g)
        ans = repr(g.get("result"))
    except Exception as e:
        ans = "error: %r" % e
    log.write(code + "\n")
    with open(os.path.join(d, "resp.tmp"), "w") as f:
        f.write(ans)
    os.rename(os.path.join(d, "resp.tmp"), os.path.join(d, "resp"))
"#;

/// Asks the server in the session (by an exec in it) to run `code`.
const ASK: &str = "mkdir -p /data/io && cd /data/io && printf '%s' \"$1\" > req.tmp && mv req.tmp req && i=0; while [ ! -e resp ]; do i=$((i+1)); [ $i -lt 3000 ] || { echo no answer >&2; exit 1; }; sleep 0.01; done; cat resp; rm resp";

fn start_server(d: &Daemon) -> String {
    let id = d.create(r#"{"volume": {"name": "hib", "path": "/data"}}"#);
    let a = d.request(
        "PUT",
        &format!("/v1/sessions/{id}/files/srv.py"),
        SERVER.as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let v = d.exec(
        &id,
        &[
            "sh",
            "-c",
            "python3 /data/srv.py /data/io </dev/null >/dev/null 2>&1 &",
        ],
    );
    assert_eq!(v["exit_code"], 0, "{v}");
    id
}

fn ask(d: &Daemon, id: &str, code: &str) -> String {
    let v = d.exec(id, &["sh", "-c", ASK, "ask", code]);
    assert_eq!(v["exit_code"], 0, "asking {code:?}: {v}");
    v["stdout"].as_str().expect("text").to_string()
}

/// `rel` in the session's directory beneath the daemon's data.
fn session_path(d: &Daemon, id: &str, rel: &str) -> std::path::PathBuf {
    d.data_dir.join("sessions").join(id).join(rel)
}

/// Writes `good` with byte `at` xored with `bit` as `image`: the wake is
/// refused (422, the BLAKE3 check) with the session hibernated and none
/// of its processes running.
fn wake_refuses_a_flipped_bit(
    d: &Daemon,
    id: &str,
    image: &std::path::Path,
    good: &[u8],
    at: usize,
    bit: u8,
) {
    let mut altered = good.to_vec();
    altered[at] ^= bit;
    std::fs::write(image, &altered).unwrap();
    let (status, v) = post(d, id, "wake");
    assert_eq!(status, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("BLAKE3"), "{v}");
    assert_eq!(state(d, id)["state"], "hibernated");
    assert_eq!(processes(d, id), 0, "restored half-way");
}

fn post(d: &Daemon, id: &str, what: &str) -> (u16, serde_json::Value) {
    d.json("POST", &format!("/v1/sessions/{id}/{what}"), "")
}

fn state(d: &Daemon, id: &str) -> serde_json::Value {
    let (status, v) = d.json("GET", &format!("/v1/sessions/{id}"), "");
    assert_eq!(status, 200, "{v}");
    v
}

/// The session's processes (besides its init and keeper) as the daemon
/// sees them on the host.
fn processes(d: &Daemon, id: &str) -> usize {
    state(d, id)["processes"].as_array().map_or(0, Vec::len)
}

fn native_python(code: &str) -> String {
    let out = Command::new("python3")
        .args(["-c", &format!("{code}\nprint(repr(result), end='')")])
        .output()
        .expect("python3 natively");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("text")
}

#[test]
fn a_hibernated_python_process_wakes_with_its_variables() {
    let d = Daemon::start();
    let id = start_server(&d);
    let setup = "data = bytearray(range(256)) * (64 * 1024); counter = 41; result = len(data)";
    assert_eq!(ask(&d, &id, setup), "16777216");
    let before = state(&d, &id)["memory_bytes"].as_u64().unwrap();
    assert!(before > 16 << 20, "{before}");

    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "hibernated", "{v}");
    assert_eq!(v["hibernated"]["processes"], 1, "{v}");
    assert!(
        v["hibernated"]["memory_bytes"].as_u64().unwrap() >= 16 << 20,
        "{v}"
    );
    assert_eq!(v["processes"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(processes(&d, &id), 0, "the process still runs");
    assert!(session_path(&d, &id, "hibernate/manifest.json").exists());

    let (status, v) = post(&d, &id, "wake");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "running", "{v}");
    let code = "counter += 1; result = (counter, sum(data[:100000]), len(data), data[-1])";
    let native = native_python(&format!(
        "data = bytearray(range(256)) * (64 * 1024); counter = 41\n{code}"
    ));
    assert_eq!(ask(&d, &id, code), native);
    assert_eq!(processes(&d, &id), 1);

    // Hibernated again, the next exec wakes it; its log file went on.
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    assert_eq!(ask(&d, &id, "counter += 1; result = counter"), "43");
    let log = std::fs::read_to_string(d.data_dir.join("volumes/hib/io/log")).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(!session_path(&d, &id, "hibernate").exists());
}

/// A woken program's monotonic clock goes on where it stopped, never
/// back (the new sandbox's time namespace would otherwise start it at the
/// new sandbox's age), and its boot-time clock counts at least as much as
/// monotonic since: the same as the same code natively.
#[test]
fn a_woken_programs_clocks_go_on_where_they_stopped() {
    let d = Daemon::start();
    let id = start_server(&d);
    // The old sandbox is then older than the new one will be at the check.
    // Boot time read before monotonic here and after it at the check, so
    // its difference holds monotonic's.
    let set = "import select, time; select.select([], [], [], 3); b0 = time.clock_gettime(time.CLOCK_BOOTTIME); t0 = time.monotonic(); result = 'set'";
    let check = "m = time.monotonic(); b = time.clock_gettime(time.CLOCK_BOOTTIME); result = (m >= t0, b - b0 >= m - t0)";
    assert_eq!(ask(&d, &id, set), "'set'");
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    let native = native_python(&format!("{set}\n{check}"));
    assert_eq!(native, "(True, True)");
    assert_eq!(ask(&d, &id, check), native);
}

#[test]
fn a_damaged_or_cut_state_is_refused_and_the_session_stays_hibernated() {
    let d = Daemon::start();
    let id = start_server(&d);
    assert_eq!(ask(&d, &id, "x = 'kept'; result = x"), "'kept'");
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    let image = session_path(&d, &id, "hibernate/0.img");
    let good = std::fs::read(&image).unwrap();

    wake_refuses_a_flipped_bit(&d, &id, &image, &good, good.len() / 2, 1);

    std::fs::write(&image, &good[..good.len() - 4096]).unwrap();
    let body = serde_json::json!({"command": ["true"]}).to_string();
    let (status, v) = d.json("POST", &format!("/v1/sessions/{id}/exec"), &body);
    assert_eq!(status, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("truncated"), "{v}");
    assert_eq!(state(&d, &id)["state"], "hibernated");

    std::fs::write(&image, &good).unwrap();
    assert_eq!(ask(&d, &id, "result = x"), "'kept'");
}

/// A process holding 64 MiB of random bytes (runs of many pages, copied
/// straight from the mapped image) wakes with every byte as it was: the
/// digest it computes after the wake is the one from before. A changed byte in the
/// image's last page (the end of its memory) is refused like any other,
/// with the session hibernated and nothing of it running.
#[test]
fn a_large_memory_wakes_byte_for_byte_and_its_last_page_is_checked() {
    let d = Daemon::start();
    let id = start_server(&d);
    let fill = "import hashlib; big = bytearray(os.urandom(64 << 20)); result = hashlib.sha256(big).hexdigest()";
    let before = ask(&d, &id, fill);
    assert_eq!(before.len(), 2 + 64, "{before}");
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    assert!(
        v["hibernated"]["memory_bytes"].as_u64().unwrap() >= 64 << 20,
        "{v}"
    );
    let image = session_path(&d, &id, "hibernate/0.img");
    let good = std::fs::read(&image).unwrap();
    wake_refuses_a_flipped_bit(&d, &id, &image, &good, good.len() - 100, 0x80);

    std::fs::write(&image, &good).unwrap();
    let after = ask(&d, &id, "result = hashlib.sha256(big).hexdigest()");
    assert_eq!(after, before);
    assert_eq!(ask(&d, &id, "result = len(big)"), (64u64 << 20).to_string());
}

#[test]
fn busy_sessions_are_409_and_pipes_422_and_both_keep_running() {
    let d = Daemon::start();
    let id = d.create("{}");
    let socket = d.socket.clone();
    let busy_id = id.clone();
    let busy = std::thread::spawn(move || {
        let body = serde_json::json!({"command": ["sleep", "3"]}).to_string();
        crate::sessions_daemon::request(
            &socket,
            "POST",
            &format!("/v1/sessions/{busy_id}/exec"),
            &[],
            body.as_bytes(),
        )
        .status
    });
    assert!(poll_until(Duration::from_secs(20), || {
        state(&d, &id)["processes"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["command"] == "sleep 3"))
    }));
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains("running"), "{v}");
    assert_eq!(busy.join().unwrap(), 200);

    let v = d.exec(&id, &["sh", "-c", "sleep 600 | cat >/dev/null &"]);
    assert_eq!(v["exit_code"], 0, "{v}");
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 422, "{v}");
    let error = v["error"].as_str().unwrap().to_string();
    assert!(error.contains("pipe"), "{v}");
    let v = state(&d, &id);
    assert_eq!(v["state"], "running", "{v}");
    let commands: Vec<_> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["command"].clone())
        .collect();
    assert!(commands.contains(&"sleep 600".into()), "{v}");
    // The refusal names the processes as the session lists them (pid
    // inside, and name), not by host pids the user cannot see.
    let sleeper = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["command"] == "sleep 600")
        .map(|p| p["pid"].clone())
        .unwrap();
    assert!(error.contains(&format!("{sleeper} (sleep)")), "{error} {v}");
    assert_eq!(d.exec(&id, &["echo", "alive"])["stdout"], "alive\n");
}

#[test]
fn hibernated_sessions_wake_after_a_daemon_restart_and_after_idle() {
    let mut d = Daemon::start();
    let id = start_server(&d);
    assert_eq!(ask(&d, &id, "y = [1, 2, 3]; result = y"), "[1, 2, 3]");
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 200, "{v}");
    d.kill();
    d.launch();
    assert_eq!(state(&d, &id)["state"], "hibernated");
    assert_eq!(ask(&d, &id, "y.append(4); result = y"), "[1, 2, 3, 4]");

    let idle = d.create(r#"{"idle_hibernate_s": 1}"#);
    let v = d.exec(
        &idle,
        &["sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 &"],
    );
    assert_eq!(v["exit_code"], 0, "{v}");
    assert!(
        poll_until(Duration::from_secs(30), || state(&d, &idle)["state"]
            == "hibernated"),
        "{}",
        state(&d, &idle)
    );
    // The keeper and the sleeper, which came back (an exec wakes it).
    let v = d.exec(
        &idle,
        &["sh", "-c", "cat /proc/[0-9]*/comm | grep -c '^sleep$'"],
    );
    assert_eq!(v["stdout"], "2\n", "{v}");
}

#[test]
fn a_disk_too_full_for_the_state_is_507_and_the_session_runs_on() {
    let mut d = Daemon::start();
    // The data directory on a small tmpfs (the tests run as root). The
    // daemon is stopped, not killed, first: its pools and sessions end
    // before the tmpfs hides the directory they use.
    let data = d.data_dir.clone();
    d.stop();
    std::fs::create_dir_all(&data).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"])
        .arg(&data)
        .status()
        .expect("mount");
    assert!(mounted.success(), "mounting a tmpfs (root needed)");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(data.clone());
    d.launch();
    let id = start_server(&d);
    assert_eq!(
        ask(
            &d,
            &id,
            "data = bytearray(range(256)) * (128 * 1024); result = len(data)"
        ),
        "33554432"
    );
    let (status, v) = post(&d, &id, "hibernate");
    assert_eq!(status, 507, "{v}");
    assert!(v["error"].as_str().unwrap().contains("No space"), "{v}");
    assert_eq!(state(&d, &id)["state"], "running");
    assert_eq!(ask(&d, &id, "result = data[-1]"), "255");
    assert!(!data
        .join("sessions")
        .join(&id)
        .join("hibernate.partial")
        .exists());
    drop(d);
}
