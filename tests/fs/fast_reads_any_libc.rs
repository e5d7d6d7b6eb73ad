//! Fast reads beyond glibc programs in the host's directories
//! (`sandbox/src/launch/fast_reads.rs`, docs/fast-reads.md): a musl
//! program (its loader takes the preload from `LD_PRELOAD`), and
//! `--rootfs` trees with a glibc or a musl loader (the library and a
//! preload list in the tree's /etc). `tests/c/many_reads.c` opens many
//! files with open and fopen: its output is compared with the same
//! program run natively, and the report counts the opens the supervisor
//! served (the loader's own, which no preload marks; every one under
//! `--trace`, which keeps the preload out).

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const FILES: usize = 200;
/// What `many_reads read DIR 200` prints of DIR/0 ... DIR/199.
const SUMS: &str = "sum 19900 fsum 19900\n";

/// `dir`/0 ... `dir`/199, each holding its number.
fn fill(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for i in 0..FILES {
        std::fs::write(dir.join(i.to_string()), format!("{i}\n")).expect("write");
    }
}

fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("fast-reads-libc-")
        .tempdir()
        .expect("tempdir");
    let open = std::fs::Permissions::from_mode(0o777);
    std::fs::set_permissions(dir.path(), open).expect("chmod");
    dir
}

/// The open and openat calls the supervisor served for `run` with
/// `extra` options, and its output (which must succeed).
fn served_opens(run: &Run, extra: &[String]) -> (Out, u64) {
    let rep = tempfile::NamedTempFile::new().expect("report file");
    let mut sup = vec!["--report".to_string(), rep.path().display().to_string()];
    sup.extend_from_slice(extra);
    let out = run.clone().sup(&sup).supervised().ok("supervised");
    let r = read_report(rep.path());
    // musl's open and fopen make open(2), glibc's openat(2).
    let served = |call: &str| r["syscalls"]["serviced"][call].as_u64().unwrap_or(0);
    (out, served("open") + served("openat"))
}

/// `run`'s opens pass the filter (fewer than 50 served for 400 opens),
/// and all 400 are served under `--trace`; the output is [`SUMS`] both
/// times.
fn assert_reads_pass(run: &Run) {
    let (out, fast) = served_opens(run, &[]);
    assert_eq!(out.stdout, SUMS, "{}", out.dump());
    let trace = tempfile::NamedTempFile::new().expect("trace file");
    let (out, traced) = served_opens(run, &[format!("--trace={}", trace.path().display())]);
    assert_eq!(out.stdout, SUMS, "{}", out.dump());
    assert!(fast < 50, "{fast} opens served with fast reads");
    assert!(
        traced >= 2 * FILES as u64,
        "{traced} opens served under --trace"
    );
}

/// A musl program in the host's directories: the same answers as
/// natively (errnos, fopen's modes, which musl's fopen and the preload's
/// must open alike, the sandbox's /proc files), and its reads pass.
#[test]
fn a_musl_program_reads_fast_and_as_natively() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let prog = musl_prog("many_reads");
    let dir = open_dir();
    let d = dir.path();
    fill(&d.join("files"));
    let check = Run::new(&[prog.as_os_str(), "check".as_ref(), d.as_os_str()])
        .sup(&c_mounts())
        .rw(d);
    let native = check.native().ok("native");
    let supervised = check.supervised().ok("supervised");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
    for line in ["fopen x: errno 17", "fopen bad mode: errno 22", "lines 2"] {
        assert!(native.stdout.contains(line), "{line}: {}", native.dump());
    }
    let files = d.join("files");
    let read = Run::new(&[
        prog.as_os_str(),
        "read".as_ref(),
        files.as_os_str(),
        "200".as_ref(),
    ])
    .sup(&c_mounts())
    .ro(d);
    assert_eq!(read.native().ok("native").stdout, SUMS);
    assert_reads_pass(&read);
}

/// A musl program sees an environment of its own with `LD_PRELOAD`
/// naming the library (its loader reads nothing else), and a glibc one
/// none (its loader reads the view's preload list).
#[test]
fn only_a_musl_command_gets_ld_preload() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let prog = musl_prog("many_reads");
    let dir = open_dir();
    fill(&dir.path().join("files"));
    let musl = Run::new(&[prog.as_os_str(), "env".as_ref(), "LD_PRELOAD".as_ref()])
        .sup(&c_mounts())
        .supervised();
    assert_eq!(
        musl.stdout,
        "/etc/sandbox-fast-reads.so\n",
        "{}",
        musl.dump()
    );
    let glibc = c_prog("many_reads");
    let plain = Run::new(&[glibc.as_os_str(), "env".as_ref(), "LD_PRELOAD".as_ref()])
        .sup(&c_mounts())
        .supervised();
    assert_eq!(plain.stdout, "(unset)\n", "{}", plain.dump());
}

