//! The static program of `tests/c/static_reads.c` for every way a
//! command starts (`run`, `--rootfs`, the pool, the OCI runtime): its
//! glibc and musl `-static` builds, the directory it reads, the lines its
//! native run must print, and the opens a run's report says were served.
//!
//! Not here: what any single test expects of a way to start.

use super::*;

/// `tests/c/static_reads.c` linked statically by `compiler` (`cc` for
/// glibc, `musl-gcc` for musl), beside the C programs ([`c_mounts`]).
pub fn c_static(compiler: &str) -> PathBuf {
    built_once(&format!("static_reads.{compiler}"), |out| {
        let mut cc = Command::new(compiler);
        cc.args(["-O1", "-Wall", "-static", "-o"])
            .arg(out)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/static_reads.c"));
        cc
    })
}

/// Fills `dir` with what `static_reads DIR` reads: `a`, `sub/b`.
pub fn fill_static_reads_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    std::fs::write(dir.join("a"), "text of a\n").expect("write");
    std::fs::write(dir.join("sub/b"), "text of b\n").expect("write");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
}

/// Lines a native run of `static_reads DIR` prints (built by either C
/// library), each of which a supervised run must print too, whether the
/// loader rewrites the program's sites or not (with `--no-rewrite` it
/// also prints `text unchanged: 1`).
pub const STATIC_READS_LINES: &[&str] = &[
    "4 threads x 500 first opens: 1",
    "openat rel: \"text of b\"",
    "openat missing: open = -1 errno 2",
    "open dir read: read = -1 errno 21",
    "open bad pointer: open = -1 errno 14",
    "2000 opens: 1",
    "open, every signal blocked: \"text of a\"",
    "own SIGSYS handler ran: 0",
    "5000 opens under a 50 us timer: 1 (ticks seen: 1)",
    "3000 opens under a 50 us timer whose handler opens: 1 (handler opens: 1, all read: 1)",
    "forked child: exit 0",
    "exec'd child open: \"text of b\"",
    "vforked exec'd child: exit 0",
    "exec'd cat: exit 0",
    "sh read: text of a",
    "exec'd sh: exit 0",
    "own filter's SIGSYS: data 7, call 110, returns 110",
    "open under its own filter: \"text of a\"",
    "own filter child: exit 0",
    "/proc/self/exe is the program: 1",
    "/proc/self/exe reads as the program: 1",
    "text changed only at rewritten sites: 1",
];

/// The lines of a static_reads output but those about its text, which
/// the loader's rewriting (the default) changes at the rewritten sites:
/// what a supervised run prints the same as a native one in any mode.
pub fn but_the_text(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| !l.starts_with("text unchanged:") && !l.starts_with("rewritten sites:"))
        .collect()
}

/// Asserts that a supervised run of `static_reads` printed what the
/// `native` run did but its text's lines (which the loader's rewriting
/// changes; `context` goes with a failure), and that the native run
/// printed every line of [`STATIC_READS_LINES`].
pub fn assert_static_reads_as_native(supervised: &str, native: &Out, context: &str) {
    assert_eq!(
        but_the_text(supervised),
        but_the_text(&native.stdout),
        "{context}"
    );
    for line in STATIC_READS_LINES {
        assert!(native.stdout.contains(line), "{line}: {}", native.dump());
    }
}

/// The open and openat calls a run's report (`--report`) says the
/// supervisor served.
pub fn served_opens(report: &Path) -> u64 {
    let r = read_report(report);
    r["syscalls"]["serviced"]["openat"].as_u64().unwrap_or(0)
        + r["syscalls"]["serviced"]["open"].as_u64().unwrap_or(0)
}

/// The most opens a run of `static_reads` through the static loader
/// leaves served, of its 7,000: the loader's own and those of the
/// dynamic programs it execs (natively every one of them is served).
pub const STATIC_READS_MAX_SERVED: u64 = 200;
