//! Programs that generate code as they run (issue 36's JIT item): Node's
//! V8 and the JVM's HotSpot compile a hot loop of 3,000 file reads to
//! machine code, natively and supervised, and print the same. Both are
//! dynamic programs, so they never start through the static loader (only
//! a command with no ELF interpreter does, docs/fast-reads.md): their C
//! library's opens take the preload, and the code they generate is left
//! as written by rule, which each checks by finding no loader in its
//! `/proc/self/maps`. (The loader's own rule for code outside a static
//! program's mapped text, JIT code in an anonymous page, is checked in
//! `tests/fs/trampoline_hostile.rs`.) `.ci/run` installs nodejs and
//! openjdk-17-jdk-headless for these; without them the tests fail.

use crate::common;
use common::*;

const NODE: &str = r#"
const fs = require("fs");
let ok = true;
for (let i = 0; i < 3000; i++) ok = ok && fs.readFileSync(process.argv[1], "utf8") === "text of a\n";
const maps = fs.readFileSync("/proc/self/maps", "utf8");
console.log("3000 reads: " + ok);
console.log("static loader mapped: " + maps.includes("sandbox-static-loader"));
"#;

const JAVA: &str = r#"
import java.nio.file.*;
public class Reads {
    public static void main(String[] args) throws Exception {
        Path p = Paths.get(args[0]);
        boolean ok = true;
        for (int i = 0; i < 3000; i++) ok &= Files.readString(p).equals("text of a\n");
        String maps = Files.readString(Paths.get("/proc/self/maps"));
        System.out.println("3000 reads: " + ok);
        System.out.println("static loader mapped: " + maps.contains("sandbox-static-loader"));
    }
}
"#;

/// Runs `argv` (then DIR/`script_name` holding `script`, unless the name
/// is empty, then DIR/a) natively and supervised: the same output, its
/// reads right, no loader.
fn same_as_native(tool: &str, script_name: &str, script: &str, argv: &[&str]) {
    assert!(
        have(tool),
        "no {tool} (.ci/run installs nodejs and openjdk-17-jdk-headless)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a"), "text of a\n").expect("write");
    let script_path = dir.path().join(script_name).display().to_string();
    let mut args: Vec<&str> = argv.to_vec();
    if !script_name.is_empty() {
        std::fs::write(&script_path, script).expect("write");
        args.push(&script_path);
    }
    let a = dir.path().join("a").display().to_string();
    args.push(&a);
    let run = Run::new(&args).rw(dir.path());
    let native = run.native().ok("native");
    let supervised = run.supervised().ok("supervised");
    native.assert_lines(&["3000 reads: true", "static loader mapped: false"]);
    assert_eq!(supervised.stdout, native.stdout, "{}", supervised.dump());
}

#[test]
fn node_jit_reads_as_natively_unpatched() {
    same_as_native("node", "", "", &["node", "-e", NODE]);
}

#[test]
fn jvm_jit_reads_as_natively_unpatched() {
    same_as_native("java", "Reads.java", JAVA, &["java"]);
}
