//! Fast reads (`sandbox/src/launch/fast_reads.rs`, the preload
//! `sandbox/guest/fast_reads.c`): a fenced guest's plain read opens
//! pass the filter, marked by its preload, and whatever meets procfs or a
//! cover is served as before. The open family's answers are compared with
//! the same program run natively; the report shows which opens were
//! trapped; the sandbox's own /proc files are still its own however a
//! path reaches them.

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// A directory tree for `tests/c/fast_reads.c` (and the static programs of
/// `static_reads.rs`): `a`, `sub/b`.
pub(crate) fn tree(tag: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("fast-reads-{tag}-"))
        .tempdir()
        .expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("a"), "text of a\n").expect("write");
    std::fs::write(dir.path().join("sub/b"), "text of b\n").expect("write");
    let open = std::fs::Permissions::from_mode(0o777);
    std::fs::set_permissions(dir.path(), open).expect("chmod");
    dir
}

fn open_family(user: Option<(u32, u32, PathBuf)>) {
    let dir = tree("family");
    let prog = c_prog("fast_reads");
    let mut run = Run::new(&[prog.as_os_str(), dir.path().as_os_str()])
        .sup(&c_mounts())
        .rw(dir.path());
    if let Some((uid, gid, bin)) = user {
        run = run.user(uid, gid).bin(bin);
    }
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    for line in [
        "openat64 rel: \"text of b\"",
        "bad pointer = -1 EFAULT",
        "mode 644",
        "fopen re: cloexec 1",
        "fopen rb: \"text of a\"",
        "fopen bad pointer = -1 EFAULT",
        "fopen after w: \"written\"",
    ] {
        assert!(native.stdout.contains(line), "{line}: {}", native.dump());
    }
}

#[test]
fn the_open_family_matches_native() {
    open_family(None);
}

#[test]
fn the_open_family_matches_native_unprivileged() {
    match tester_bin() {
        Ok(t) => open_family(Some(t)),
        Err(e) => skip!("{e}"),
    }
}

/// The fortified open of a creating call without a mode ends the program
/// with SIGABRT, as the C library's does.
#[test]
fn a_fortified_open_without_a_mode_aborts() {
    let dir = tree("abort");
    let prog = c_prog("fast_reads");
    let run = Run::new(&[prog.as_os_str(), "--abort".as_ref(), dir.path().as_os_str()])
        .sup(&c_mounts())
        .rw(dir.path());
    let native = run.native();
    let supervised = run.supervised();
    assert_eq!(native.signal, Some(libc::SIGABRT), "{}", native.dump());
    assert_eq!(
        supervised.code,
        Some(128 + libc::SIGABRT),
        "{}",
        supervised.dump()
    );
    assert!(
        supervised.stderr.contains("invalid open call"),
        "{}",
        supervised.dump()
    );
    assert!(!supervised.stdout.contains("not reached"));
}

/// Reads 200 files of the layer, the way Python's imports and sqlite's
/// directory syncs open theirs.
const READ_MANY: &str = r#"
import os
os.makedirs('/tmp/many', exist_ok=True)
for i in range(200):
    with open(f'/tmp/many/{i}', 'w') as f:
        f.write(str(i))
total = sum(int(open(f'/tmp/many/{i}').read()) for i in range(200))
print(total)
"#;

fn serviced_opens(extra: &[&str]) -> (Out, u64) {
    served_opens(&["/usr/bin/python3", "-c", READ_MANY], extra)
}

/// The reads pass the filter (the report counts only the loader's own
/// opens, which the preload cannot mark); under `--trace`, which shows
/// every open, the guest has no preload and each one is trapped.
#[test]
fn plain_reads_pass_the_filter() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let (out, fast) = serviced_opens(&[]);
    assert_eq!(out.stdout, "19900\n");
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let flag = format!("--trace={}", trace.path().display());
    let (out, traced) = serviced_opens(&[&flag]);
    assert_eq!(out.stdout, "19900\n");
    assert!(fast < 50, "{fast} opens serviced with fast reads");
    assert!(traced >= 200, "{traced} opens serviced under --trace");
}

