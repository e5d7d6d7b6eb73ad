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

use crate::common;
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

/// Parent lookups (symlink, rmdir, rename: serviced) after changes the
/// supervisor never hears of (unlink, mkdir and mknod pass the filter): a
/// directory reached through a symlink, the symlink removed and pointed
/// elsewhere, a file removed and a directory or a FIFO made in its place.
/// `check` tests where each name landed with `[ -e ] || [ -L ]` (their
/// stats pass too); the symlinks made as probes dangle.
const PARENTS: &str = r#"
set -u
d=$(mktemp -d "$1/dircache.XXXXXX") || exit 9
check() { if [ -e "$1" ] || [ -L "$1" ]; then echo "$2 yes"; else echo "$2 no"; fi; }
mkdir "$d/real" "$d/other"
ln -s real "$d/link"
ln -s x "$d/link/a"
check "$d/real/a" made-through-link
rm "$d/link"
ln -s other "$d/link"
ln -s x "$d/link/s"
check "$d/other/s" made-through-new-link
check "$d/real/s" made-through-old-link
mkdir "$d/link/b"
rmdir "$d/link/b"
check "$d/other/b" removed-through-new-link
# `$1` makes a non-directory at real/f (unseen), named `$2`: nothing can
# be made beneath it; then a directory takes its place, unseen, and can.
replaced() {
    "$1" "$d/real/f"
    ln -s x "$d/real/f/g" 2>/dev/null || echo "$2-is-no-parent"
    rm "$d/real/f"
    mkdir "$d/real/f"
    ln -s x "$d/real/f/g"
    check "$d/real/f/g" "made-in-$2-replaced"
}
replaced touch file
mkdir "$d/real/f/h"
rmdir "$d/real/f/h"
check "$d/real/f/h" removed-in-file-replaced
rm -r "$d/real/f"
replaced mkfifo fifo
mv "$d/link" "$d/moved"
check "$d/moved" link-renamed
rm -r "$d"
echo done
"#;

const PARENTS_EXPECTED: &str = "made-through-link yes
made-through-new-link yes
made-through-old-link no
removed-through-new-link no
file-is-no-parent
made-in-file-replaced yes
removed-in-file-replaced no
fifo-is-no-parent
made-in-fifo-replaced yes
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
/// a directory turned into a symlink to /proc/1. A file, a directory or a
/// FIFO made again in its place (all unseen: creat, mkdir and mknod pass
/// the filter) stays the kernel's.
const REPLACED: &str = r#"
import os, sys
def opened(path, flags=0):
    fd = os.open(path, os.O_RDONLY | flags)
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
plain(f"{d}/m"); os.unlink(f"{d}/m"); os.mkdir(f"{d}/m")
print("dir made", opened(f"{d}/m"))
plain(f"{d}/p"); os.unlink(f"{d}/p"); os.mkfifo(f"{d}/p")
print("fifo made", opened(f"{d}/p", os.O_NONBLOCK))
"#;

#[test]
fn remembered_plain_paths_replaced_unseen_are_served() {
    let out = Run::new(&["/usr/bin/python3", "-c", REPLACED, "/tmp/plain"])
        .supervised()
        .ok("supervised");
    let want =
        "served memfd\nsymlink memfd\nlink memfd\nrename memfd\ndir memfd\nrecreated kernel\n\
         dir made kernel\nfifo made kernel\n";
    assert_eq!(out.stdout, want, "{}", out.dump());
}
