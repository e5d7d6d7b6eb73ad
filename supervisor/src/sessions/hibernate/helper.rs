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
//! otherwise). With `--stubs-on-stdin` the stubs come as the first line
//! on stdin (`stubs HOSTPID,...`): the daemon starts the helper before
//! the wake's sandbox, so the images are mapped and their check runs
//! while the sandbox and its stubs start.
//!
//! Owns that process; the checkpoint itself is `sandbox::checkpoint`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
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
        /// Read the stubs from the first line on stdin (`stubs
        /// HOSTPID,...`) once the images are mapped and their check has
        /// begun; its end before that line: exit, nothing restored.
        #[arg(long, conflicts_with = "stubs", requires = "hold")]
        stubs_on_stdin: bool,
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
            stubs_on_stdin,
            checked,
            hold,
        } => {
            let stubs = match stubs_on_stdin {
                true => Stubs::OnStdin,
                false => Stubs::Given(stubs),
            };
            restore(&dir, stubs, !checked, hold)
        }
    }
}

/// Where a restore's stubs come from.
enum Stubs {
    Given(Vec<i32>),
    OnStdin,
}

/// Maps DIR's images, starts a thread of its own that checks them
/// against the manifest (`check`), takes the stubs (waiting for them on
/// stdin if so told), restores the images into them, and lets the stubs
/// go (or, with `hold`, says so and waits for `go`) only once both are
/// done and the check has passed. Every image is read once from the page
/// cache, by the check and the copy alike, with no copy of ours between.
fn restore(dir: &Path, stubs: Stubs, check: bool, hold: bool) -> i32 {
    let manifest = match Manifest::load(dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_DAMAGED;
        }
    };
    let mut images = Vec::with_capacity(manifest.processes.len());
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
    let shared = Arc::new((manifest, images));
    let checking = check.then(|| {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("check".into())
            .spawn(move || {
                let begun = Instant::now();
                let (manifest, images) = &*shared;
                for (entry, image) in manifest.processes.iter().zip(images) {
                    entry.check(image)?;
                }
                Ok::<_, String>(begun.elapsed())
            })
    });
    let checking = match checking.transpose() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("starting the images' check: {e}");
            return 1;
        }
    };
    let stubs = match stubs {
        Stubs::Given(s) => s,
        // No stubs (the wake failed before them): nothing restored, and
        // the check's thread ends with the process.
        Stubs::OnStdin => match stubs_from_stdin() {
            Some(s) => s,
            None => return EXIT_DAMAGED,
        },
    };
    let (manifest, images) = &*shared;
    if manifest.processes.len() != stubs.len() {
        kill_all(&stubs);
        eprintln!(
            "{} images but {} stubs",
            manifest.processes.len(),
            stubs.len()
        );
        return 1;
    }
    let begun = Instant::now();
    let mut copying = Duration::ZERO;
    let restored = manifest
        .processes
        .iter()
        .zip(images)
        .zip(&stubs)
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
    // The check's reason first: it names the damaged image.
    let checked = match checked {
        Ok(t) => t,
        Err(e) => {
            kill_all(&stubs);
            eprintln!("{e}");
            return EXIT_DAMAGED;
        }
    };
    let restored = match restored {
        Ok(t) => t,
        Err(e) => {
            kill_all(&stubs);
            eprintln!("{e}");
            return 1;
        }
    };
    if hold {
        return release_on_go(&stubs, restored, checked);
    }
    release_all(&stubs)
}

/// The stubs of a `stubs HOSTPID,...` line on stdin; `None` (said why)
/// on its end or anything else.
fn stubs_from_stdin() -> Option<Vec<i32>> {
    use std::io::BufRead;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        eprintln!("the restore was called off");
        return None;
    }
    let Some(list) = line.trim().strip_prefix("stubs ") else {
        eprintln!("the restore was called off");
        return None;
    };
    let stubs = list
        .split(',')
        .map(|p| p.parse::<i32>().ok().filter(|&p| p > 0))
        .collect::<Option<Vec<_>>>();
    if stubs.is_none() {
        eprintln!("bad stubs line {:?}", line.trim());
    }
    stubs
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
