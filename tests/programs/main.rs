//! Whole programs natively and supervised, with outputs and resulting
//! trees compared: coreutils, Python (the standard library on a `--rw`
//! tree, sqlite3, subprocess, multiprocessing), and everyday tools that
//! size or describe themselves from /proc (ps, top, psutil, pip, venv),
//! JIT compilers (Node, the JVM), and threads (glibc's fallback from
//! `clone3`, which the filter answers itself).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod coreutils;
mod jit;
mod python;
mod stdio;
mod stdio_files;
mod threads;
mod tools;
