//! Builds the guest's preload, `guest/fast_reads.c`, into
//! `$OUT_DIR/fast_reads.so`, which `src/launch/fast_reads.rs` embeds.
//!
//! The library must load under any x86_64 glibc or musl a `--rootfs`
//! tree may have: no start files, no C library but the symbols it names
//! (`__errno_location` and `fdopen`, which both export, versioned
//! GLIBC_2.2.5 for glibc, whose versions musl's loader ignores; glibc's
//! `_IO_fopen`, weakly, so that musl's loader leaves it NULL), no stack
//! protector or fortified calls that would pull in newer symbols. Without a C compiler
//! (or on another target) the file is left empty and the sandbox does
//! without fast reads (a warning says so).

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "guest/fast_reads.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=CC");
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("fast_reads.so");
    let x86_64_linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    if !x86_64_linux {
        fs::write(&out, b"").expect("writing an empty preload");
        return;
    }
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let built = Command::new(&cc)
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-Wall",
            "-Werror",
            "-fvisibility=hidden",
            "-fno-stack-protector",
            "-fno-builtin",
            "-U_FORTIFY_SOURCE",
            "-nostdlib",
            "-Wl,-z,noexecstack",
            "-Wl,-z,now",
            "-Wl,--hash-style=both",
            "-Wl,--as-needed",
            "-s",
            "-Wl,-z,noseparate-code",
            "-o",
        ])
        .arg(&out)
        .arg(SOURCE)
        .arg("-lc")
        .status();
    match built {
        Ok(s) if s.success() => {}
        other => {
            println!(
                "cargo:warning=could not build {SOURCE} with {cc} ({other:?}): the sandbox runs without fast reads"
            );
            fs::write(&out, b"").expect("writing an empty preload");
        }
    }
}