/// The openat calls the supervisor served for `fast_reads --fopen-many
/// FILE 200` run with `extra` flags.
fn serviced_fopens(extra: &[&str]) -> u64 {
    let dir = tree("fopen");
    let prog = c_prog("fast_reads");
    let a = dir.path().join("a");
    let rep = tempfile::NamedTempFile::new().expect("report file");
    let rep_s = rep.path().display().to_string();
    let mut sup = c_mounts();
    sup.extend(["--report".to_string(), rep_s]);
    sup.extend(extra.iter().map(|s| s.to_string()));
    Run::new(&[
        prog.as_os_str(),
        "--fopen-many".as_ref(),
        a.as_os_str(),
        "200".as_ref(),
    ])
    .sup(&sup)
    .ro(dir.path())
    .supervised()
    .ok("supervised");
    let r = read_report(rep.path());
    r["syscalls"]["serviced"]["openat"].as_u64().unwrap_or(0)
}

/// A C program's fopen in a read mode passes the filter as its open does
/// (only the loader's opens are served); under `--trace` each is trapped.
#[test]
fn fopen_reads_pass_the_filter() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let fast = serviced_fopens(&[]);
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let traced = serviced_fopens(&[&format!("--trace={}", trace.path().display())]);
    assert!(fast < 50, "{fast} opens served with fast reads");
    assert!(traced >= 200, "{traced} opens served under --trace");
}

/// A /proc file reached through fopen is the sandbox's: its meminfo
/// under `--memory`, not the host's.
#[test]
fn fopen_of_a_proc_file_is_served() {
    let prog = c_prog("fast_reads");
    let mut sup = c_mounts();
    sup.extend(["--memory".to_string(), "300m".to_string()]);
    let out = Run::new(&[
        prog.as_os_str(),
        "--fopen-first".as_ref(),
        "/proc/meminfo".as_ref(),
    ])
    .sup(&sup)
    .supervised()
    .ok("supervised");
    assert_eq!(
        out.stdout,
        "first: \"MemTotal:         307200 kB\"\n",
        "{}",
        out.dump()
    );
}

/// Without the fence (`SUPERVISOR_TEST_NO_LANDLOCK`), a marked open could
/// read the kernel's procfs: no preload, every read open trapped.
#[test]
fn no_fast_reads_without_the_fence() {
    let script = "import os; print(os.path.exists('/etc/sandbox-fast-reads.so'), \
                  open('/proc/self/status').readline().split()[0])";
    let run = Run::new(&["/usr/bin/python3", "-c", script]);
    let fenced = run.supervised().ok("fenced");
    let bare = run
        .env("SUPERVISOR_TEST_NO_LANDLOCK", "1")
        .supervised()
        .ok("unfenced");
    assert_eq!(bare.stdout, "False Name:\n", "{}", bare.dump());
    let expected = if landlock_abi() >= 1 {
        "True Name:\n"
    } else {
        "False Name:\n"
    };
    assert_eq!(fenced.stdout, expected, "{}", fenced.dump());
}

/// The sandbox's own /proc files are served however the path reaches
/// them: absolute, relative to a /proc directory, through a symlink of
/// the guest's (into procfs, or onto a cover under /proc/sys), by `..`.
/// Each must read what the plain absolute open reads.
const PROC_PATHS: &str = r#"
import os
os.symlink('/proc/meminfo', '/tmp/meminfo')
os.symlink('/proc/sys/fs/file-nr', '/tmp/file-nr')
os.symlink('/proc', '/tmp/proc')
first = lambda p: open(p).readline().split()
mem = first('/proc/meminfo')
fnr = first('/proc/sys/fs/file-nr')
for p in ('/tmp/meminfo', '/tmp/proc/meminfo', '/usr/../proc/meminfo', '//proc/meminfo'):
    print(p, first(p) == mem)
print('file-nr', first('/tmp/file-nr')[2] == fnr[2])
os.chdir('/proc')
print('relative', first('meminfo') == mem)
d = os.open('/proc/sys/fs', os.O_RDONLY | os.O_DIRECTORY)
print('dirfd', open(os.open('file-nr', os.O_RDONLY, dir_fd=d)).readline().split()[2] == fnr[2])
print('limit', mem[1])
"#;

