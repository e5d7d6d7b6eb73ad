//! The static loader: the foothold that gives statically linked guest
//! programs fast reads (docs/fast-reads.md, "Static programs").
//!
//! A static program loads no preload, so each of its plain read opens is
//! a serviced round trip. In a fenced guest whose command is a static ELF
//! (no `PT_INTERP`; static or static-pie, glibc's or musl's) the guest
//! starts `guest/static_loader.c` (with `static_loader_trap.c`) instead: `/etc/sandbox-static-loader
//! PROGRAM ARGV0 ARGS...`. The loader maps the program itself, stacks a
//! filter of its own that traps the program's unmarked plain read opens
//! (and the calls that must not break the route: signal masks and
//! actions, exec, readlink of `/proc/self/exe`), and its SIGSYS handler
//! makes each again with the fast-read mark, the preload's check
//! included. Go programs take the same route (docs/fast-reads.md, "Go
//! programs"): their runtime's own `syscall` instructions trap as a C
//! library's do.
//!
//! Every fenced view has the loader in its /etc, the host's directories'
//! and a `--rootfs` tree's (so every OCI container's) alike, and every
//! command starts through it when static: `run`'s own, the pool's late
//! one (the supervisor looks beneath the started sandbox's root) and an
//! exec request's (the helper looks in its own view: `exec_request.rs`).
//!
//! Owns: the loader's bytes, its place in the view's /etc, and which
//! programs start through it. Does not own: the filter's rule (the
//! policy table), writing /etc (`view.rs`, `rootfs.rs`), or the command's
//! PATH search (`exec.rs`), whose first regular candidate `musl.rs` finds.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::elf_fields::{u16_at, u32_at, u64_at};
use super::exec::ExecPlan;
use super::musl;

/// The loader, built by `sandbox/build.rs`; empty where it could not be
/// built (no C compiler), and then no command starts through it.
const LOADER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/static_loader"));

/// Its name in the view's /etc, and where the guest sees it.
pub const NAME: &str = "sandbox-static-loader";
const GUEST_PATH: &str = "/etc/sandbox-static-loader";
/// argv[0] of the loader when the supervisor starts it (the loader's
/// own exec of a program from a loaded one says `:nested`); with
/// `:no-rewrite`, the loader leaves the program's text as it is (and
/// passes that on to the programs it execs).
const FIRST_NAME: &str = "sandbox-static-loader";
const FIRST_NAME_NO_REWRITE: &str = "sandbox-static-loader:no-rewrite";

const PT_INTERP: u32 = 3;

/// Whether a launch can use the loader at all: it was built.
pub fn possible() -> bool {
    !LOADER.is_empty()
}

/// The /etc file that installs the loader: its name and bytes.
pub fn etc_file() -> (PathBuf, Vec<u8>) {
    (PathBuf::from(NAME), LOADER.to_vec())
}

/// Whether `/etc/<rel>` is a file the guest executes (the loader).
pub fn is_executable_etc_file(rel: &Path) -> bool {
    rel == Path::new(NAME)
}

/// What an executable is, for the loader's purposes.
#[derive(Debug, PartialEq, Eq)]
pub enum Program {
    /// A 64-bit little-endian x86_64 ELF program with no interpreter
    /// (glibc's or musl's `-static`, static Rust, Go): the loader takes it.
    Static,
    /// Anything else: a dynamic program (the preload's), a script, a
    /// malformed file.
    Other,
}

/// Whether `file` is a program the loader takes: a static ELF.
pub fn is_static(file: &File) -> bool {
    classify(file) == Program::Static
}

/// Makes `plan` start its command's program, found at `path` (beneath
/// the view's root), through the loader (`fast_reads::look` found it
/// static); `rewrite`: the loader rewrites the program's trapped open
/// sites into jumps to its trampolines (`SandboxConfig::rewrite_sites`).
pub fn start_through(plan: &mut ExecPlan, path: &Path, rewrite: bool) {
    let name = match rewrite {
        true => FIRST_NAME,
        false => FIRST_NAME_NO_REWRITE,
    };
    plan.run_through(GUEST_PATH, name, path);
}

/// What `file` is, read bounded and checked (the file may be a
/// stranger's): its ELF header and program headers.
pub fn classify(file: &File) -> Program {
    classify_checked(file).unwrap_or(Program::Other)
}

fn classify_checked(file: &File) -> Option<Program> {
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // \x7fELF, ELFCLASS64, ELFDATA2LSB, ET_EXEC or ET_DYN, x86_64.
    let e_type = u16_at(&header, 16)?;
    if header[..4] != *b"\x7fELF"
        || header[4] != 2
        || header[5] != 1
        || !(e_type == 2 || e_type == 3)
        || u16_at(&header, 18)? != 62
    {
        return Some(Program::Other);
    }
    if musl::interpreter(file).is_some() {
        return Some(Program::Other);
    }
    // Program headers: the loader takes at most 64 of 56 bytes each.
    let phnum = usize::from(u16_at(&header, 56)?);
    if u16_at(&header, 54)? != 56 || phnum == 0 || phnum > 64 {
        return Some(Program::Other);
    }
    let mut table = vec![0u8; 56 * phnum];
    file.read_exact_at(&mut table, u64_at(&header, 32)?).ok()?;
    if table
        .chunks_exact(56)
        .any(|ph| u32_at(ph, 0) == Some(PT_INTERP))
    {
        return Some(Program::Other);
    }
    Some(Program::Static)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The C source and the policy table agree on the mark.
    #[test]
    fn the_mark_is_the_filters() {
        let source = include_str!("../../guest/static_loader.h");
        let mark = sandbox_syscalls::policy::FAST_READ_MARK;
        super::super::fast_reads::assert_c_defines(
            "static_loader.h",
            source,
            "FAST_READ_MARK",
            mark,
        );
    }

    /// The loader is a static-pie with no relocations and no interpreter:
    /// it runs before anything could relocate it.
    #[test]
    fn the_loader_is_built_and_standalone() {
        assert!(possible(), "sandbox/build.rs built no loader");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, LOADER).unwrap();
        assert_eq!(classify(f.as_file()), Program::Static);
    }

    fn compiled(args: &[&str], source: &str) -> Option<File> {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("p.c");
        std::fs::write(&src, source).unwrap();
        let out = dir.path().join("p");
        let ok = Command::new("cc")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .ok()?
            .success();
        ok.then(|| File::open(&out).unwrap())
    }

    #[test]
    fn tells_static_from_dynamic_and_other_files() {
        let main = "int main(void) { return 0; }\n";
        let st = compiled(&["-static"], main).expect("cc -static");
        assert_eq!(classify(&st), Program::Static);
        let dynamic = compiled(&[], main).expect("cc");
        assert_eq!(classify(&dynamic), Program::Other);
        let mut script = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut script, b"#!/bin/sh\n").unwrap();
        assert_eq!(classify(script.as_file()), Program::Other);
    }

    /// A static file with a section named as Go names its build id is
    /// taken as any static program is: Go programs start through the
    /// loader (tests/fs/static_reads.rs runs a real one).
    #[test]
    fn takes_go_programs_as_static() {
        let go = "__attribute__((section(\".note.go.buildid\"), used)) static const char id[] = \"x\";\n\
                  int main(void) { return 0; }\n";
        let f = compiled(&["-static"], go).expect("cc -static");
        assert_eq!(classify(&f), Program::Static);
    }
}
