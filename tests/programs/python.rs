//! Python (Debian's /usr/bin/python3) natively and supervised: os.walk,
//! pathlib, tempfile, shutil (copytree, rmtree, move), sqlite3 (WAL and
//! rollback journals), subprocess, and multiprocessing.Pool(2), on a temp tree
//! mounted `--rw`; outputs (paths normalised) and resulting trees must be
//! equal.

use crate::common;
use common::*;
use std::path::Path;

const PY: &str = "/usr/bin/python3";

const SCRIPT: &str = r###"
import errno, multiprocessing, os, pathlib, shutil, sqlite3, subprocess, sys, tempfile
T = sys.argv[1]
os.chdir(T)
def p(*a):
    print(*a, flush=True)
def sq(x):
    return x * x
def child(q, n):
    q.put(("child", n, os.getppid() > 0))

os.makedirs("data/x/y", exist_ok=True)
for i in range(5):
    pathlib.Path(f"data/x/f{i}.txt").write_text(f"line {i}\n" * (i + 1))
pathlib.Path("data/x/y/deep.bin").write_bytes(bytes(range(256)) * 4)
os.symlink("x/f0.txt", "data/link")
os.symlink("x", "data/dirlink")

p("## os.walk")
for root, dirs, files in os.walk("data"):
    dirs.sort()
    p("walk", root, dirs, sorted(files))
for root, dirs, files in os.walk("data", topdown=False, followlinks=True):
    dirs.sort()
    p("walk-up", root, dirs, sorted(files))
p("scandir", sorted((e.name, e.is_dir(), e.is_symlink(), e.is_file()) for e in os.scandir("data")))
p("cwd", os.getcwd())

p("## pathlib")
P = pathlib.Path("data")
p("rglob", sorted(str(x) for x in P.rglob("*.txt")))
p("exists", (P / "link").exists(), (P / "link").is_symlink(), (P / "nope").exists())
p("resolve", (P / "link").resolve(), (P / "dirlink" / ".." / "x").resolve())
p("stat", [(x.name, x.stat().st_size, oct(x.lstat().st_mode)) for x in sorted((P / "x").iterdir())])
(P / "x" / "f1.txt").rename(P / "x" / "renamed.txt")
p("renamed", sorted(os.listdir("data/x")))
(P / "new" / "a").mkdir(parents=True)
try:
    (P / "new").rmdir()
except OSError as e:
    p("rmdir nonempty", errno.errorcode[e.errno])
try:
    (P / "x" / "f0.txt").mkdir()
except OSError as e:
    p("mkdir exists", errno.errorcode[e.errno])
p("read_text", repr((P / "x" / "f2.txt").read_text()))
(P / "x" / "f3.txt").chmod(0o600)
(P / "x" / "f4.txt").touch()
os.utime("data/x/f4.txt", ns=(1_000_000_000_123_456_789, 1_100_000_000_987_654_321))
p("utime", os.stat("data/x/f4.txt").st_mtime_ns, oct(os.stat("data/x/f3.txt").st_mode))
os.link("data/x/f2.txt", "data/hard")
p("link", os.stat("data/hard").st_nlink, os.readlink("data/link"))

p("## tempfile")
with tempfile.TemporaryDirectory() as td:
    pathlib.Path(td, "t").write_text("tmp")
    p("tempdir", sorted(os.listdir(td)), os.path.dirname(td) == tempfile.gettempdir())
p("tempdir gone", os.path.exists(td), tempfile.gettempdir())
with tempfile.NamedTemporaryFile("w+", dir=T) as f:
    f.write("abc")
    f.flush()
    f.seek(0)
    p("named", f.read(), os.path.dirname(f.name) == T)
fd, name = tempfile.mkstemp(dir=T, suffix=".x")
os.write(fd, b"zz")
os.close(fd)
p("mkstemp", os.path.getsize(name), oct(os.stat(name).st_mode))
os.unlink(name)
with tempfile.TemporaryFile() as f:
    f.write(b"unnamed")
    f.seek(0)
    p("TemporaryFile", f.read())

p("## shutil")
shutil.copytree("data", "copy", symlinks=True)
shutil.copytree("data", "copy_follow")
shutil.copy2("data/x/f0.txt", "copy/c2.txt")
p("copy2 mtime", os.stat("copy/c2.txt").st_mtime_ns == os.stat("data/x/f0.txt").st_mtime_ns)
shutil.move("copy/x", "moved_x")
shutil.move("copy/c2.txt", "moved_x/")
shutil.rmtree("copy_follow")
p("rmtree", os.path.exists("copy_follow"))
p("which", shutil.which("sh"))
p("disk_usage", shutil.disk_usage(T).total > 0)

p("## sqlite3")
for db, mode in (("wal.db", "wal"), ("rollback.db", "delete")):
    con = sqlite3.connect(db)
    p("journal", con.execute(f"pragma journal_mode={mode}").fetchone())
    con.execute("create table t (k integer primary key, v text)")
    with con:
        con.executemany("insert into t (v) values (?)", [(f"row{i}",) for i in range(1000)])
    con.close()
    con = sqlite3.connect(db)
    p("rows", con.execute("select count(*), sum(k), max(v) from t").fetchone())
    con.execute("delete from t where k % 2 = 0")
    con.commit()
    p("after delete", con.execute("select count(*) from t").fetchone())
    con.close()