#[test]
fn served_proc_files_however_reached() {
    let out = Run::new(&["/usr/bin/python3", "-c", PROC_PATHS])
        .sup(&["--memory", "300m"])
        .supervised()
        .ok("supervised");
    let want = "/tmp/meminfo True\n/tmp/proc/meminfo True\n/usr/../proc/meminfo True\n\
                //proc/meminfo True\nfile-nr True\nrelative True\ndirfd True\nlimit 307200\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
}

/// Reads /proc/sys files N times each (argv[1]): those no cover hides,
/// whose text is the kernel's in the guest's own namespaces, and
/// `fs/file-nr`, which the sandbox serves (covered); prints each text
/// once, file-nr's field count.
const PROC_SYS: &str = r#"
import sys
n = int(sys.argv[1])
for p in ('/proc/sys/kernel/pid_max', '/proc/sys/kernel/ngroups_max',
          '/proc/sys/net/core/somaxconn', '/proc/sys/fs/file-nr'):
    texts = {open(p).read() for _ in range(n)}
    assert len(texts) == 1 or p.endswith('file-nr'), (p, texts)
    t = texts.pop()
    print(p, len(t.split()) if p.endswith('file-nr') else t.strip())
"#;

/// `PROC_SYS` with N reads of each file: its output and the openat
/// calls the supervisor served.
fn proc_sys_reads(n: usize) -> (Out, u64) {
    served_opens(&["/usr/bin/python3", "-c", PROC_SYS, &n.to_string()], &[])
}

/// `argv`'s output under the supervisor with `extra` flags, and the
/// `openat` calls the supervisor served for it (its report's count).
fn served_opens(argv: &[&str], extra: &[&str]) -> (Out, u64) {
    let (out, report) = Run::new(argv).sup(extra).supervised_reported();
    (out, serviced(&report, "openat"))
}

/// A /proc/sys file no cover hides is read natively, as the handler
/// would have let the kernel answer (it is the guest's namespaces'):
/// 60 more reads of three such files add no served open, and read what
/// they read natively; the served `file-nr` (covered) is still served,
/// once per read.
#[test]
fn proc_sys_reads_pass_unless_covered() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let (once, few) = proc_sys_reads(1);
    let (many, more) = proc_sys_reads(21);
    assert_eq!(once.stdout, many.stdout);
    assert_eq!(
        more - few,
        20,
        "served opens: {few} for 1 read each, {more} for 21"
    );
    let lines = |o: &Out| o.stdout.lines().map(str::to_owned).collect::<Vec<_>>();
    let sandboxed = lines(&many);
    assert_eq!(sandboxed.len(), 4, "{}", many.dump());
    assert_eq!(sandboxed[3], "/proc/sys/fs/file-nr 3", "{}", many.dump());
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    // Natively in a pid namespace of its own (pid_max is the namespace's);
    // somaxconn is the sandbox's network namespace's, the default.
    let argv = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "/usr/bin/python3",
        "-c",
        PROC_SYS,
        "1",
    ];
    let native = lines(&Run::new(&argv).native().ok("native"));
    assert_eq!(sandboxed[..2], native[..2], "{}", many.dump());
}

/// sqlite commits (its journal, the fsync of its directory) and reads its
/// database back as natively.
#[test]
fn sqlite_in_scratch_matches_native() {
    let script = r#"
import os, sqlite3, sys, tempfile
d = tempfile.mkdtemp(dir=sys.argv[1])
c = sqlite3.connect(d + '/t.db', isolation_level=None)
c.execute('create table t (a integer, b text)')
for i in range(300):
    c.execute('insert into t values (?, ?)', (i, str(i)))
print(c.execute('select count(*), sum(a) from t').fetchone())
c.close()
print(sorted(os.listdir(d)))
"#;
    let scratch = tree("sqlite");
    let run = Run::new(&[
        "/usr/bin/python3",
        "-c",
        script,
        &scratch.path().display().to_string(),
    ])
    .rw(scratch.path());
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    assert!(
        native.stdout.starts_with("(300, 44850)"),
        "{}",
        native.dump()
    );
}

