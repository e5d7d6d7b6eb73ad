//! `regex`, answered by `regex-lite`: the workspace's `[patch.crates-io]`
//! puts this crate in place of the real `regex` for every dependency.
//!
//! Why: `oci-spec` needs `regex` (with its default features) for one
//! pattern, `execCPUAffinity`'s `^(\d+(-\d+)?)(,\d+(-\d+)?)*$`, and those
//! default features bring `regex-syntax`'s Unicode tables: 190 KiB of
//! `&str` and slice pointers in `.data.rel.ro`, two thirds of the
//! binary's. A static PIE relocates every one of them when it starts, so
//! each start of `supervisor` (every run, every pooled client) paid about
//! 47 copy-on-write page faults and 0.1 ms for tables it never reads
//! (PERFORMANCE.md, 2026-12-01). `regex-lite` (same author, same API for
//! what is used here: `Regex`, `RegexBuilder`, `Captures`, `is_match`)
//! has no such tables; its `\d` is ASCII, which is what a CPU list is.
//!
//! What it does not own: any pattern of ours (the workspace has none);
//! only `oci-spec` and `criterion` (bench filters) link it.

pub use regex_lite::*;
