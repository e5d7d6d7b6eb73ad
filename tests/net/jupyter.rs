//! A Jupyter kernel under the sandbox (issue 4, the hosted-notebook
//! user's case): `tests/net/jupyter_kernel.py` starts an ipykernel with
//! jupyter_client's KernelManager (ZeroMQ over tcp://127.0.0.1, five
//! ports), runs cells whose state carries over and one that raises,
//! interrupts a `time.sleep(60)` cell once it says it runs (SIGINT
//! through interrupt_kernel; ipykernel ignores SIGINT between cells) and
//! shuts the kernel down; the transcript must equal the native one.
//! Needs Debian's python3-ipykernel and python3-jupyter-client.

use crate::common;
use common::*;

const PY: &str = "/usr/bin/python3";
const KERNEL: &str = include_str!("jupyter_kernel.py");

fn have_jupyter() -> bool {
    let probe = Run::new(&[PY, "-c", "import jupyter_client, ipykernel"]).native();
    if probe.code != Some(0) {
        eprintln!("skipped: no python3-ipykernel/python3-jupyter-client");
        return false;
    }
    true
}

fn kernel_run() -> Run {
    Run::new(&[PY, "-c", KERNEL])
}

fn expect_transcript(native: &Out, sandboxed: &Out) {
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    native.assert_lines(&[
        "cell ('ok', [('stdout', '42\\n')], None)",
        "cell ('error', [], 'ZeroDivisionError')",
        "interrupted error [('stdout', 'sleeping\\n')] KeyboardInterrupt",
        "after interrupt ('ok', [('stdout', 'alive 20\\n')], None)",
        "shutdown False False",
        "done",
    ]);
}

#[test]
fn jupyter_kernel_matches_native() {
    if !have_jupyter() {
        return;
    }
    let run = kernel_run();
    let native = run.native().ok("native kernel");
    let mut isolated = run.clone();
    isolated.wrap = vec!["unshare".into(), "-n".into()];
    let sandboxed = isolated.supervised().ok("sandboxed kernel");
    expect_transcript(&native, &sandboxed);
}

#[test]
fn jupyter_kernel_as_unprivileged_user() {
    if !is_root() || !have_jupyter() {
        return;
    }
    let run = kernel_run().user(1001, 1001);
    let native = run.native().ok("native kernel as tester");
    let sandboxed = run.supervised().ok("sandboxed kernel as tester");
    expect_transcript(&native, &sandboxed);
}
