//! The `supervisor` binary's front-ends over the sandbox engine (the
//! `sandbox` crate): the command line (`cli`), the pool (`pool`), the
//! HTTP daemon (`serve`) and the OCI runtime (`oci`). Each builds a `SandboxConfig` and runs it.
//!
//! The binary target itself is a two-line shim in the workspace's root
//! package (`src/main.rs`), so that the integration tests in `tests/` get
//! `CARGO_BIN_EXE_supervisor` and `cargo test` builds it first.

pub mod cli;
pub mod oci;
pub mod pool;
pub mod serve;
pub mod sessions;

use sandbox::embedding::Standalone;
use sandbox::{config, run};

/// Entry point of the command; returns the process exit code.
pub fn main() -> i32 {
    match cli::parse() {
        Ok(cli) => match cli.command {
            cli::Command::Run(args) => match args.pool.clone() {
                Some(pool) => pool::client::main(*args, &pool),
                None if args.command.is_empty() => {
                    eprintln!("supervisor: no command given (see 'supervisor run --help')");
                    125
                }
                None => match config::SandboxConfig::try_from(*args) {
                    Ok(config) => run::run(config, &Standalone),
                    Err(e) => {
                        eprintln!("supervisor: {e}");
                        125
                    }
                },
            },
            cli::Command::Pool(args) => pool::daemon::main(*args, pool::flags_after_subcommand()),
            cli::Command::PoolSandbox(args) => pool::slot::main(*args),
            cli::Command::Serve(args) => serve::main(*args),
            cli::Command::Sessions(args) => serve::sessions::cli::main(*args),
            cli::Command::SessionSandbox(args) => sessions::host::main(*args),
            cli::Command::Checkpoint(args) => sessions::hibernate::helper::main(args),
            cli::Command::Policy => {
                print!("{}", sandbox_syscalls::policy::doc::markdown());
                0
            }
            cli::Command::Oci(command) => oci::main(&cli.oci, command),
        },
        Err(code) => code,
    }
}
