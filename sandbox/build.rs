//! Builds the guest's preload, `guest/fast_reads.c`,
//! `fast_reads_rewrite.c`, `fast_reads_next.c`, `socket_names.c`,
//! `socket_adopt.c` and `rewind_mark.c`, into
//! `$OUT_DIR/fast_reads.so`, which
//! `src/launch/fast_reads.rs` embeds, and the static loader,
//! `guest/static_loader.c`, `static_loader_trap.c`, `static_loader_mm.c`,
//! `static_loader_rewrite.c` and `static_loader_sites.c`, into
//! `$OUT_DIR/static_loader`, which `src/launch/static_loader.rs` embeds.
//! Both take `guest/site_patch.c`, the rewrite of glibc's
//! non-cancellable open that they share, and so does the dynamic
//! loader's trampoline, `guest/ldso_trampoline.c`, built into one flat
//! image linked at 0 (`guest/ldso_trampoline.ld`), `$OUT_DIR/ldso_trampoline`,
//! which `src/launch/ldso_patch.rs` embeds and writes into the guest's
//! copy of the loader.
//!
//! The library must load under any x86_64 glibc or musl a `--rootfs`
//! tree may have: no start files, no C library but the symbols it names
//! (`__errno_location`, `fdopen`, `fileno`, `dl_iterate_phdr`, `memchr` and
//! `strncmp`, which both export, versioned GLIBC_2.2.5 for glibc, whose
//! versions musl's loader ignores; glibc's
//! `_IO_fopen` and `__connect`, and `pthread_setcanceltype`, weakly, so
//! that musl's loader leaves the first two NULL and a glibc before 2.34
//! the third where libpthread is not loaded), no stack
//! protector or fortified calls that would pull in newer symbols; general
//! registers only, so that a rewritten site's call keeps the caller's
//! vector registers as a `syscall` does. Without a C compiler
//! (or on another target) the file is left empty and the sandbox does
//! without fast reads (a warning says so).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The preload's sources; the first names it in messages.
const SOURCES: [&str; 12] = [
    "guest/fast_reads.c",
    "guest/fast_reads_rewrite.c",
    "guest/site_patch.c",
    "guest/fast_reads_next.c",
    "guest/socket_names.c",
    "guest/socket_adopt.c",
    "guest/rewind_mark.c",
    "guest/fast_reads.h",
    "guest/site_patch.h",
    "guest/raw_syscall.h",
    "guest/spelled_off_proc.h",
    "guest/write_reopen.h",
];
/// The static loader's sources; the first names it in messages.
const LOADER_SOURCES: [&str; 10] = [
    "guest/static_loader.c",
    "guest/static_loader_trap.c",
    "guest/static_loader_mm.c",
    "guest/static_loader_rewrite.c",
    "guest/static_loader_sites.c",
    "guest/site_patch.c",
    "guest/static_loader.h",
    "guest/spelled_off_proc.h",
    "guest/write_reopen.h",
    "guest/raw_syscall.h",
];

/// The dynamic loader's trampoline's sources and linker script.
const LDSO_SOURCES: [&str; 6] = [
    "guest/ldso_trampoline.c",
    "guest/site_patch.c",
    "guest/ldso_trampoline.ld",
    "guest/site_patch.h",
    "guest/spelled_off_proc.h",
    "guest/raw_syscall.h",
];

/// The compiler flags of the freestanding guest code (the static loader,
/// the loader's trampoline): no C library, no TLS, no relocations, general
/// registers only, so that a rewritten site's call keeps the program's
/// vector registers as a `syscall` does.
const FREESTANDING: &[&str] = &[
    "-O2",
    "-Wall",
    "-Werror",
    "-ffreestanding",
    "-mgeneral-regs-only",
    "-fno-stack-protector",
    "-fno-builtin",
    "-fno-jump-tables",
    "-fno-asynchronous-unwind-tables",
    "-fvisibility=hidden",
    "-U_FORTIFY_SOURCE",
    "-fPIE",
];

