//! Fast reads: the guest's preload that lets its plain read opens pass
//! the filter (docs/fast-reads.md).
//!
//! The filter traps every plain read open, since one of the sandbox's
//! own /proc files may be the answer; most are of the guest's libraries
//! and data, which the handler only resolves and CONTINUEs (a round
//! trip, ~10 µs against ~2 µs natively; sqlite opens its directory to
//! fsync it at every commit). A fenced guest gets `guest/fast_reads.c`
//! as a preload: its open family (and fopen in a read mode) marks the
//! call ([`sandbox_syscalls::policy::FAST_READ_MARK`]), the filter lets
//! it pass, and whatever turns out to be procfs's or a cover's is opened
//! again unmarked, for the supervisor to serve. One build of the library
//! serves glibc and musl programs.
//!
//! How it reaches a process: glibc's loader maps what the view's
//! `/etc/ld.so.preload` names (no environment variable shows or drops
//! it); musl's loader reads no such list, only `LD_PRELOAD`, so a
//! command that is a musl program (`musl.rs`) starts with
//! `LD_PRELOAD` naming the library, which its children inherit.
//!
//! Which roots: the host's directories always; a `--rootfs` tree (every
//! OCI bundle's root is one) when it has a dynamic loader, glibc's or
//! musl's: the library goes into its /etc, and, for glibc, a preload list
//! that names it first and then the tree's own entries, read beneath the
//! tree (`RESOLVE_IN_ROOT`: a symlink of the tree never leads into the
//! host). A tree without a loader (static programs only) is shown as it
//! is.
//!
//! Owns: the library's bytes, when a launch gets it, the /etc files that
//! install it and the environment entry of a musl command. Does not own:
//! the filter's rule (the policy table), writing /etc (`view.rs`,
//! `rootfs.rs`), or the fence (`sys/landlock.rs`).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::exec::{self, ExecPlan};
use super::musl;
use crate::sys::fd::open_in_root;

/// The preload, built by `sandbox/build.rs`; empty where it could not
/// be built (no C compiler), and then no launch gets fast reads.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fast_reads.so"));

/// Its name in the view's /etc, and the line of `/etc/ld.so.preload`.
const NAME: &str = "sandbox-fast-reads.so";
const PRELOAD_LIST: &str = "ld.so.preload";
/// Where the guest sees the library: the preload list's line, and the
/// value of a musl command's `LD_PRELOAD`.
const GUEST_PATH: &str = "/etc/sandbox-fast-reads.so";
/// The dynamic loaders whose presence in a tree gets it the library:
/// glibc's (which reads the preload list), musl's (which reads
/// `LD_PRELOAD`).
const GLIBC_LOADER: &str = "/lib64/ld-linux-x86-64.so.2";
const MUSL_LOADER: &str = "/lib/ld-musl-x86_64.so.1";
/// The longest preload list of a tree that is carried over.
const MAX_TREE_LIST: u64 = 64 * 1024;

/// Whether a launch can get the preload at all: the library was built.
pub fn possible() -> bool {
    !LIBRARY.is_empty()
}

/// The /etc files that install the preload in the view whose root is
/// `rootfs` (None: the host's directories): the library, and the preload
/// list naming it first, then the root's own entries (the view shows
/// this list instead of the root's). A tree without glibc's loader gets
/// no list, and one with no loader at all nothing.
pub fn etc_files(rootfs: Option<&Path>) -> Vec<(PathBuf, Vec<u8>)> {
    let own_list = match rootfs {
        None => Some(fs::read(Path::new("/etc").join(PRELOAD_LIST)).unwrap_or_default()),
        Some(tree) => {
            let Ok(root) = open_dir(tree) else {
                return Vec::new();
            };
            let has = |loader: &str| open_in_root(root.as_fd(), Path::new(loader), OFlag::O_PATH);
            match (has(GLIBC_LOADER).is_ok(), has(MUSL_LOADER).is_ok()) {
                (true, _) => Some(tree_list(root.as_fd())),
                (false, true) => None,
                (false, false) => return Vec::new(),
            }
        }
    };
    let mut files = vec![(PathBuf::from(NAME), LIBRARY.to_vec())];
    if let Some(own) = own_list {
        let mut list = format!("{GUEST_PATH}\n").into_bytes();
        list.extend_from_slice(&own);
        files.push((PathBuf::from(PRELOAD_LIST), list));
    }
    files
}

/// The tree's own /etc/ld.so.preload, read beneath the tree: empty when
/// it has none, or it is not a regular file, or longer than
/// [`MAX_TREE_LIST`]. A list not ending in a newline gets one.
fn tree_list(root: BorrowedFd<'_>) -> Vec<u8> {
    let path = Path::new("/etc").join(PRELOAD_LIST);
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let Ok(file) = open_in_root(root, &path, flags).map(File::from) else {
        return Vec::new();
    };
    if !file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() <= MAX_TREE_LIST)
    {
        return Vec::new();
    }
    let mut list = Vec::new();
    if file.take(MAX_TREE_LIST).read_to_end(&mut list).is_err() {
        return Vec::new();
    }
    if list.last().is_some_and(|&b| b != b'\n') {
        list.push(b'\n');
    }
    list
}

