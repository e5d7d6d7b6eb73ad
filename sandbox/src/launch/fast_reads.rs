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
//! host). A tree without a loader (static programs only) gets neither.
//!
//! One look at the program a command names tells what it needs of what
//! the view offers ([`look`]): the preload's environment entry for a
//! musl program, the static loader (`static_loader.rs`) for a static
//! one; `run`'s command, a pool's late one and an exec request's alike.
//!
//! Owns: the library's bytes, when a launch gets it, the /etc files that
//! install it, the look at a command's program and what comes of it (the
//! environment entry of a musl command, a static one's start through the
//! loader). Does not own:
//! the filter's rule (the policy table), writing /etc (`view.rs`,
//! `rootfs.rs`), or the fence (`sys/landlock.rs`).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::exec::{self, ExecPlan};
use super::musl::{self, Lookup};
use super::static_loader;
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

/// The switch in the library's bytes (`guest/fast_reads.h`): the letter
/// after it is `1` as built (the preload rewrites the dynamic loader's and
/// the C library's own open sites), `0` in the copy a sandbox that keeps
/// its text as built gets (`SandboxConfig::rewrite_sites` off).
const REWRITE_SWITCH: &[u8] = b"sandbox-fast-reads:rewrite-sites=";

/// The library's bytes for a sandbox that rewrites its loader's and C
/// library's open sites (`rewrite`) or keeps them as built.
fn library(rewrite: bool) -> Vec<u8> {
    let mut bytes = LIBRARY.to_vec();
    if !rewrite {
        if let Some(at) = bytes
            .windows(REWRITE_SWITCH.len())
            .position(|w| w == REWRITE_SWITCH)
        {
            bytes[at + REWRITE_SWITCH.len()] = b'0';
        }
    }
    bytes
}

/// Whether a launch can get the preload at all: the library was built.
pub fn possible() -> bool {
    !LIBRARY.is_empty()
}

/// The /etc files that install the preload in the view whose root is
/// `rootfs` (None: the host's directories): the library, and the preload
/// list naming it first, then the root's own entries (the view shows
/// this list instead of the root's). A tree without glibc's loader gets
/// no list, and one with no loader at all nothing. `rewrite`: the
/// library rewrites the dynamic loader's and the C library's own open
/// sites ([`library`]).
pub fn etc_files(rootfs: Option<&Path>, rewrite: bool) -> Vec<(PathBuf, Vec<u8>)> {
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
    let mut files = vec![(PathBuf::from(NAME), library(rewrite))];
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

/// What a view offers a command for fast reads: the library, which a
/// musl command is told of in its environment, and the static loader,
/// which a static command starts through. Decided at launch; a late
/// command (the pool's) and an exec request's are readied with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// The view's /etc has the library.
    pub preload: bool,
    /// The view's /etc has the static loader.
    pub loader: bool,
    /// The loader rewrites a static program's trapped open sites
    /// (`SandboxConfig::rewrite_sites`).
    pub rewrite: bool,
}

impl Offered {
    pub fn any(self) -> bool {
        self.preload || self.loader
    }
}

/// What one command's program needs, from one look at it.
#[derive(Debug, PartialEq, Eq)]
pub enum Readying {
    /// A musl program: `LD_PRELOAD` naming the library.
    Preload,
    /// A static program (Go's included): started through the loader, found at
    /// this path.
    Loader(PathBuf),
    /// Anything else: a glibc program (the preload list reaches it), a
    /// script, nothing found.
    Nothing,
}

/// Looks once at the program the command's `candidates` name (the first
/// regular file where `lookup` looks, relative names taken from
/// `workdir`), and says what it needs of what the view `offers`.
pub fn look<'a>(
    lookup: Lookup<'_>,
    candidates: impl IntoIterator<Item = &'a Path>,
    workdir: Option<&Path>,
    offers: Offered,
) -> Readying {
    if !offers.any() {
        return Readying::Nothing;
    }
    let Some((path, file)) = musl::first_program(lookup, candidates, workdir) else {
        return Readying::Nothing;
    };
    match musl::interpreter(&file) {
        Some(interp) if offers.preload && musl::names_musl_loader(&interp) => Readying::Preload,
        Some(_) => Readying::Nothing,
        None if offers.loader && static_loader::is_static(&file) => Readying::Loader(path),
        None => Readying::Nothing,
    }
}

impl Readying {
    /// Makes `plan` what the program needs: a musl program gets the
    /// environment entry `LD_PRELOAD=/etc/sandbox-fast-reads.so` (an
    /// environment that has `LD_PRELOAD` already keeps it as it is), a
    /// static one starts through the loader.
    /// `rewrite`: the loader rewrites its trapped open sites.
    pub fn apply(&self, plan: &mut ExecPlan, rewrite: bool) {
        match self {
            Readying::Preload => plan.set_env_default("LD_PRELOAD", GUEST_PATH),
            Readying::Loader(path) => static_loader::start_through(plan, path, rewrite),
            Readying::Nothing => {}
        }
    }

