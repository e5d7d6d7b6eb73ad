//! Links the `supervisor` binary as a static PIE (PERFORMANCE.md,
//! "startcpu"): without the dynamic loader mapping libc and libgcc_s and
//! resolving their symbols, every run starts about 0.3 ms sooner, and the
//! binary stays position-independent (ASLR). Only the binary: the test and
//! bench executables stay dynamic.
//!
//! `-C target-feature=+crt-static` would say this to rustc, but cargo
//! applies such flags to every crate, proc macros too (which cannot be
//! built that way), unless a `--target` moves the output out of
//! `target/release`. So the link is asked for here: `-static-pie`, and a
//! directory searched before the system's whose `libc.so`, `libgcc_s.so`,
//! ... are link scripts naming the static archives (`libc.a`,
//! `libgcc_eh.a`, ...), so the `-lc -lgcc_s` rustc passes for a dynamic
//! link find those. Set `SUPERVISOR_DYNAMIC=1` to link dynamically; so
//! does a system without the static archives (with a warning).
//!
//! Also compiles `src/fast_client.c`, the pool's client on its fast path,
//! and makes its `sv_entry` the binary's entry point: it serves
//! `supervisor run --pool SOCKET [--] COMMAND...` before the C library
//! starts, and jumps to the C library's `_start` for anything else (the
//! file says why and how). The object must need no symbol but `_start`
//! (`nm -u`): anything else would be called before a static PIE is
//! relocated. Without a C compiler or `nm`, the binary keeps the C
//! library's entry (with a warning) and the Rust client serves every call.
//! The protocol's names and sizes it writes are the Rust client's: this
//! script writes them from `supervisor/src/pool/wire.rs` into
//! `pool_wire.h`, which the C file includes.

use std::env;
use std::fs;
use std::path::PathBuf;

/// The pool protocol's shared constants (compiled here as they are in
/// the supervisor crate; this script uses only the header).
#[allow(dead_code)]
#[path = "supervisor/src/pool/wire.rs"]
mod wire;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SUPERVISOR_DYNAMIC");
    println!("cargo:rerun-if-env-changed=CC");
    let linux_gnu = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu && env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        link_fast_client();
    }
    if !linux_gnu || env::var_os("SUPERVISOR_DYNAMIC").is_some() {
        return;
    }
    if let Some(missing) = STATIC_FOR.iter().find_map(|(_, a)| missing_archive(a)) {
        println!("cargo:warning=no {missing} (glibc's or gcc's static libraries): linking supervisor dynamically");
        return;
    }
    let dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("static");
    fs::create_dir_all(&dir).expect("creating the static link's directory");
    for (lib, archives) in STATIC_FOR {
        let script = format!("INPUT({archives})\n");
        fs::write(dir.join(format!("lib{lib}.so")), script).expect("writing a link script");
    }
    println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
    println!("cargo:rustc-link-arg-bins=-static-pie");
}

const FAST_CLIENT: &str = "src/fast_client.c";
/// The freestanding layer [`FAST_CLIENT`] includes.
const FAST_CLIENT_SYS: &str = "src/fast_client_sys.h";
const WIRE: &str = "supervisor/src/pool/wire.rs";

/// Compiles [`FAST_CLIENT`] (with [`WIRE`]'s header) and links it in as
/// the binary's entry point.
fn link_fast_client() {
    println!("cargo:rerun-if-changed={FAST_CLIENT}");
    println!("cargo:rerun-if-changed={FAST_CLIENT_SYS}");
    println!("cargo:rerun-if-changed={WIRE}");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out_dir.join("pool_wire.h"), wire::c_header()).expect("writing pool_wire.h");
    let out = out_dir.join("fast_client.o");
    let compiled = std::process::Command::new(&cc)
        .args([
            "-c",
            "-O2",
            "-fPIE",
            "-ffreestanding",
            "-fno-builtin",
            "-fno-stack-protector",
            "-fno-tree-loop-distribute-patterns",
            "-fvisibility=hidden",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(&out_dir)
        .arg("-o")
        .arg(&out)
        .arg(FAST_CLIENT)
        .status();
    if !compiled.is_ok_and(|s| s.success()) {
        println!("cargo:warning=could not compile {FAST_CLIENT} with {cc}: the pool's client runs without its fast path");
        return;
    }
    let Ok(listed) = std::process::Command::new("nm")
        .arg("-u")
        .arg(&out)
        .output()
    else {
        println!("cargo:warning=no nm to check {FAST_CLIENT}'s object: the pool's client runs without its fast path");
        return;
    };
    let needed: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .filter(|w| *w != "U" && *w != "_start")
        .map(str::to_string)
        .collect();
    assert!(
        listed.status.success() && needed.is_empty(),
        "{FAST_CLIENT} must call nothing before the C library starts, but its object needs {needed:?}"
    );
    println!("cargo:rustc-link-arg-bins={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Wl,--entry=sv_entry");
}

/// The first archive of `archives` (`-l:NAME ...`) the C compiler cannot
/// find: a system without glibc's static libraries links dynamically.
fn missing_archive(archives: &str) -> Option<String> {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    archives
        .split_whitespace()
        .filter_map(|a| a.strip_prefix("-l:"))
        .find(|name| {
            let found = std::process::Command::new(&cc)
                .arg(format!("-print-file-name={name}"))
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
            // An archive it cannot find comes back as the bare name.
            !found.is_ok_and(|path| path.contains('/'))
        })
        .map(str::to_string)
}

/// The libraries rustc names for a dynamic link, and the archives that
/// stand in for them (`-l:NAME` finds the file of that exact name on the
/// usual search path, after this directory).
const STATIC_FOR: [(&str, &str); 7] = [
    ("c", "-l:libc.a"),
    ("m", "-l:libm.a"),
    ("rt", "-l:librt.a"),
    ("dl", "-l:libdl.a"),
    ("util", "-l:libutil.a"),
    ("pthread", "-l:libpthread.a"),
    ("gcc_s", "-l:libgcc_eh.a -l:libgcc.a"),
];
