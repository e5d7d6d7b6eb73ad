//! A static program as a pooled sandbox's late command (`run --pool`):
//! the supervisor looks at the program beneath the started sandbox's
//! root and has it start through the static loader, as a cold `run`'s
//! command does (`sandbox/src/launch/fast_reads.rs`): the same output as
//! natively (glibc's and musl's `-static` builds of
//! `tests/c/static_reads.c`), and its opens pass marked.

use crate::common;
use common::pool::Pool;
use common::*;

#[test]
fn a_pooled_static_program_matches_native_and_opens_fast() {
    if landlock_abi() < 1 {
        skip!("no Landlock: no fence, so no fast reads");
    }
    let progs = [c_static("cc"), c_static("musl-gcc")];
    let dir = Tree::new();
    fill_static_reads_dir(dir.path());
    let (c, d) = (c_dir().display(), dir.path().display());
    let pool = Pool::start(&["--ro", &format!("{c}:{c}"), "--ro", &format!("{d}:{d}")]);
    for prog in &progs {
        let run = Run::new(&[prog.as_os_str(), dir.path().as_os_str()]);
        let native = run.clone().native().ok("native");
        let rep = tempfile::NamedTempFile::new().expect("report file");
        let pooled = run
            .sup(&pool.flag())
            .sup(&["--report".to_string(), rep.path().display().to_string()])
            .supervised()
            .ok("pooled");
        assert_static_reads_as_native(&pooled.stdout, &native, &pooled.dump());
        let served = served_opens(rep.path());
        assert!(
            served < STATIC_READS_MAX_SERVED,
            "{}: {served} opens served in a pooled sandbox",
            prog.display()
        );
    }
}