fn main() {
    // The preload includes the headers it shares with the loader.
    println!("cargo:rerun-if-changed=guest/spelled_off_proc.h");
    for source in SOURCES.iter().chain(&LOADER_SOURCES).chain(&LDSO_SOURCES) {
        println!("cargo:rerun-if-changed={source}");
    }
    println!("cargo:rerun-if-env-changed=CC");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let x86_64_linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    build(
        x86_64_linux,
        &cc,
        &out_dir.join("fast_reads.so"),
        &SOURCES,
        &[
            "-shared",
            "-fPIC",
            "-O2",
            "-Wall",
            "-Werror",
            "-fvisibility=hidden",
            "-fno-stack-protector",
            "-fno-builtin",
            "-mgeneral-regs-only",
            "-U_FORTIFY_SOURCE",
            "-nostdlib",
            "-Wl,-z,noexecstack",
            "-Wl,-z,now",
            "-Wl,--hash-style=both",
            "-Wl,--as-needed",
            "-s",
            "-Wl,-z,noseparate-code",
        ],
        &["-lc"],
        "the sandbox runs without fast reads",
    );
    // The static loader: a freestanding static-pie with no relocations
    // (no pointer in its data, no jump tables), no C library, no TLS;
    // general registers only, so that the rewritten sites' calls into it
    // keep the program's vector registers as a `syscall` does.
    build(
        x86_64_linux,
        &cc,
        &out_dir.join("static_loader"),
        &LOADER_SOURCES,
        &[
            FREESTANDING,
            &[
                "-static-pie",
                "-nostdlib",
                "-Wl,-z,noexecstack",
                "-Wl,--no-dynamic-linker",
                "-s",
            ],
        ]
        .concat(),
        &[],
        "static programs run without fast reads",
    );
    // The loader's trampoline: freestanding like the static loader, linked
    // at 0 into one section (the script refuses data), then cut out flat.
    let elf = out_dir.join("ldso_trampoline.elf");
    let without = "the dynamic loader's own opens are served";
    build(
        x86_64_linux,
        &cc,
        &elf,
        &LDSO_SOURCES,
        &[
            FREESTANDING,
            &[
                "-ffunction-sections",
                "-nostdlib",
                "-static",
                "-Wl,--gc-sections",
                "-Wl,--build-id=none",
                "-Wl,-z,noexecstack",
                "-Wl,-T,guest/ldso_trampoline.ld",
            ],
        ]
        .concat(),
        &[],
        without,
    );
    flatten(&elf, &out_dir.join("ldso_trampoline"), without);
}

/// The `.tramp` section of `elf` as a flat image at `out`; an empty file
/// where `elf` is empty or objcopy fails.
fn flatten(elf: &Path, out: &Path, without: &str) {
    let empty = fs::metadata(elf).map_or(true, |m| m.len() == 0);
    let objcopy = env::var("OBJCOPY").unwrap_or_else(|_| "objcopy".to_string());
    let made = !empty
        && Command::new(&objcopy)
            .args(["-O", "binary", "-j", ".tramp"])
            .arg(elf)
            .arg(out)
            .status()
            .is_ok_and(|s| s.success());
    if !made {
        if !empty {
            println!("cargo:warning=could not cut the trampoline out with {objcopy}: {without}");
        }
        fs::write(out, b"").expect("writing an empty artefact");
    }
}

/// Builds the C files among `sources` into `out` with `cc` and `flags`
/// (the others are what they include or link by, watched for changes
/// alone); an empty file where that is impossible or fails (a warning
/// says what is lost).
fn build(
    x86_64_linux: bool,
    cc: &str,
    out: &Path,
    sources: &[&str],
    flags: &[&str],
    libs: &[&str],
    without: &str,
) {
    if !x86_64_linux {
        fs::write(out, b"").expect("writing an empty artefact");
        return;
    }
    let built = Command::new(cc)
        .args(flags)
        .arg("-o")
        .arg(out)
        .args(sources.iter().filter(|s| s.ends_with(".c")))
        .args(libs)
        .status();
    match built {
        Ok(s) if s.success() => {}
        other => {
            let source = sources[0];
            println!("cargo:warning=could not build {source} with {cc} ({other:?}): {without}");
            fs::write(out, b"").expect("writing an empty artefact");
        }
    }
}
