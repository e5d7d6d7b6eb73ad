//! Fast reads: the guest's preload that lets its plain read opens pass
//! the filter (docs/fast-reads.md).
//!
//! The filter traps every plain read open, since one of the sandbox's
//! own /proc files may be the answer; most are of the guest's libraries
//! and data, which the handler only resolves and CONTINUEs (a round
//! trip, ~10 µs against ~2 µs natively; sqlite opens its directory to
//! fsync it at every commit). A fenced guest gets `guest/fast_reads.c`
//! as a preload (the view's `/etc/ld.so.preload` names it, so no
//! environment variable shows or drops it): its open family (and fopen
//! in a read mode) marks the call
//! ([`sandbox_syscalls::policy::FAST_READ_MARK`]), the filter lets it
//! pass, and whatever turns out to be procfs's or a cover's is opened
//! again unmarked, for the supervisor to serve.
//!
//! Owns: the library's bytes, when a launch gets it, and the /etc files
//! that install it. Does not own: the filter's rule (the policy table),
//! writing /etc (`view.rs`, `rootfs.rs`), or the fence (`sys/landlock.rs`).

use std::fs;
use std::path::{Path, PathBuf};

/// The preload, built by `sandbox/build.rs`; empty where it could not
/// be built (no C compiler), and then no launch gets fast reads.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fast_reads.so"));

/// Its name in the view's /etc, and the line of `/etc/ld.so.preload`.
const NAME: &str = "sandbox-fast-reads.so";
const PRELOAD_LIST: &str = "ld.so.preload";

/// Whether a launch with `rootfs` (None: the host's directories) can get
/// the preload: the library was built, and the view is the host's. A
/// `--rootfs` tree is the user's image, shown as it is: its C library may
/// not be glibc, and its own preload list would have to be read and
/// extended, through symlinks that could lead into the host. The OCI
/// runtime's view is always the bundle's tree (`supervisor/src/oci/bundle.rs`), so an
/// image gets no preload either, and its /etc stays the engine's to show.
pub fn possible(rootfs: Option<&Path>) -> bool {
    !LIBRARY.is_empty() && rootfs.is_none()
}

/// The /etc files that install the preload: the library, and the preload
/// list naming it first, then the host's own entries (the view shows
/// this list instead of the host's).
pub fn etc_files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut list = format!("/etc/{NAME}\n").into_bytes();
    if let Ok(host) = fs::read(Path::new("/etc").join(PRELOAD_LIST)) {
        list.extend_from_slice(&host);
    }
    vec![
        (PathBuf::from(NAME), LIBRARY.to_vec()),
        (PathBuf::from(PRELOAD_LIST), list),
    ]
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
        let files = etc_files();
        assert_eq!(files[1].0, PathBuf::from("ld.so.preload"));
        assert!(files[1].1.starts_with(b"/etc/sandbox-fast-reads.so\n"));
        assert_eq!(files[0].1, LIBRARY);
        assert!(possible(None) && !possible(Some(Path::new("/"))));
    }
}
