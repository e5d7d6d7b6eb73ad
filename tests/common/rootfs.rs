//! Tiny root file systems for `--rootfs` tests: a tree holding only a
//! static build of `tests/c/rootprobe.c` (no shell, no libc, no /usr), so
//! whatever else a guest sees comes from the sandbox, not from the host;
//! and [`add_dynamic`], which adds a dynamically linked program with its
//! loader and libraries (a glibc or a musl image in miniature).

use super::*;

/// `tests/c/rootprobe.c` linked statically, built once per test binary
/// into `$CARGO_TARGET_TMPDIR/static` (world-readable); Err says why not
/// (no `cc`, no static libc).
pub fn static_rootprobe() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build_static).clone()
}

fn build_static() -> Result<PathBuf, String> {
    if !have("cc") {
        return Err("no C compiler (cc)".into());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/rootprobe.c");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("static");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
    let tmp = dir.join(format!("rootprobe.{}.tmp", std::process::id()));
    let out = Command::new("cc")
        .args(["-static", "-O1", "-o"])
        .arg(&tmp)
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc -static failed (no static libc?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let prog = dir.join("rootprobe");
    std::fs::rename(&tmp, &prog).map_err(|e| e.to_string())?;
    Ok(prog)
}

/// Fills `root` with a minimal tree: `/bin/rootprobe`, `/data/f`
/// ("tree\n"), and an `/etc/passwd` of its own ("tree-passwd\n").
pub fn tiny_rootfs(root: &Path) -> Result<(), String> {
    let probe = static_rootprobe()?;
    for d in ["bin", "data", "etc"] {
        std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(&probe, root.join("bin/rootprobe")).map_err(|e| e.to_string())?;
    std::fs::write(root.join("data/f"), "tree\n").map_err(|e| e.to_string())?;
    std::fs::write(root.join("etc/passwd"), "tree-passwd\n").map_err(|e| e.to_string())?;
    Ok(())
}

/// What `rootprobe ls /etc` prints of a tree's /etc that holds nothing
/// of its own: the sandbox's files, and, where the guest is fenced
/// (Landlock: fast reads), the static loader, which every fenced view
/// gets (`sandbox/src/launch/static_loader.rs`).
pub fn tree_etc_listing() -> &'static str {
    match landlock_abi() >= 1 {
        true => "group hostname hosts passwd resolv.conf sandbox-static-loader",
        false => "group hostname hosts passwd resolv.conf",
    }
}

/// Copies the dynamically linked program `prog` into `root` as
/// `/bin/NAME`, with the loader and libraries `ldd` lists for it at their
/// own paths (for a musl program, musl's loader, which is its C library
/// too).
pub fn add_dynamic(root: &Path, prog: &Path) -> Result<(), String> {
    let out = Command::new("ldd")
        .arg(prog)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    // glibc's ldd cannot list a musl program's (it fails): its loader,
    // named below, is all it needs.
    let text = match out.status.success() {
        true => String::from_utf8_lossy(&out.stdout).into_owned(),
        false => String::new(),
    };
    let mut libs: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
        .map(PathBuf::from)
        .collect();
    // musl's loader path, which its ldd does not print (and the
    // tree's musl is this very file: libc.so is the loader).
    let interp = Command::new("readelf")
        .args(["-l"])
        .arg(prog)
        .output()
        .map_err(|e| format!("readelf: {e}"))?;
    let interp = String::from_utf8_lossy(&interp.stdout).into_owned();
    if let Some(line) = interp.lines().find(|l| l.contains("program interpreter:")) {
        let path = line.rsplit(": ").next().unwrap_or("").trim_end_matches(']');
        libs.push(PathBuf::from(path));
    }
    if libs.is_empty() {
        return Err(format!("ldd {}: no libraries: {text}", prog.display()));
    }
    for lib in libs.iter().chain(std::iter::once(&prog.to_path_buf())) {
        let dest = match lib == prog {
            true => root.join("bin").join(prog.file_name().unwrap_or_default()),
            false => root.join(lib.strip_prefix("/").unwrap_or(lib)),
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        // The loader's path may be a symlink on the host (to the C
        // library, for musl): the copy is the file it leads to.
        if !dest.exists() {
            std::fs::copy(lib, &dest).map_err(|e| format!("{}: {e}", lib.display()))?;
        }
    }
    Ok(())
}
