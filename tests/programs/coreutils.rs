//! Coreutils natively and supervised: one shell script (ls -la, cat, cp -r,
//! mv, rm -r, find, stat, ln -s, readlink -f, mkdir -p, touch, chmod, du)
//! runs natively on one copy of a temp tree and under `supervisor run --rw` on
//! another; the printed outputs (paths normalised) and the resulting trees
//! must be equal.

use crate::common;
use common::*;
use std::path::Path;

const TOOLS: &[&str] = &[
    "ls", "cat", "cp", "mv", "rm", "find", "stat", "ln", "readlink", "mkdir", "touch", "chmod",
    "du", "sort",
];

/// Each step prints its command, its output (stderr merged) and its status.
/// Times are never printed except ones set with `touch -d`.
const SCRIPT: &str = r#"
set -u
cd "$1" || exit 99
step() { echo "== $*"; "$@" 2>&1; echo "rc=$?"; }
step mkdir -p src/a/b/c
step mkdir -p src/a/b/c
printf 'hello\n' > src/a/file1
printf 'world\n' > src/a/b/file2
printf '' > src/empty
step touch -d '2001-02-03 04:05:06' src/a/file1
step touch -d '2002-02-03 04:05:06' src/a/b/file2
step touch src/a/new_by_touch
step ln -s a/file1 src/link1
step ln -s ../nowhere src/dangling
step ln -s a src/dirlink
step ln -s x src/link1
step cat src/a/file1 src/link1 src/dirlink/b/file2
step cat src/nonexistent
step ls -la --time-style=+ src src/a
step ls -laR --time-style=+ src
step ls -lL --time-style=+ src
step cp -r src copy
step cp -a src copy_a
step cp src/a/file1 src/a/b/
step cp src src2
step mv copy/a copy/moved
step mv copy/link1 copy/link_renamed
step mv copy/moved/file1 copy/moved/b/c/
step mv copy/nonexistent copy/x
step find . -name 'file*'
step find src copy -type l
step find . -newer src/a/file1 -name 'file*'
step find . -type d -empty
step find copy -maxdepth 2
step stat -c '%n %s %F %a %h' src src/a src/a/file1 src/link1 src/dangling src/empty copy_a/a/file1
step stat -L -c '%n %s %F %a' src/link1 src/dirlink
step stat -c '%n %Y' src/a/file1 copy_a/a/file1
step stat -c '%n' src/nonexistent
step readlink src/link1
step readlink -f src/link1 src/dangling src/dirlink/b/../file1 src/a/../a/./b
step readlink -e src/dangling
step chmod 0600 src/a/file1
step chmod -R go-rwx copy
step chmod u+x,g+s src/a/b/file2
step chmod 755 src/nonexistent
step stat -c '%n %a' src/a/file1 src/a/b/file2 copy copy/moved copy/moved/b/file2
step du -s --apparent-size src copy copy_a
step du -a --apparent-size -b src
step rm src
step rm -r copy/moved
step rm -rf copy_a
step rm -r src/nonexistent
step rm src/dangling src/link1
step mkdir src
step ls -la --time-style=+ . src copy
step find . | sort
"#;

#[test]
fn coreutils_script_matches_native() {
    if let Some(t) = TOOLS.iter().find(|t| !have(t)) {
        skip!("`{t}` not installed");
    }
    let pair = Pair::new(|_| {});
    let run = |dir: &Path| Run::new(&["/bin/sh", "-c", SCRIPT, "sh", &dir.display().to_string()]);
    let native = run(&pair.a).native();
    let sup = run(&pair.b).rw(pair.base.path()).supervised();
    assert_eq!(native.code, Some(0), "natively:\n{}", native.dump());
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert!(
        sup.stderr.is_empty(),
        "supervised run printed on stderr:\n{}",
        sup.stderr
    );
    assert!(
        native.stdout.contains("rc=1"),
        "the error cases did not run:\n{}",
        native.stdout
    );
    assert_same(
        "coreutils script",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
    assert_same(
        "tree after coreutils",
        &snapshot_text(&pair.a),
        &snapshot_text(&pair.b),
    );
}

/// A larger copy: many files and nested directories through cp -r / rm -r,
/// compared by `find -printf` and by the trees.
#[test]
fn coreutils_bulk_copy_matches_native() {
    if let Some(t) = ["cp", "rm", "find", "sort"].iter().find(|t| !have(t)) {
        skip!("`{t}` not installed");
    }
    let fill = |root: &Path| {
        for i in 0..20 {
            let d = root.join(format!("src/d{i:02}/sub"));
            std::fs::create_dir_all(&d).unwrap();
            for j in 0..10 {
                std::fs::write(d.join(format!("f{j}")), format!("{i}-{j}\n").repeat(j + 1))
                    .unwrap();
            }
            std::os::unix::fs::symlink(
                format!("sub/f{}", i % 10),
                root.join(format!("src/d{i:02}/l")),
            )
            .unwrap();
        }
    };
    let pair = Pair::new(fill);
    let script = "cd \"$1\" && cp -r src dst && cp -a src dst2 && rm -r dst/d0* && \
                  find . -printf '%p %y %m %s %l\\n' | sort && du -s --apparent-size -b dst dst2";
    let run = |dir: &Path| Run::new(&["/bin/sh", "-c", script, "sh", &dir.display().to_string()]);
    let native = run(&pair.a).native().ok("native");
    let sup = run(&pair.b).rw(pair.base.path()).supervised();
    assert_eq!(sup.code, Some(0), "supervised:\n{}", sup.dump());
    assert_same(
        "bulk copy",
        &pair.norm(&native.stdout),
        &pair.norm(&sup.stdout),
    );
    assert_eq!(
        snapshot(&pair.a),
        snapshot(&pair.b),
        "trees differ after bulk copy"
    );
}