fn open_dir(path: &Path) -> nix::Result<OwnedFd> {
    crate::sys::fd::open_at(
        None,
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY,
        nix::sys::stat::Mode::empty(),
    )
}

/// Readies `plan`'s command for fast reads from one look at the program
/// it names beneath `rootfs` (None: the host's), relative names taken
/// from `workdir`: a musl program gets the environment entry
/// `LD_PRELOAD=/etc/sandbox-fast-reads.so` (an environment that has
/// `LD_PRELOAD` already keeps it as it is), and where `loader` is given, a
/// static one starts through the static loader (`static_loader.rs`).
pub fn ready_command(
    plan: &mut ExecPlan,
    rootfs: Option<&Path>,
    workdir: &Path,
    loader: Option<super::static_loader::Loader>,
) {
    let Ok(root) = open_dir(rootfs.unwrap_or(Path::new("/"))) else {
        return;
    };
    let Some((path, file)) =
        musl::first_program(root.as_fd(), plan.candidate_paths(), Some(workdir))
    else {
        return;
    };
    match musl::interpreter(&file) {
        Some(interp) if musl::names_musl_loader(&interp) => {
            plan.set_env_default("LD_PRELOAD", GUEST_PATH)
        }
        Some(_) => {}
        None => {
            if let Some(loader) = loader {
                loader.start_if_static(plan, &path, &file)
            }
        }
    }
}

/// `env` with `LD_PRELOAD` naming the library when `command` (searched
/// in `env`'s PATH, absolute names only) is a musl program beneath
/// `root`, the started sandbox's root; `None` when it needs nothing.
pub fn late_env(
    root: BorrowedFd<'_>,
    command: &[OsString],
    env: &[(OsString, OsString)],
) -> Option<Vec<(OsString, OsString)>> {
    let first = command.first()?;
    if env.iter().any(|(k, _)| k == "LD_PRELOAD") {
        return None;
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let candidates = exec::candidates(first, path);
    if !musl::is_musl_program(root, candidates.iter().map(PathBuf::as_path), None) {
        return None;
    }
    let mut with = env.to_vec();
    with.push(("LD_PRELOAD".into(), GUEST_PATH.into()));
    Some(with)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C source and the policy table agree on the mark.
    #[test]
    fn the_mark_is_the_filters() {
        let source = include_str!("../../guest/fast_reads.c");
        let mark = sandbox_syscalls::policy::FAST_READ_MARK;
        let line = format!("#define FAST_READ_MARK {mark:#x}UL");
        assert!(source.contains(&line), "fast_reads.c lacks `{line}`");
    }

    /// The library loads under any x86_64 glibc: it asks for no symbol
    /// version but GLIBC_2.2.5 (a newer one would make every exec under
    /// an older tree print a loader error).
    #[test]
    fn the_library_needs_only_the_oldest_glibc() {
        assert!(!LIBRARY.is_empty(), "sandbox/build.rs built no preload");
        let text = String::from_utf8_lossy(LIBRARY);
        let versions: Vec<&str> = text
            .match_indices("GLIBC_")
            .map(|(i, _)| {
                let tail = &text[i..];
                &tail[..tail
                    .find(|c: char| c != '_' && c != '.' && !c.is_ascii_alphanumeric())
                    .unwrap_or(tail.len())]
            })
            .collect();
        assert!(!versions.is_empty());
        assert!(versions.iter().all(|v| *v == "GLIBC_2.2.5"), "{versions:?}");
    }

    #[test]
    fn the_list_names_the_library_first() {
        let files = etc_files(None);
        assert_eq!(files[1].0, PathBuf::from("ld.so.preload"));
        assert!(files[1].1.starts_with(b"/etc/sandbox-fast-reads.so\n"));
        assert_eq!(files[0].1, LIBRARY);
        assert!(possible());
    }

    /// A tree gets the library when it has a loader, the list when that
    /// is glibc's: ours first, then the tree's entries, read beneath the
    /// tree (a symlink to the host's /etc/passwd reads the tree's).
    #[test]
    fn a_tree_gets_what_its_loader_reads() {
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        assert!(etc_files(Some(t)).is_empty(), "no loader, nothing");
        fs::create_dir_all(t.join("lib")).unwrap();
        fs::write(t.join("lib/ld-musl-x86_64.so.1"), "").unwrap();
        let files = etc_files(Some(t));
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, PathBuf::from(NAME));
        // glibc's loader through the tree's own lib64 -> lib link.
        std::os::unix::fs::symlink("lib", t.join("lib64")).unwrap();
        fs::write(t.join("lib/ld-linux-x86-64.so.2"), "").unwrap();
        fs::create_dir(t.join("etc")).unwrap();
        fs::write(t.join("etc/passwd"), "tree-passwd").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", t.join("etc/ld.so.preload")).unwrap();
        let files = etc_files(Some(t));
        assert_eq!(files[1].1, b"/etc/sandbox-fast-reads.so\ntree-passwd\n");
        fs::remove_file(t.join("etc/ld.so.preload")).unwrap();
        fs::create_dir(t.join("etc/ld.so.preload")).unwrap();
        let files = etc_files(Some(t));
        assert_eq!(files[1].1, b"/etc/sandbox-fast-reads.so\n");
    }
}
