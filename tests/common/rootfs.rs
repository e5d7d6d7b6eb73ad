//! Tiny root file systems for `--rootfs` tests: a tree holding only a
//! static build of `tests/c/rootprobe.c` (no shell, no libc, no /usr), so
//! whatever else a guest sees comes from the sandbox, not from the host.

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
