//! Launches one sandbox, without the notification loop, and reports how
//! it ended: a manual check of `sandbox::launch` alone.
//!
//! ```text
//! cargo run -p sandbox-engine --example launch -- [--ro SPEC] [--rw SPEC] [--tmpfs SPEC]
//!     [--workdir DIR] [--hostname NAME] [--disk SIZE] [--real-filter] [--repeat N] -- CMD [ARGS...]
//! ```
//!
//! The filter allows every call unless `--real-filter` is given; with the
//! real policy only programs that make no serviced call can run here
//! (nothing answers the notifications). The guest's environment is PATH,
//! HOME and TERM of the host. `--repeat N` runs the command N times and
//! prints the mean time of launch + start + wait.

use std::ffi::OsString;
use std::process::exit;
use std::time::Instant;

use sandbox::launch::{allow_all_filter, launch, LaunchConfig, LaunchError, Outcome};
use vfs::mounts::{parse_size, MountSpec};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut cfg = LaunchConfig::new(Vec::new(), allow_all_filter());
    let mut repeat = 1u32;
    cfg.env = ["PATH", "HOME", "TERM"]
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let mut value = || {
            args.next()
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_else(|| usage(&arg))
        };
        let parsed = match arg.as_str() {
            "--" => break,
            "--ro" => MountSpec::parse_ro(&value()).map(|m| cfg.mounts.push(m)),
            "--rw" => MountSpec::parse_rw(&value()).map(|m| cfg.mounts.push(m)),
            "--tmpfs" => MountSpec::parse_tmpfs(&value()).map(|m| cfg.mounts.push(m)),
            "--disk" => parse_size(&value()).map(|s| cfg.disk_size = s),
            "--workdir" => {
                cfg.workdir = Some(value().into());
                Ok(())
            }
            "--hostname" => {
                cfg.hostname = value();
                Ok(())
            }
            "--real-filter" => {
                cfg.filter = sandbox_syscalls::policy::bpf::compile().into();
                Ok(())
            }
            "--repeat" => {
                repeat = value().parse().unwrap_or_else(|_| usage("--repeat"));
                Ok(())
            }
            _ => usage(&arg),
        };
        if let Err(e) = parsed {
            fail(LaunchError {
                exit_code: 125,
                message: e.to_string(),
            });
        }
    }
    cfg.command = args.collect();
    let t0 = Instant::now();
    let mut outcome = Outcome::Exited(0);
    for _ in 0..repeat {
        outcome = match launch(&cfg)
            .and_then(|s| s.start().map(|()| s))
            .and_then(|s| s.wait())
        {
            Ok(o) => o,
            Err(e) => fail(e),
        };
    }
    if repeat > 1 {
        eprintln!(
            "mean launch+run: {:.2} ms",
            t0.elapsed().as_secs_f64() * 1e3 / f64::from(repeat)
        );
    }
    eprintln!("outcome: {outcome:?}");
    exit(match outcome {
        Outcome::Exited(c) => c,
        Outcome::Signaled(s) => 128 + s,
    });
}

fn fail(e: LaunchError) -> ! {
    eprintln!("supervisor: {}", e.message);
    exit(e.exit_code)
}

fn usage(arg: &str) -> ! {
    eprintln!("launch example: bad argument {arg}; see the file's doc comment");
    exit(125)
}