/// `O_RDWR` opens, creating or not, a few exclusive ones among them:
/// what each one answers, with the directory's name left out.
const READ_WRITE_OPENS: &str = r#"
import os, sys
base = sys.argv[1]
os.makedirs(base, exist_ok=True)
for i in range(200):
    fd = os.open(f'{base}/f{i % 10}', os.O_RDWR | os.O_CREAT, 0o640)
    os.write(fd, b'x')
    os.close(fd)
fd = os.open(f'{base}/f3', os.O_RDWR | os.O_TRUNC)
os.write(fd, b'truncated')
os.close(fd)
for name in ('f0', 'f3'):
    fd = os.open(f'{base}/{name}', os.O_RDWR)
    print(name, os.read(fd, 100), oct(os.fstat(fd).st_mode))
    os.close(fd)
try:
    os.open(f'{base}/f0', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
except OSError as e:
    print('exclusive existing', e.errno)
fd = os.open(f'{base}/new', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
print('exclusive new', oct(os.fstat(fd).st_mode))
try:
    os.open(f'{base}/missing/x', os.O_RDWR | os.O_CREAT, 0o600)
except OSError as e:
    print('missing parent', e.errno)
print(sorted(os.listdir(base)))
"#;

/// The `openat` calls the supervisor served for [`READ_WRITE_OPENS`] in
/// `dir` (made by the script), and its output, under `extra` flags.
fn serviced_read_write_opens(dir: &str, extra: &[&str]) -> (Out, u64) {
    served_opens(&["/usr/bin/python3", "-c", READ_WRITE_OPENS, dir], extra)
}

/// `O_RDWR` opens without `O_EXCL` pass the filter marked by the preload
/// (sqlite opens its journal so at every commit), answering as natively;
/// where the fence refuses one (a directory made at the view's root since
/// the start) the preload makes it again unmarked and the supervisor
/// serves it, with the same answers. Under `--trace` each is trapped.
#[test]
fn read_write_opens_pass_the_filter() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let scratch = tree("rdwr");
    let native = Run::new(&[
        "/usr/bin/python3",
        "-c",
        READ_WRITE_OPENS,
        &scratch.path().join("native").display().to_string(),
    ])
    .native()
    .ok("native");
    assert!(
        native.stdout.contains("f3 b'truncated' 0o100640\n"),
        "{}",
        native.dump()
    );
    let (out, fast) = serviced_read_write_opens("/tmp/rdwr", &[]);
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
    let (at_root, served) = serviced_read_write_opens("/rdwr-made-at-the-root", &[]);
    assert_eq!(at_root.stdout, native.stdout, "{}", at_root.dump());
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let flag = format!("--trace={}", trace.path().display());
    let (traced_out, traced) = serviced_read_write_opens("/tmp/rdwr", &[&flag]);
    assert_eq!(traced_out.stdout, native.stdout, "{}", traced_out.dump());
    assert!(fast < 50, "{fast} opens served with fast reads");
    assert!(
        served >= 200,
        "{served} opens served beneath a name made at the root"
    );
    assert!(traced >= 200, "{traced} opens served under --trace");
}

/// A `--rootfs` tree without a dynamic loader (static programs only)
/// gets no preload list in its /etc, only the static loader
/// (`tests/fs/mounts.rs` lists /etc, `static_reads.rs` runs its programs;
/// trees with a loader: `fast_reads_any_libc.rs`).
#[test]
fn a_static_tree_gets_no_preload() {
    let root = tempfile::tempdir().expect("tempdir");
    if let Err(e) = tiny_rootfs(root.path()) {
        skip!("{e}");
    }
    let rootfs = root.path().display().to_string();
    let out = Run::new(&[
        "/bin/rootprobe",
        "cat",
        "/etc/ld.so.preload",
        ",",
        "cat",
        "/data/f",
    ])
    .sup(&["--rootfs", &rootfs])
    .supervised();
    assert!(out.stdout.ends_with("tree\n"), "{}", out.dump());
    assert!(!out.stdout.contains("fast-reads"), "{}", out.dump());
}
