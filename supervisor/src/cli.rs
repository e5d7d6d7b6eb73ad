//! The command line: flags, help text, and turning clap's errors into the
//! one-line messages and exit codes of `docker run` (125 for our own
//! errors).
//!
//! Owns parsing only; `run` acts on the parsed [`RunArgs`].

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use vfs::mounts::{parse_size, MountSpec};

const EXAMPLES: &str = "\
Examples:
  supervisor run -- python3 script.py
      Run a script; the current directory is visible read-only, /tmp is writable.
  supervisor run --ro ./data:/data --rw ./out:/out -- python3 job.py
      Read-only inputs at /data; only /out writes reach the host.
  supervisor run --tmpfs /scratch:256m --disk 2g -- make
      A 256 MiB scratch tmpfs, and a 2 GiB cap on everything else written.
  supervisor run --env API_URL=http://127.0.0.1:8000 --env LANG -- ./client
      Add one variable and copy one from the host; nothing else leaks in.
  supervisor run --report run.json -- ./grader
      Write a JSON report (exit status, times, serviced and denied calls).

Exit status: the command's own; 128+N if it died of signal N; 125 if the
supervisor failed or a flag was wrong; 126 if COMMAND cannot be executed;
127 if it was not found.";

#[derive(Parser, Debug)]
#[command(
    name = "supervisor",
    version,
    about = "Run untrusted programs in a sandbox that services their system calls itself.",
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run COMMAND in a fresh sandbox and exit with its status.
    #[command(after_help = EXAMPLES)]
    Run(RunArgs),
    /// Print the syscall policy table (which calls pass, are serviced, are denied) as Markdown.
    Policy,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Bind HOST read-only at GUEST (PATH alone: same path both sides). Repeatable.
    #[arg(long = "ro", value_name = "HOST:GUEST", value_parser = parse_ro)]
    pub ro: Vec<MountSpec>,

    /// Bind HOST read-write at GUEST: the only way writes reach the host. Repeatable.
    #[arg(long = "rw", value_name = "HOST:GUEST", value_parser = parse_rw)]
    pub rw: Vec<MountSpec>,

    /// Mount a fresh tmpfs at GUEST (SIZE like 64m, 1g; default 64m). Repeatable.
    #[arg(long = "tmpfs", value_name = "GUEST[:SIZE]", value_parser = parse_tmpfs)]
    pub tmpfs: Vec<MountSpec>,

    /// Starting directory inside the sandbox [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Set K to V, or copy K from the host. Besides these the guest sees only PATH, HOME, LANG and TERM.
    #[arg(long = "env", short = 'e', value_name = "K=V|K")]
    pub env: Vec<String>,

    /// Hostname inside the sandbox.
    #[arg(long, value_name = "NAME", default_value = "sandbox")]
    pub hostname: String,

    /// Size cap of the writable layer over the root (/tmp and every write outside mounts).
    #[arg(long, value_name = "SIZE", default_value = "1g", value_parser = parse_disk)]
    pub disk: u64,

    /// Write a JSON report of the run to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Threads started to answer the guest's trapped calls; one receives at a time, more start when a call blocks [default: 1].
    #[arg(long, value_name = "N", hide = true)]
    pub workers: Option<usize>,

    /// Test only, until --memory: the memory limit the guest sees in /proc/meminfo (nothing enforced).
    #[arg(long = "guest-memory-view", value_name = "SIZE", hide = true, value_parser = parse_disk)]
    pub guest_memory_view: Option<u64>,

    /// Test only, until --cpus: how many CPUs the guest sees (/sys, /proc/cpuinfo, sched_getaffinity; nothing enforced).
    #[arg(long = "guest-cpus-view", value_name = "N", hide = true, value_parser = clap::value_parser!(u16).range(1..))]
    pub guest_cpus_view: Option<u16>,

    /// The program to run and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

fn parse_ro(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_ro(s).map_err(|e| e.to_string())
}
fn parse_rw(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_rw(s).map_err(|e| e.to_string())
}
fn parse_tmpfs(s: &str) -> Result<MountSpec, String> {
    MountSpec::parse_tmpfs(s).map_err(|e| e.to_string())
}
fn parse_disk(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// Parsed command line, or the exit code to leave with (help and version
/// print and exit 0; errors print one line and exit 125).
pub fn parse() -> Result<Cli, i32> {
    Cli::try_parse().map_err(|e| {
        use clap::error::ErrorKind::*;
        match e.kind() {
            DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                    125
                } else {
                    0
                }
            }
            _ => {
                eprintln!(
                    "supervisor: {} (see 'supervisor run --help')",
                    one_line(&e.to_string())
                );
                125
            }
        }
    })
}

/// The first line of clap's message, without its "error: " prefix.
fn one_line(msg: &str) -> String {
    let first = msg
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments");
    first.trim().trim_start_matches("error: ").to_string()
}