    /// `env` with `LD_PRELOAD` naming the library for a musl program
    /// whose environment has none; `None` when it stays as it is.
    pub fn env(&self, env: &[(OsString, OsString)]) -> Option<Vec<(OsString, OsString)>> {
        if *self != Readying::Preload || env.iter().any(|(k, _)| k == "LD_PRELOAD") {
            return None;
        }
        let mut with = env.to_vec();
        with.push(("LD_PRELOAD".into(), GUEST_PATH.into()));
        Some(with)
    }

    /// The program to start through the loader, if any.
    pub fn through_loader(&self) -> Option<&Path> {
        match self {
            Readying::Loader(path) => Some(path),
            _ => None,
        }
    }
}

/// Readies `plan`'s command from one look at the program it names
/// beneath `rootfs` (None: the host's), relative names taken from
/// `workdir` ([`look`], [`Readying::apply`]).
pub fn ready_command(plan: &mut ExecPlan, rootfs: Option<&Path>, workdir: &Path, offers: Offered) {
    let Ok(root) = open_dir(rootfs.unwrap_or(Path::new("/"))) else {
        return;
    };
    look(
        Lookup::Beneath(root.as_fd()),
        plan.candidate_paths(),
        Some(workdir),
        offers,
    )
    .apply(plan, offers.rewrite);
}

/// What a late command (argv and environment as the pool's client sent
/// them) needs, looked up beneath `root`, the started sandbox's root:
/// its PATH searched as execvp searches it, absolute names only (the
/// guest's working directory is not the supervisor's).
pub fn late_readying(
    root: BorrowedFd<'_>,
    command: &[OsString],
    env: &[(OsString, OsString)],
    offers: Offered,
) -> Readying {
    let Some(first) = command.first() else {
        return Readying::Nothing;
    };
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let candidates = exec::candidates(first, path);
    look(
        Lookup::Beneath(root),
        candidates.iter().map(PathBuf::as_path),
        None,
        offers,
    )
}

