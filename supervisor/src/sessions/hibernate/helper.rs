//! `supervisor checkpoint dump|restore` (hidden from help): the process
//! the daemon spawns to save or restore a session's processes. A process
//! of its own because ptrace binds a tracee to the tracing thread and its
//! stops to whoever waits for any child: the daemon's threads must not
//! see them. It is not confined: the session sandbox's supervisor, which
//! confines itself, may not ptrace.
//!
//! `dump --dir DIR HOSTPID...` writes the images and their manifest into
//! DIR, kills the processes (those that ended meanwhile are left out),
//! and prints `{"memory_bytes": N, "processes": N}`; its exit
//! code says why it failed (below). `restore --dir DIR --stubs HOSTPID,...`
//! checks the manifest, then turns the n-th stub into the n-th image; on
//! any failure it kills every stub, so nothing runs half-restored. With
//! `--hold` the caller checks the images meanwhile: the restored stubs
//! stay stopped until it says `go` (they die with the helper otherwise).
//!
//! Owns that process; the checkpoint itself is `sandbox::checkpoint`'s.

use std::path::PathBuf;

use sandbox::checkpoint::{self, manifest::Manifest, DumpError};

/// `checkpoint`'s subcommands.
#[derive(clap::Args, Debug)]
pub struct CheckpointArgs {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Save the processes (host pids) into DIR and kill them.
    Dump {
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        #[arg(required = true)]
        pids: Vec<i32>,
    },
    /// Turn the stubs (host pids) into DIR's processes, in order.
    Restore {
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        #[arg(long, value_delimiter = ',', num_args = 0..)]
        stubs: Vec<i32>,
        /// The caller has checked the images against the manifest.
        #[arg(long)]
        checked: bool,
        /// The caller checks the images meanwhile: keep the restored
        /// processes stopped, print `restored`, and let them go only on
        /// a `go` line on stdin (anything else, or its end: kill them).
        #[arg(long, conflicts_with = "checked")]
        hold: bool,
    },
}

/// Exit codes of a failed dump, by cause.
pub const EXIT_BUSY: i32 = 3;
pub const EXIT_UNSUPPORTED: i32 = 4;
pub const EXIT_STORAGE: i32 = 5;
/// A restore refused before it began (the images do not check out).
pub const EXIT_DAMAGED: i32 = 6;

pub fn main(args: CheckpointArgs) -> i32 {
    match args.action {
        Action::Dump { dir, pids } => match checkpoint::dump(&pids, &dir) {
            Ok(d) => {
                println!(
                    "{}",
                    serde_json::json!({
                        "memory_bytes": d.memory_bytes,
                        "processes": d.manifest.processes.len(),
                    })
                );
                0
            }
            Err(e) => {
                eprintln!("{e}");
                match e {
                    DumpError::Busy(_) => EXIT_BUSY,
                    DumpError::Unsupported(_) => EXIT_UNSUPPORTED,
                    DumpError::Storage(_) => EXIT_STORAGE,
                    DumpError::Other(_) => 1,
                }
            }
        },
        Action::Restore {
            dir,
            stubs,
            checked,
            hold,
        } => {
            let loaded = match checked || hold {
                true => Manifest::load(&dir),
                false => Manifest::load_checked(&dir),
            };
            let manifest = match loaded {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("{e}");
                    return EXIT_DAMAGED;
                }
            };
            if manifest.processes.len() != stubs.len() {
                eprintln!(
                    "{} images but {} stubs",
                    manifest.processes.len(),
                    stubs.len()
                );
                return 1;
            }
            for (entry, &stub) in manifest.processes.iter().zip(&stubs) {
                if let Err(e) = checkpoint::restore(&dir.join(&entry.file), stub, !hold) {
                    kill_all(&stubs);
                    eprintln!("restoring {}: {e}", entry.file);
                    return 1;
                }
            }
            if hold {
                return release_on_go(&stubs);
            }
            0
        }
    }
}

/// Says `restored`, then lets the held stubs go on a `go` line, or kills
/// them on anything else.
fn release_on_go(stubs: &[i32]) -> i32 {
    use std::io::{BufRead, Write};
    let said = writeln!(std::io::stdout(), "restored").and_then(|()| std::io::stdout().flush());
    let mut line = String::new();
    let go =
        said.is_ok() && std::io::stdin().lock().read_line(&mut line).is_ok() && line.trim() == "go";
    if !go {
        kill_all(stubs);
        eprintln!("the restore was called off");
        return EXIT_DAMAGED;
    }
    for &s in stubs {
        if let Err(e) = checkpoint::release(s) {
            kill_all(stubs);
            eprintln!("{e}");
            return 1;
        }
    }
    0
}

fn kill_all(stubs: &[i32]) {
    for &s in stubs {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(s),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
