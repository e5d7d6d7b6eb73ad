//! Whole programs natively and supervised, with outputs and resulting
//! trees compared: coreutils, Python (the standard library on a `--rw`
//! tree, sqlite3, subprocess, multiprocessing), and everyday tools that
//! size or describe themselves from /proc (ps, top, psutil, pip, venv),
//! and JIT compilers (Node, the JVM).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod coreutils;
mod jit;
mod python;
mod tools;