/// Asserts that the C source `source` (of `file`) defines `name` as
/// `value`, as `#define NAME 0x…UL`: the guest's side of a constant the
/// supervisor's side also holds (a test helper).
#[cfg(test)]
pub(super) fn assert_c_defines(file: &str, source: &str, name: &str, value: u64) {
    let line = format!("#define {name} {value:#x}UL");
    assert!(source.contains(&line), "{file} lacks `{line}`");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C source and the policy table agree on the mark.
    #[test]
    fn the_mark_is_the_filters() {
        let mark = sandbox_syscalls::policy::FAST_READ_MARK;
        let source = include_str!("../../guest/fast_reads.c");
        assert_c_defines("fast_reads.c", source, "FAST_READ_MARK", mark);
        let source = include_str!("../../guest/rewind_mark.c");
        assert_c_defines("rewind_mark.c", source, "FAST_READ_MARK", mark);
    }

    /// The C source and the accept handler agree on the name note's mark
    /// and size.
    #[test]
    fn the_name_note_is_the_handlers() {
        let source = include_str!("../../guest/socket_names.c");
        let mark = sandbox_syscalls::handlers::NAME_NOTE_MARK;
        assert_c_defines("socket_names.c", source, "NAME_NOTE_MARK", mark);
        let nodelay = sandbox_syscalls::policy::NODELAY_MARK;
        assert_c_defines("socket_names.c", source, "NODELAY_MARK", nodelay);
        let in_progress = sandbox_syscalls::handlers::CONNECT_IN_PROGRESS;
        assert_c_defines("socket_names.c", source, "IN_PROGRESS", in_progress);
        let note = "unsigned long ino;\n    unsigned int len;\n    unsigned int pad;\n    unsigned long name[4];";
        assert!(
            source.contains(note),
            "socket_names.c's struct note changed"
        );
        assert_eq!(sandbox_syscalls::handlers::NOTE_LEN, 8 + 4 + 4 + 32);
    }

    /// The C source and the socket handler agree on the adoption mark.
    #[test]
    fn the_adoption_mark_is_the_handlers() {
        let source = include_str!("../../guest/socket_adopt.c");
        let mark = sandbox_syscalls::handlers::ADOPT_MARK;
        assert_c_defines("socket_adopt.c", source, "ADOPT_MARK", mark);
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

    /// The switch is in the library once, on as built, and off in the
    /// copy of a sandbox that keeps its text.
    #[test]
    fn the_rewrite_switch_is_found() {
        let header = include_str!("../../guest/fast_reads.h");
        let switch = std::str::from_utf8(REWRITE_SWITCH).unwrap();
        assert!(header.contains(&format!("#define REWRITE_SWITCH \"{switch}\"")));
        let on: Vec<u8> = [REWRITE_SWITCH, b"1"].concat();
        let off: Vec<u8> = [REWRITE_SWITCH, b"0"].concat();
        let count =
            |bytes: &[u8], what: &[u8]| bytes.windows(what.len()).filter(|w| *w == what).count();
        assert_eq!(count(&library(true), &on), 1);
        assert_eq!(count(&library(false), &off), 1);
        assert_eq!(count(&library(false), &on), 0);
        assert_eq!(library(false).len(), LIBRARY.len());
    }

    #[test]
    fn the_list_names_the_library_first() {
        let files = etc_files(None, true);
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
        assert!(etc_files(Some(t), true).is_empty(), "no loader, nothing");
        fs::create_dir_all(t.join("lib")).unwrap();
        fs::write(t.join("lib/ld-musl-x86_64.so.1"), "").unwrap();
        let files = etc_files(Some(t), true);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, PathBuf::from(NAME));
        // glibc's loader through the tree's own lib64 -> lib link.
        std::os::unix::fs::symlink("lib", t.join("lib64")).unwrap();
        fs::write(t.join("lib/ld-linux-x86-64.so.2"), "").unwrap();
        fs::create_dir(t.join("etc")).unwrap();
        fs::write(t.join("etc/passwd"), "tree-passwd").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", t.join("etc/ld.so.preload")).unwrap();
        let files = etc_files(Some(t), true);
        assert_eq!(files[1].1, b"/etc/sandbox-fast-reads.so\ntree-passwd\n");
        fs::remove_file(t.join("etc/ld.so.preload")).unwrap();
        fs::create_dir(t.join("etc/ld.so.preload")).unwrap();
        let files = etc_files(Some(t), true);
        assert_eq!(files[1].1, b"/etc/sandbox-fast-reads.so\n");
    }

    /// One look tells a static program (through the loader, when the view
    /// offers it), a musl one (the preload, when offered) and anything
    /// else apart, beneath a tree (a symlink of the tree resolved inside
    /// it) and in the caller's own view alike.
    #[test]
    fn a_look_says_what_the_program_needs() {
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        fs::create_dir_all(t.join("bin")).unwrap();
        let src = t.join("p.c");
        fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let ok = std::process::Command::new("cc")
            .args(["-static", "-o"])
            .arg(t.join("bin/st"))
            .arg(&src)
            .status()
            .expect("cc -static");
        assert!(ok.success());
        fs::write(t.join("bin/script"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("/bin/st", t.join("bin/link")).unwrap();
        let root = open_dir(t).unwrap();
        let all = Offered {
            preload: true,
            loader: true,
            rewrite: true,
        };
        let beneath = |name: &str, offers| {
            look(
                Lookup::Beneath(root.as_fd()),
                [Path::new(name)],
                Some(Path::new("/bin")),
                offers,
            )
        };
        let st = PathBuf::from("/bin/st");
        assert_eq!(beneath("/bin/st", all), Readying::Loader(st.clone()));
        assert_eq!(
            beneath("/bin/link", all),
            Readying::Loader("/bin/link".into())
        );
        assert_eq!(beneath("st", all), Readying::Loader(st.clone()));
        assert_eq!(beneath("/bin/script", all), Readying::Nothing);
        assert_eq!(beneath("/bin/none", all), Readying::Nothing);
        let no_loader = Offered {
            loader: false,
            ..all
        };
        assert_eq!(beneath("/bin/st", no_loader), Readying::Nothing);
        let own = t.join("bin/st");
        assert_eq!(
            look(Lookup::OwnView, [own.as_path()], None, all),
            Readying::Loader(own.clone())
        );
        let mut plan = ExecPlan::new(&[own.clone().into_os_string()], &[]).unwrap();
        Readying::Loader(own.clone()).apply(&mut plan, true);
        assert_eq!(
            plan.started_through(),
            Some(Path::new("/etc/sandbox-static-loader"))
        );
    }

    /// A musl command's environment gains `LD_PRELOAD`, unless it has one.
    #[test]
    fn the_preload_keeps_an_environments_own() {
        let env = vec![("PATH".into(), "/bin".into())];
        let with = Readying::Preload.env(&env).unwrap();
        assert_eq!(with[1], ("LD_PRELOAD".into(), GUEST_PATH.into()));
        assert_eq!(Readying::Preload.env(&with), None);
        assert_eq!(Readying::Nothing.env(&env), None);
        assert_eq!(
            Readying::Loader("/p".into()).through_loader(),
            Some(Path::new("/p"))
        );
    }
}
