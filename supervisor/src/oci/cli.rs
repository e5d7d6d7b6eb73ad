//! The OCI runtime's command line, as runc spells it: global flags
//! (`--root`, `--log`, `--log-format`, `--systemd-cgroup`, `--debug`)
//! before the command, and the commands Docker, containerd and Podman
//! call (create, start, state, kill, delete, exec, ps, pause, resume,
//! update) plus spec, list, features and a foreground run.
//!
//! Owns parsing only; `oci/mod.rs` dispatches.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// Where the runtime keeps its state when no `--root` is given.
pub const DEFAULT_ROOT: &str = "/run/supervisor";

/// runc's global flags (given before the command).
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalFlags {
    /// OCI runtime: directory of container state.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// OCI runtime: file that errors are logged to (always created).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// OCI runtime: format of --log lines.
    #[arg(long = "log-format", value_enum)]
    pub log_format: Option<LogFormat>,
    /// OCI runtime: accepted for runc compatibility; cgroups are always created directly (cgroupfs).
    #[arg(long = "systemd-cgroup")]
    pub systemd_cgroup: bool,
    /// OCI runtime: also log debug lines.
    #[arg(long)]
    pub debug: bool,
}

impl GlobalFlags {
    /// `--root`, else (as runc) `$XDG_RUNTIME_DIR/supervisor` for a
    /// rootless caller, else [`DEFAULT_ROOT`].
    pub fn root(&self) -> PathBuf {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty());
        self.root.clone().unwrap_or_else(|| match xdg {
            Some(dir) if rootless_caller() => PathBuf::from(dir).join("supervisor"),
            _ => PathBuf::from(DEFAULT_ROOT),
        })
    }
}

/// runc's test for honouring `XDG_RUNTIME_DIR`: a non-root caller, or
/// uid 0 in a user namespace other than the host's (rootless Podman runs
/// its runtime so) whose `USER` is not root.
pub fn rootless_caller() -> bool {
    if !nix::unistd::geteuid().is_root() {
        return true;
    }
    let map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    let in_userns = !is_initial_uid_map(&map);
    in_userns && std::env::var("USER").map_or(true, |u| u != "root")
}

/// Whether the container's anchor gets a pid namespace of its own
/// (`anchor.rs`): when the runtime is root in a user namespace other
/// than the host's (rootless Podman's), whose engine may not enter the
/// host's pid namespace but may enter one its namespace owns.
pub fn anchor_in_own_pid_namespace() -> bool {
    let map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    nix::unistd::geteuid().is_root() && !is_initial_uid_map(&map)
}

/// Whether `map` (a uid_map's text) is the initial user namespace's.
fn is_initial_uid_map(map: &str) -> bool {
    let fields: Vec<&str> = map.split_whitespace().collect();
    fields == ["0", "0", "4294967295"]
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    Json,
    #[default]
    Text,
}

/// The runtime commands.
#[derive(Subcommand, Debug)]
// Built only when named, as `cli::Command`'s subcommands are.
#[command(defer = true)]
pub enum OciCommand {
    /// OCI runtime: write a default config.json (like `runc spec`).
    Spec(SpecArgs),
    /// OCI runtime: create a container from a bundle; its process waits for `start`.
    Create(CreateArgs),
    /// OCI runtime: let a created container's process run.
    Start(IdArgs),
    /// OCI runtime: print a container's state as JSON.
    State(IdArgs),
    /// OCI runtime: send a signal (name or number; default SIGTERM) to a container.
    Kill(KillArgs),
    /// OCI runtime: delete a stopped container (--force: any); a missing one is not an error.
    Delete(DeleteArgs),
    /// OCI runtime: list containers.
    List(ListArgs),
    /// OCI runtime: print the runtime's features as JSON.
    Features,
    /// OCI runtime: list a container's processes (host pids).
    Ps(PsArgs),
    /// OCI runtime: freeze every process of a container.
    Pause(IdArgs),
    /// OCI runtime: thaw a paused container.
    Resume(IdArgs),
    /// OCI runtime: run a new process in a running container.
    Exec(Box<ExecArgs>),
    /// OCI runtime: change a container's resources (`--resources -`: JSON on stdin).
    Update(UpdateArgs),
}

