//! The C programs of tests/c/*.c, built once per test binary with `cc` into
//! `$CARGO_TARGET_TMPDIR/cprogs` (world-readable, so the unprivileged tests
//! can run them), with tests/c/include (the guests' shared `guest.h`) on
//! the include path, and the mount that makes them visible in the sandbox.

use super::*;

/// Directory holding the built C programs (all built on first use; one
/// program failing to compile fails only the tests that use it).
pub fn c_dir() -> &'static Path {
    &c_built().0
}

type Built = (PathBuf, BTreeMap<String, Result<(), String>>);

fn c_built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(build_c)
}

/// Path of the built `tests/c/NAME.c` (panics with cc's message if it failed).
pub fn c_prog(name: &str) -> PathBuf {
    let (dir, res) = c_built();
    match res.get(name) {
        Some(Ok(())) => dir.join(name),
        Some(Err(e)) => panic!("building tests/c/{name}.c failed: {e}"),
        None => panic!("no tests/c/{name}.c (or no `cc`)"),
    }
}

/// Supervisor options that make the C programs visible inside (read-only,
/// same path).
pub fn c_mounts() -> Vec<String> {
    let d = c_dir().display().to_string();
    vec!["--ro".into(), format!("{d}:{d}")]
}

fn build_c() -> Built {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cprogs");
    let mut res = BTreeMap::new();
    std::fs::create_dir_all(&out).expect("create cprogs dir");
    // World-readable, for the unprivileged tests.
    let _ = std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755));
    if !have("cc") {
        return (out, res);
    }
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("tests/c")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("c"))
        .collect();
    srcs.sort();
    for p in srcs {
        let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
        res.insert(name.clone(), build_one(&p, &out, &name));
    }
    (out, res)
}

fn build_one(src: &Path, out: &Path, name: &str) -> Result<(), String> {
    // Build under a private name, then rename: concurrent test binaries never
    // see a half-written program.
    let tmp = out.join(format!("{name}.{}.tmp", std::process::id()));
    // tests/c/include: the header the guests share (guest.h).
    let include = src.with_file_name("include");
    let st = Command::new("cc")
        .args(["-O1", "-Wall", "-Wno-unused-result", "-pthread", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !st.status.success() {
        return Err(String::from_utf8_lossy(&st.stderr).into_owned());
    }
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, out.join(name)).map_err(|e| e.to_string())
}

/// tests/c/NAME.c built with musl-gcc (`musl-tools`, which .ci/run
/// installs) as `NAME.musl` beside the cc builds: a dynamically linked
/// musl program, its interpreter `/lib/ld-musl-x86_64.so.1`. Panics where
/// musl-gcc is missing or fails: the tests that need it must not pass
/// without it.
pub fn musl_prog(name: &str) -> PathBuf {
    assert!(
        have("musl-gcc"),
        "musl-gcc is missing (apt-get install musl-tools)"
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    built_once(&format!("{name}.musl"), |out| {
        let mut cc = Command::new("musl-gcc");
        cc.args(["-O1", "-Wall", "-o"]).arg(out).arg(&src);
        cc
    })
}

/// Builds `name` beside the C programs (so [`c_mounts`] shows it in the
/// sandbox) with the command `build` makes for an output path, once per
/// test binary: tests that share a program wait for its one build, since a
/// second build renamed over the file while another test runs it would make
/// that run's `/proc/self/exe` a deleted file. It is built under a private
/// name first (another test binary may build it at once), then renamed, so
/// no test sees a half-written one. Panics where the build fails: the
/// tests that need it must not pass without it.
pub fn built_once(name: &str, build: impl FnOnce(&Path) -> Command) -> PathBuf {
    static DONE: OnceLock<std::sync::Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = done.get(name) {
        return p.clone();
    }
    let out = c_dir().join(name);
    let tmp = c_dir().join(format!("{name}.{}.tmp", std::process::id()));
    let res = build(&tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("building {name}: {e} (see .ci/run's packages)"));
    assert!(
        res.status.success(),
        "building {name}: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, &out).expect("rename");
    done.insert(name.to_owned(), out.clone());
    out
}