mem = sqlite3.connect(":memory:")
p("memory", mem.execute("select 6 * 7").fetchone())

p("## subprocess")
r = subprocess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True, text=True)
p("run", r.returncode, repr(r.stdout), repr(r.stderr))
r = subprocess.run(["cat"], input="piped\n" * 1000, capture_output=True, text=True)
p("stdin", len(r.stdout), r.stdout[:6])
p("check_output", repr(subprocess.check_output(["ls", "data/x"], text=True)))
p("cwd", repr(subprocess.run(["pwd"], cwd="data/x", capture_output=True, text=True).stdout))
p("signal", subprocess.run(["/bin/sh", "-c", "kill -TERM $$"]).returncode)
try:
    subprocess.run(["/nonexistent/prog"])
except FileNotFoundError as e:
    p("missing", errno.errorcode[e.errno])
ls = subprocess.Popen(["ls", "-1", "data/x"], stdout=subprocess.PIPE)
srt = subprocess.Popen(["sort", "-r"], stdin=ls.stdout, stdout=subprocess.PIPE, text=True)
ls.stdout.close()
p("pipeline", repr(srt.communicate()[0]), ls.wait(), srt.returncode)

p("## multiprocessing")
with multiprocessing.Pool(2) as pool:
    p("pool", pool.map(sq, range(20)))
    p("pool async", pool.apply_async(sq, (12,)).get(timeout=30))
q = multiprocessing.Queue()
pr = multiprocessing.Process(target=child, args=(q, 7))
pr.start()
p("process", q.get(timeout=30))
pr.join()
p("exitcode", pr.exitcode)
lock = multiprocessing.Lock()
with lock:
    p("lock", "held")

p("## final tree")
for root, dirs, files in os.walk("."):
    dirs.sort()
    for n in sorted(files) + dirs:
        st = os.lstat(os.path.join(root, n))
        p(os.path.join(root, n), oct(st.st_mode), st.st_nlink, st.st_size if not os.path.isdir(os.path.join(root, n)) else "-")
"###;

#[test]
fn python_script_matches_native() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let pair = Pair::new(|_| {});
    let run = |dir: &Path| Run::new(&[PY, "-c", SCRIPT, &dir.display().to_string()]);
    let native = run(&pair.a).native();
    assert_eq!(native.code, Some(0), "natively:\n{}", native.dump());
    let sup = run(&pair.b).rw(pair.base.path()).supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert_same(
        "python script",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
    assert_same(
        "tree after python",
        &snapshot_text(&pair.a),
        &snapshot_text(&pair.b),
    );
}

/// `import` of the standard library's bigger modules works and prints the
/// same thing (the interpreter's own file lookups are all serviced).
#[test]
fn python_imports_match_native() {
    if !have(PY) {
        skip!("{PY} not installed");
    }
    let code =
        "import json, decimal, asyncio, sqlite3, ssl, email.parser, xml.dom.minidom, ctypes, sys\n\
                print(sorted(m for m in sys.modules if not m.startswith('_'))[:50])\n\
                print(json.dumps({'a': [1, 2]}), decimal.Decimal('1.1') + decimal.Decimal('2.2'))\n\
                async def f(): return 42\n\
                print(asyncio.run(f()))\n\
                print(ctypes.CDLL(None).getpid() == __import__('os').getpid())";
    let r = Run::new(&[PY, "-c", code]);
    let native = r.native().ok("native python imports");
    let sup = r.supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert_same("python imports", &native.stdout, &sup.stdout);
}

const XATTRS: &str = r#"
import os, sys
d = sys.argv[1]
f = os.path.join(d, "x"); l = os.path.join(d, "l")
open(f, "w").close()
os.symlink(f, l)
def show(what, fn):
    try: print(what, fn())
    except OSError as e: print(what, "errno", e.errno)
show("set", lambda: os.setxattr(f, "user.a", b"1"))
show("set via link", lambda: os.setxattr(l, "user.b", b"22"))
show("get", lambda: os.getxattr(f, "user.b"))
show("list", lambda: sorted(os.listxattr(f)))
show("missing", lambda: os.getxattr(f, "user.nope"))
show("no file", lambda: os.getxattr(os.path.join(d, "nope"), "user.a"))
show("link itself", lambda: os.getxattr(l, "user.a", follow_symlinks=False))
show("remove", lambda: os.removexattr(f, "user.a"))
show("after", lambda: sorted(os.listxattr(f)))
"#;

/// The path forms of the xattr calls (passed to the kernel, which does
/// them as the guest in its own view) answer as natively.
#[test]
fn xattrs_by_path_match_native() {
    let pair = Pair::new(|_| {});
    let run = |dir: &Path| Run::new(&[PY, "-c", XATTRS, &dir.display().to_string()]);
    let native = run(&pair.a).native().ok("native xattrs");
    let sup = run(&pair.b).rw(pair.base.path()).supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert_same(
        "xattrs",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
}
