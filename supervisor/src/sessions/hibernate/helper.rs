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
//! maps the images, turns the n-th stub into the n-th image while a
//! thread checks every image against the manifest, and lets the stubs go
//! only once the check has passed; on any failure it kills every stub,
//! so nothing runs half-restored. With `--hold` the restored stubs stay
//! stopped until the caller says `go` (they die with the helper
//! otherwise).
//!
//! Owns that process; the checkpoint itself is `sandbox::checkpoint`'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sandbox::checkpoint::{self, manifest::Manifest, DumpError};
use sandbox::sys::mapped::Mapped;

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
        /// Keep the restored processes stopped once the images are
        /// restored and checked, print `restored RESTORE_MS CHECK_MS
        /// COPY_MS`,
        /// and let them go only on a `go` line on stdin (anything else,
        /// or its end: kill them).
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
        } => restore(&dir, &stubs, !checked, hold),
    }
}

/// Maps DIR's images, restores them into the stubs while a thread of its
/// own checks them against the manifest (`check`), and lets the stubs go
/// (or, with `hold`, says so and waits for `go`) only once both are done
/// and the check has passed. Every image is read once from the page
/// cache, by the check and the copy alike, with no copy of ours between.
fn restore(dir: &Path, stubs: &[i32], check: bool, hold: bool) -> i32 {
    let manifest = match Manifest::load(dir) {
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
    let mut images = Vec::with_capacity(stubs.len());
    for entry in &manifest.processes {
        let path = dir.join(&entry.file);
        let mapped = std::fs::File::open(&path)
            .map_err(|e| e.to_string())
            .and_then(|f| Mapped::file(&f).map_err(|e| e.desc().to_string()));
        match mapped {
            Ok(m) => images.push(m),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return EXIT_DAMAGED;
            }
        }
    }
    let (restored, checked) = std::thread::scope(|s| {
        let checking = check.then(|| {
            s.spawn(|| {
                let begun = Instant::now();
                for (entry, image) in manifest.processes.iter().zip(&images) {
                    entry.check(image)?;
                }
                Ok::<_, String>(begun.elapsed())
            })
        });
        let begun = Instant::now();
        let mut copying = Duration::ZERO;
        let restored = manifest
            .processes
            .iter()
            .zip(&images)
            .zip(stubs)
            .try_for_each(|((entry, image), &stub)| {
                copying += checkpoint::restore(image, stub)
                    .map_err(|e| format!("restoring {}: {e}", entry.file))?;
                Ok::<_, String>(())
            })
            .map(|()| (begun.elapsed(), copying));
        let checked = match checking {
            None => Ok(Duration::ZERO),
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err("checking the images panicked".into())),
        };
        (restored, checked)
    });
    // The check's reason first: it names the damaged image.
    let checked = match checked {
        Ok(t) => t,
        Err(e) => {
            kill_all(stubs);
            eprintln!("{e}");
            return EXIT_DAMAGED;
        }
    };
    let restored = match restored {
        Ok(t) => t,
        Err(e) => {
            kill_all(stubs);
            eprintln!("{e}");
            return 1;
        }
    };
    if hold {
        return release_on_go(stubs, restored, checked);
    }
    release_all(stubs)
}

/// Says `restored RESTORE_MS CHECK_MS COPY_MS` (the copy of the pages is
/// part of the restore), then lets the held stubs go on a `go` line, or
/// kills them on anything else.
fn release_on_go(stubs: &[i32], restored: (Duration, Duration), checked: Duration) -> i32 {
    use std::io::{BufRead, Write};
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let said = writeln!(
        std::io::stdout(),
        "restored {:.1} {:.1} {:.1}",
        ms(restored.0),
        ms(checked),
        ms(restored.1)
    )
    .and_then(|()| std::io::stdout().flush());
    let mut line = String::new();
    let go =
        said.is_ok() && std::io::stdin().lock().read_line(&mut line).is_ok() && line.trim() == "go";
    if !go {
        kill_all(stubs);
        eprintln!("the restore was called off");
        return EXIT_DAMAGED;
    }
    release_all(stubs)
}

/// Lets the restored stubs go (all, or none: killed).
fn release_all(stubs: &[i32]) -> i32 {
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
