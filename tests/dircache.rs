//! The caches of resolved paths in the sandbox's own layer. The cache of
//! resolved directories (vfs/src/cache.rs) serves the
//! parent lookups of mkdir, rmdir, rename, link... in the sandbox's
//! own layer. Removing a plain file keeps it; removing or replacing a
//! symlink or a directory, and renames, must not leave a stale answer.
//! Each step runs in /tmp of the sandbox (the layer, where directories
//! are cached) and in a scratch directory natively, and the answers must
//! match. A step asks with `ln NAME NAME` (a serviced `linkat` whose two
//! parent lookups go through the cache, and which changes nothing), not
//! `stat` or `readlink` (which pass the filter): "File exists" says the
//! name exists.
//!
//! The paths known to name a plain object (vfs/src/plain.rs) answer read
//! opens CONTINUE without resolving: a name removed unseen and replaced
//! by a way into /proc must still be served as the /proc file.

mod common;
use common::*;

/// `$1`: the directory to work in. Absolute paths only, so every call
/// takes the cached path. Prints one line per step: its label and
/// whether the path exists (a hard link onto itself: EEXIST).
const SCRIPT: &str = r#"
set -u
d=$(mktemp -d "$1/dircache.XXXXXX") || exit 9
st() { case $(ln "$1" "$1" 2>&1) in *"File exists") echo "$2 yes";; *) echo "$2 no";; esac; }
mkdir "$d/real" "$d/other"
touch "$d/real/f" "$d/other/g"
ln -s real "$d/link"
st "$d/link/f" through-link
rm "$d/link"
ln -s other "$d/link"
st "$d/link/f" link-replaced-old
st "$d/link/g" link-replaced-new
rm "$d/real/f"
st "$d/real/f" file-removed
touch "$d/real/f"
st "$d/real/f" file-recreated
rm "$d/real/f"
rmdir "$d/real"
mkdir "$d/real"
st "$d/real/f" dir-recreated
mv "$d/other" "$d/moved"
st "$d/link/g" target-moved
st "$d/moved/g" moved-dir
touch "$d/real/h"
mv "$d/real" "$d/x"
st "$d/x/h" renamed-dir
st "$d/real/h" renamed-dir-old
mkdir "$d/real"
ln -s ../x "$d/real/up"
st "$d/real/up/h" dotdot-link
rm "$d/real/up"
mkdir "$d/real/up"
st "$d/real/up/h" dotdot-link-replaced
rm -r "$d"
echo done
"#;

const EXPECTED: &str = "through-link yes
link-replaced-old no
link-replaced-new yes
file-removed no
file-recreated yes
dir-recreated no
target-moved no
moved-dir yes
renamed-dir yes
renamed-dir-old no
dotdot-link yes
dotdot-link-replaced no
done
";

#[test]
fn removals_and_renames_in_the_layer_answer_as_natively() {
    let scratch = Tree::new();
    let native = Run::sh(SCRIPT, &[&scratch.s()]).native().ok("native");
    assert_eq!(native.stdout, EXPECTED, "the script's native answers");
    let out = Run::sh(SCRIPT, &["/tmp"]).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// Parent lookups (mkdir, rmdir, rename: serviced) after removals the
/// supervisor never hears of (unlink passes the filter): a directory
/// reached through a symlink, the symlink removed and pointed elsewhere,
/// a file removed and a directory made in its place. `check` tests where
/// each name landed with `[ -e ]` (its stat passes too).
const PARENTS: &str = r#"
set -u
d=$(mktemp -d "$1/dircache.XXXXXX") || exit 9
check() { if [ -e "$1" ]; then echo "$2 yes"; else echo "$2 no"; fi; }
mkdir "$d/real" "$d/other"
ln -s real "$d/link"
mkdir "$d/link/a"
check "$d/real/a" made-through-link
rm "$d/link"
ln -s other "$d/link"
mkdir "$d/link/b"
check "$d/other/b" made-through-new-link
check "$d/real/b" made-through-old-link
rmdir "$d/link/b"
check "$d/other/b" removed-through-new-link
touch "$d/real/f"
rm "$d/real/f"
mkdir "$d/real/f"
mkdir "$d/real/f/g"
check "$d/real/f/g" made-in-file-replaced
mv "$d/link" "$d/moved"
check "$d/moved" link-renamed
rm -r "$d"
echo done
"#;

const PARENTS_EXPECTED: &str = "made-through-link yes
made-through-new-link yes
made-through-old-link no
removed-through-new-link no
made-in-file-replaced yes
link-renamed yes
done
";

#[test]
fn parent_lookups_after_unlinks_the_supervisor_never_sees() {
    let scratch = Tree::new();
    let native = Run::sh(PARENTS, &[&scratch.s()]).native().ok("native");
    assert_eq!(
        native.stdout, PARENTS_EXPECTED,
        "the script's native answers"
    );
    let out = Run::sh(PARENTS, &["/tmp"]).supervised().ok("supervised");
    assert_eq!(out.stdout, native.stdout, "{}", out.dump());
}

/// A read open is served as the sandbox's own file (a memfd) or opened
/// by the kernel. Each path is first opened three times as a plain file
/// of the layer (remembered as plain), then its name, or a directory on
/// its way, is removed (`unlink` passes the filter: the supervisor never
/// hears of it) and replaced by a way to /proc/1/mountinfo, which the
/// sandbox serves: a symlink, a hard link of a symlink, a rename over it,
/// a directory turned into a symlink to /proc/1. A file made again in
/// its place stays the kernel's.
const REPLACED: &str = r#"
import os, sys
def opened(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return "memfd" if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:") else "kernel"
    finally:
        os.close(fd)
def plain(path):
    with open(path, "w") as f:
        f.write("x")
    for _ in range(3):
        assert opened(path) == "kernel", path
d = sys.argv[1]
os.mkdir(d)
target = "/proc/1/mountinfo"
print("served", opened(target))
plain(f"{d}/f"); os.unlink(f"{d}/f"); os.symlink(target, f"{d}/f")
print("symlink", opened(f"{d}/f"))
plain(f"{d}/g"); os.unlink(f"{d}/g"); os.link(f"{d}/f", f"{d}/g", follow_symlinks=False)
print("link", opened(f"{d}/g"))
plain(f"{d}/h"); os.symlink(target, f"{d}/s"); os.rename(f"{d}/s", f"{d}/h")
print("rename", opened(f"{d}/h"))
os.mkdir(f"{d}/sub"); plain(f"{d}/sub/mountinfo")
os.unlink(f"{d}/sub/mountinfo"); os.rmdir(f"{d}/sub"); os.symlink("/proc/1", f"{d}/sub")
print("dir", opened(f"{d}/sub/mountinfo"))
plain(f"{d}/k"); os.unlink(f"{d}/k"); plain(f"{d}/k")
print("recreated", opened(f"{d}/k"))
"#;

#[test]
fn remembered_plain_paths_replaced_unseen_are_served() {
    let out = Run::new(&["/usr/bin/python3", "-c", REPLACED, "/tmp/plain"])
        .supervised()
        .ok("supervised");
    let want =
        "served memfd\nsymlink memfd\nlink memfd\nrename memfd\ndir memfd\nrecreated kernel\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
}