#[derive(Args, Debug)]
pub struct IdArgs {
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(Args, Debug)]
pub struct SpecArgs {
    /// Directory to write config.json in.
    #[arg(long, short = 'b', value_name = "DIR", default_value = ".")]
    pub bundle: PathBuf,
    /// Accepted for runc compatibility (the spec is the same).
    #[arg(long)]
    pub rootless: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CreateArgs {
    /// The bundle: config.json and the root file system it names.
    #[arg(long, short = 'b', value_name = "DIR", default_value = ".")]
    pub bundle: PathBuf,
    /// Write the container process's pid here.
    #[arg(long = "pid-file", value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// With `terminal: true`, send the pty master over this unix socket.
    #[arg(long = "console-socket", value_name = "PATH")]
    pub console_socket: Option<PathBuf>,
    /// Accepted for runc compatibility.
    #[arg(long = "no-pivot")]
    pub no_pivot: bool,
    /// Accepted for runc compatibility.
    #[arg(long = "no-new-keyring")]
    pub no_new_keyring: bool,
    /// Accepted for runc compatibility (descriptors past stdio are not passed).
    #[arg(long = "preserve-fds", value_name = "N", default_value_t = 0)]
    pub preserve_fds: u32,
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(Args, Debug)]
pub struct KillArgs {
    /// Signal every process of the container.
    #[arg(long, short = 'a')]
    pub all: bool,
    #[arg(value_name = "ID")]
    pub id: String,
    #[arg(value_name = "SIGNAL", default_value = "SIGTERM")]
    pub signal: String,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// Kill the container first if it still runs.
    #[arg(long, short = 'f')]
    pub force: bool,
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, short = 'f', value_enum, default_value = "table")]
    pub format: ListFormat,
    /// Only the ids.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct PsArgs {
    #[arg(long, short = 'f', value_enum, default_value = "table")]
    pub format: ListFormat,
    #[arg(value_name = "ID")]
    pub id: String,
    /// Accepted for runc compatibility (ps options).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub ps_args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// A JSON process (the OCI spec's `process`) instead of the flags.
    #[arg(long, short = 'p', value_name = "FILE")]
    pub process: Option<PathBuf>,
    /// Return once the process started; its status then belongs to the --pid-file process.
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// Give the process a pseudo-terminal (its master goes to --console-socket).
    #[arg(long, short = 't')]
    pub tty: bool,
    #[arg(long = "console-socket", value_name = "PATH")]
    pub console_socket: Option<PathBuf>,
    #[arg(long = "pid-file", value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// uid[:gid] (only the container's own user can be mapped here).
    #[arg(long, short = 'u', value_name = "UID[:GID]")]
    pub user: Option<String>,
    /// Accepted for runc compatibility.
    #[arg(long = "preserve-fds", value_name = "N", default_value_t = 0)]
    pub preserve_fds: u32,
    #[arg(value_name = "ID")]
    pub id: String,
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// LinuxResources JSON from FILE ("-": stdin).
    #[arg(long, short = 'r', value_name = "FILE")]
    pub resources: Option<PathBuf>,
    /// Memory limit in bytes.
    #[arg(long, value_name = "BYTES")]
    pub memory: Option<i64>,
    /// Maximum number of pids.
    #[arg(long = "pids-limit", value_name = "N")]
    pub pids_limit: Option<i64>,
    #[arg(value_name = "ID")]
    pub id: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_initial_user_namespace() {
        assert!(super::is_initial_uid_map(
            "         0          0 4294967295\n"
        ));
        assert!(!super::is_initial_uid_map("0 1001 1\n1 100000 65536\n"));
        assert!(!super::is_initial_uid_map(""));
    }
}
