//! Temp trees, snapshots of trees, and the normalisation of outputs that
//! legitimately differ between a native and a supervised run.

use super::*;

/// A temp directory (removed on drop). `path()` is canonical (no symlinks).
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::Builder::new()
            .prefix("sbxt.")
            .tempdir()
            .expect("tempdir");
        Tree { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    /// Path as a String.
    pub fn s(&self) -> String {
        self.dir.path().display().to_string()
    }
    /// Write a file (creating parents).
    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }
    pub fn dir(&self, rel: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
    /// chown -R to uid:gid and make the root 0755 (for unprivileged runs).
    pub fn give_to(&self, uid: u32, gid: u32) {
        let _ = std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o755));
        let st = Command::new("chown")
            .args(["-R", &format!("{uid}:{gid}")])
            .arg(self.path())
            .status()
            .expect("chown");
        assert!(st.success());
    }
}

/// Everything about a tree that a run may legitimately change and that both
/// runs must agree on: relative path → "type mode size nlink owner-is-us
/// [target|content digest]". No inode numbers, devices or times.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    walk(root, root, &mut m);
    m
}

fn walk(root: &Path, p: &Path, m: &mut BTreeMap<String, String>) {
    let md = std::fs::symlink_metadata(p).expect("lstat");
    let rel = p.strip_prefix(root).unwrap().display().to_string();
    let ft = md.file_type();
    // SAFETY: getuid/getgid cannot fail.
    let own = md.uid() == unsafe { libc::getuid() } && md.gid() == unsafe { libc::getgid() };
    let base = format!(
        "mode={:o} nlink={} own={}",
        md.mode() & 0o7777,
        md.nlink(),
        own
    );
    let desc = if ft.is_symlink() {
        format!(
            "link {base} -> {}",
            std::fs::read_link(p).unwrap().display()
        )
    } else if ft.is_dir() {
        let mut kids: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        kids.sort();
        for k in &kids {
            walk(root, k, m);
        }
        format!("dir {base} size={}", md.size())
    } else if ft.is_file() {
        let data = std::fs::read(p).unwrap_or_default();
        format!("file {base} size={} sum={:016x}", md.size(), fnv(&data))
    } else {
        format!("other {base}")
    };
    m.insert(if rel.is_empty() { ".".into() } else { rel }, desc);
}

fn fnv(d: &[u8]) -> u64 {
    d.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

/// A line diff of `a` (native) and `b` (supervised): "-" lines only native,
/// "+" lines only supervised (longest common subsequence; outputs are small).
pub fn diff(a: &str, b: &str) -> String {
    let (la, lb): (Vec<_>, Vec<_>) = (a.lines().collect(), b.lines().collect());
    let (n, m) = (la.len(), lb.len());
    // lcs[i][j]: length of the LCS of la[i..] and lb[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if la[i] == lb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut s) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && la[i] == lb[j] {
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            s += &format!("- native     {:>4}: {}\n", i + 1, la[i]);
            i += 1;
        } else {
            s += &format!("+ supervised {:>4}: {}\n", j + 1, lb[j]);
            j += 1;
        }
    }
    s
}

/// Assert two outputs equal, showing the differing lines.
pub fn assert_same(what: &str, native: &str, supervised: &str) {
    if native != supervised {
        panic!("{what}: outputs differ\n{}\n=== native ===\n{native}\n=== supervised ===\n{supervised}", diff(native, supervised));
    }
}

/// Erase the differences between a native and a supervised output that are
/// legitimate. Only these:
/// 1. `subs`: the test's own paths. Each side works on its own copy of a tree
///    (`…/a/…` natively, `…/b/…` supervised, names of equal length so column
///    widths do not move); both map to one placeholder.
/// 2. The hostname: the guest's is "sandbox" (or `--hostname`), the host's is
///    the host's; with `hostname = true` both become `<HOSTNAME>`.
///
/// Not normalised, because the tests avoid them instead: times (`ls
/// --time-style=+`, explicit `touch -d`), inode and device numbers (never
/// printed), pids.
pub fn normalize(s: &str, subs: &[(&str, &str)], hostname: bool) -> String {
    let mut s = s.to_owned();
    for (from, to) in subs {
        if !from.is_empty() {
            s = s.replace(from, to);
        }
    }
    if hostname {
        if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            let h = h.trim();
            if !h.is_empty() {
                s = s.replace(h, "<HOSTNAME>");
            }
        }
        s = s.replace("sandbox", "<HOSTNAME>");
    }
    s
}

/// Two sibling trees `base/a` and `base/b` made by `fill`, for running the
/// same thing natively (a) and supervised (b).
pub struct Pair {
    pub base: Tree,
    pub a: PathBuf,
    pub b: PathBuf,
}

impl Pair {
    pub fn new(fill: impl Fn(&Path)) -> Pair {
        let base = Tree::new();
        let (a, b) = (base.dir("a"), base.dir("b"));
        fill(&a);
        fill(&b);
        Pair { base, a, b }
    }
    /// Map both sides' paths to `<T>`.
    pub fn norm(&self, s: &str) -> String {
        let (a, b) = (self.a.display().to_string(), self.b.display().to_string());
        normalize(s, &[(&a, "<T>"), (&b, "<T>")], false)
    }
}

/// [`snapshot`] as text, one "path: entry" line each, for [`assert_same`].
pub fn snapshot_text(p: &Path) -> String {
    snapshot(p)
        .iter()
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect()
}
