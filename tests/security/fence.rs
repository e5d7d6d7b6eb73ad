//! What the guest's Landlock fence (`procfs/src/fence.rs`,
//! `sandbox/src/sys/landlock.rs`) leaves working: the domain grants
//! reading only beneath the view's top-level entries but `/proc`, so
//! every read the sandbox gives of the kernel's procfs must be served,
//! and every native open that reaches a file through /proc (the
//! `/proc/self/fd` links, `/proc/self/exe`, executing a memfd) must land
//! on a file the domain allows. Each program's output is compared with
//! the same program run natively. The refusals themselves are in
//! `tests/procfs/race.rs`.

use crate::common;
use common::*;

/// Reopens through /proc: a child's stdin (a pipe), a file, a pipe of its own;
/// reads /proc/self/exe and per-process files; executes a memfd through
/// /proc/self/fd and a file by descriptor (fexecve); /dev/stdin.
const REOPENS: &str = r#"
import os, subprocess, sys, tempfile
reopen = "import os; print('stdin', os.read(os.open('/proc/self/fd/0', os.O_RDONLY), 64))"
sys.stdout.flush()
subprocess.run([sys.executable, '-c', reopen], input=b'from stdin', check=True)
with tempfile.NamedTemporaryFile('w') as f:
    f.write('file text'); f.flush()
    print('file', open('/proc/self/fd/%d' % f.fileno()).read())
    fd = os.open('/proc/self/fd/%d' % f.fileno(), os.O_RDWR)
    print('file rdwr', os.pread(fd, 4, 0)); os.close(fd)
r, w = os.pipe(); os.write(w, b'piped')
print('pipe', os.read(os.open('/proc/self/fd/%d' % r, os.O_RDONLY), 5))
print('exe', open('/proc/self/exe', 'rb').read(4))
print('name', [l for l in open('/proc/self/status') if l.startswith('Name:')])
print('cmdline', open('/proc/self/cmdline').read().split('\0')[1])
print('maps', open('/proc/self/maps').readline().split()[1])
print('environ', 'FENCE=1' in open('/proc/self/environ').read().split('\0'))
m = os.memfd_create('t')
os.write(m, open('/usr/bin/echo', 'rb').read())
sys.stdout.flush()
subprocess.run(['/proc/self/fd/%d' % m, 'memfd ran'], pass_fds=[m], check=True)
fd = os.open('/usr/bin/echo', os.O_RDONLY)
pid = os.fork()
if pid == 0:
    os.execve(fd, ['echo', 'fexecve ran'], {})
os.waitpid(pid, 0)
print('dev', len(open('/dev/urandom', 'rb').read(8)), open('/dev/null').read() == '')
print('hostname', open('/proc/sys/kernel/hostname').read() != '')
"#;

#[test]
fn reads_through_proc_match_native() {
    let run = Run::new(&["python3", "-c", REOPENS])
        .env("FENCE", "1")
        .sup(&["--env", "FENCE=1"]);
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    assert!(native.stdout.contains("memfd ran"), "{}", native.dump());
}

#[test]
fn reads_through_proc_match_native_unprivileged() {
    let (uid, gid, bin) = match tester_bin() {
        Ok(t) => t,
        Err(e) => skip!("{e}"),
    };
    let run = Run::new(&["python3", "-c", REOPENS])
        .env("FENCE", "1")
        .sup(&["--env", "FENCE=1"])
        .user(uid, gid)
        .bin(bin);
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
}

/// A name a root guest makes at the view's root after the start lies
/// beneath no grant: a plain read there is served (the handler knows
/// what the VFS resolved), and so is an `O_RDWR` open (trapped, and
/// opened by the supervisor as the caller), but an exec, which passes
/// the filter, is refused. What a guest makes beneath an existing
/// directory (`/tmp`) is unaffected.
#[test]
fn names_made_at_the_root_later() {
    if !is_root() {
        skip!("only root may make names at the view's root");
    }
    let _ = guard();
    let script = r#"
import os, shutil, subprocess, sys
if os.path.exists('/tmp/.sbx-tests-host-marker'):
    sys.exit('NOT SANDBOXED: refusing to run')
for d in ('/app', '/tmp/app'):
    os.mkdir(d)
    open(d + '/f', 'w').write('text')
    shutil.copy('/usr/bin/true', d + '/t')
    print(d, 'read', open(d + '/f').read())
    for what, call in (('rdwr', lambda: os.close(os.open(d + '/f', os.O_RDWR))),
                       ('exec', lambda: subprocess.run([d + '/t'], check=True))):
        try:
            call(); print(d, what, 'ok')
        except OSError as e:
            print(d, what, e.strerror)
"#;
    let out = Run::new(&["python3", "-c", script])
        .supervised()
        .ok("supervised");
    let fenced = "/app read text\n/app rdwr ok\n/app exec Permission denied\n";
    let open = "/tmp/app read text\n/tmp/app rdwr ok\n/tmp/app exec ok\n";
    assert_eq!(out.stdout, format!("{fenced}{open}"), "{}", out.dump());
}