/// A `--rootfs` tree with glibc's loader: the view's preload list names
/// the library, then the tree's own entries; a glibc program of the tree
/// reads as natively, and its reads pass.
#[test]
fn a_glibc_tree_gets_the_preload() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let root = tempfile::tempdir().expect("tempdir");
    let r = root.path();
    tiny_rootfs(r).expect("a tiny rootfs");
    add_dynamic(r, &c_prog("many_reads")).expect("the program and its libraries");
    fill(&r.join("files"));
    std::fs::write(
        r.join("etc/ld.so.preload"),
        "/lib/x86_64-linux-gnu/libc.so.6\n",
    )
    .unwrap();
    let rootfs = r.display().to_string();
    let list = Run::new(&["/bin/rootprobe", "cat", "/etc/ld.so.preload"])
        .sup(&["--rootfs", &rootfs])
        .supervised();
    assert_eq!(
        list.stdout,
        "/etc/sandbox-fast-reads.so\n/lib/x86_64-linux-gnu/libc.so.6\n",
        "{}",
        list.dump()
    );
    let read = Run::new(&["/bin/many_reads", "read", "/files", "200"]).sup(&["--rootfs", &rootfs]);
    assert_reads_pass(&read);
    let check = Run::new(&["/bin/many_reads", "check", "/tmp"]).sup(&["--rootfs", &rootfs]);
    let supervised = check.supervised().ok("supervised");
    let here = open_dir();
    let native = Run::new(&[
        c_prog("many_reads").as_os_str(),
        "check".as_ref(),
        here.path().as_os_str(),
    ])
    .native()
    .ok("native");
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
}

/// A tree with musl's loader only (an Alpine image in miniature): the
/// library and no preload list in its /etc (and the static loader, which
/// every fenced view has); a musl program of the tree reads fast.
#[test]
fn a_musl_tree_gets_the_library() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let root = tempfile::tempdir().expect("tempdir");
    let r = root.path();
    tiny_rootfs(r).expect("a tiny rootfs");
    add_dynamic(r, &musl_prog("many_reads")).expect("the program and musl");
    fill(&r.join("files"));
    let rootfs = r.display().to_string();
    let ls = Run::new(&["/bin/rootprobe", "ls", "/etc"])
        .sup(&["--rootfs", &rootfs])
        .supervised();
    assert_eq!(
        ls.stdout,
        "group hostname hosts passwd resolv.conf sandbox-fast-reads.so sandbox-static-loader\n",
        "{}",
        ls.dump()
    );
    let read =
        Run::new(&["/bin/many_reads.musl", "read", "/files", "200"]).sup(&["--rootfs", &rootfs]);
    assert_reads_pass(&read);
}

/// `tests/c/musl_family.c`'s library part, built `musl-gcc -shared`
/// beside the C programs.
fn musl_family_lib() -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/musl_family.c");
    built_once("musl_family_lib.so", |out| {
        let mut cc = std::process::Command::new("musl-gcc");
        cc.args(["-O1", "-Wall", "-shared", "-fPIC", "-DFAMILY_LIB", "-o"])
            .arg(out)
            .arg(&src);
        cc
    })
}

/// An Alpine-like family of musl programs, as `user` with `bin` (root
/// and the supervisor under test otherwise): one that dlopen()s a library
/// after its start, whose own calls of open and fopen read the files, and
/// one that forks and execs another musl program (which inherits
/// `LD_PRELOAD`). Each prints what it prints natively, and the
/// supervisor serves no more than the loaders' opens (the library's and
/// the preload's: fewer than 10 of 400 or more), where `--trace`, which
/// keeps the preload out, serves every one.
fn musl_family_reads_fast(user: Option<(u32, u32, std::path::PathBuf)>) {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let family = musl_prog("musl_family");
    let lib = musl_family_lib();
    let reader = musl_prog("many_reads");
    let dir = open_dir();
    let files = dir.path().join("files");
    fill(&files);
    let cases: [[&std::ffi::OsStr; 5]; 2] = [
        [
            family.as_os_str(),
            "dlopen".as_ref(),
            lib.as_os_str(),
            files.as_os_str(),
            "200".as_ref(),
        ],
        [
            family.as_os_str(),
            "spawn".as_ref(),
            reader.as_os_str(),
            files.as_os_str(),
            "200".as_ref(),
        ],
    ];
    for argv in cases {
        let mut run = Run::new(&argv).sup(&c_mounts()).ro(dir.path());
        if let Some((uid, gid, bin)) = &user {
            run = run.user(*uid, *gid).bin(bin);
        }
        let native = run.native().ok("native");
        assert_eq!(native.stdout, SUMS, "{}", native.dump());
        // The report goes where the invoker, root or not, may write.
        let reports = open_dir();
        let served = |extra: &[String]| {
            let rep = reports.path().join("report.json");
            let mut sup = vec!["--report".to_string(), rep.display().to_string()];
            sup.extend_from_slice(extra);
            let out = run.clone().sup(&sup).supervised().ok("supervised");
            assert_eq!(out.stdout, native.stdout, "{argv:?}: {}", out.dump());
            let r = read_report(&rep);
            let n = |call: &str| r["syscalls"]["serviced"][call].as_u64().unwrap_or(0);
            n("open") + n("openat")
        };
        let fast = served(&[]);
        assert!(fast < 10, "{argv:?}: {fast} opens served with fast reads");
        let trace = reports.path().join("trace");
        let traced = served(&[format!("--trace={}", trace.display())]);
        assert!(
            traced >= 2 * FILES as u64,
            "{argv:?}: {traced} opens served under --trace"
        );
    }
}

#[test]
fn a_musl_programs_library_and_child_read_fast() {
    musl_family_reads_fast(None);
}

#[test]
fn a_musl_programs_library_and_child_read_fast_unprivileged() {
    match tester_bin() {
        Ok(t) => musl_family_reads_fast(Some(t)),
        Err(e) => skip!("{e}"),
    }
}
