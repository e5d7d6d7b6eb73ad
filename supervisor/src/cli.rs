//! The command line: flags, help text, and turning clap's errors into the
//! one-line messages and exit codes of `docker run` (125 for our own
//! errors).
//!
//! Owns parsing only (the flags' values: `cli/values.rs`); `run` acts
//! on the parsed [`RunArgs`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use vfs::mounts::MountSpec;

use sandbox::config::{GuestEnv, IdRange, SandboxConfig, StartMode, Terminal};
use sandbox::launch::GuestUser;
use sandbox::limits::Limits;
pub use values::parse_duration;
use values::{
    parse_cap, parse_count, parse_cpus, parse_mask, parse_nonzero_size, parse_pool_size,
    parse_publish, parse_remount_ro, parse_ro, parse_rootfs, parse_rw, parse_tmpfs, parse_user,
    parse_userns_range, parse_warm,
};

mod values;

const EXAMPLES: &str = "\
Examples:
  supervisor run -- python3 script.py
      Run a script; the current directory and /usr are visible read-only, /tmp is writable.
  supervisor run --ro ./data:/data --rw ./out:/out -- python3 job.py
      Read-only inputs at /data; only /out writes reach the host.
  supervisor run --tmpfs /scratch:256m --disk 2g -- make
      A 256 MiB scratch tmpfs, and a 2 GiB cap on everything else written.
  supervisor run --rootfs ./debian --rw ./out:/out -- /bin/sh -c 'ls / > /out/ls'
      An unpacked image (docker export, debootstrap) as /, read-only: writes
      outside /out vanish; /proc, /dev, /sys, /tmp are the sandbox's own.
  supervisor run --writable-system -- pip install --no-index ./wheels/*.whl
      /usr is read-only unless asked: this root guest installs into it, and
      the writes vanish with the run like every other write to the layer.
  supervisor run --mask /etc/hosts --mask /usr/share/doc -- ls /usr/share/doc
      Hide paths: a directory shows empty, a file reads as empty.
  supervisor run --env API_URL=http://127.0.0.1:8000 --env LANG -- ./client
      Add one variable and copy one from the host; nothing else leaks in.
  supervisor run --allow-net index.example.org:443 --allow-net files.example.org:443 -- pip download -i https://index.example.org/simple numpy
      Egress only to the package index, by name: the sandbox's DNS stub
      resolves only allowed names, and only their addresses may be dialled.
  supervisor run --allow-net 203.0.113.0/24:8000-8100 --allow-net '*.example.org' -- ./client
      A network and a port range; every name below example.org (not the apex).
      Private, link-local (169.254.169.254), host-loopback and other special
      ranges are reached only through a rule naming them (0.0.0.0/0 does not).
  supervisor run --publish 8888:8888 -- python3 -m http.server 8888
      The guest's port 8888 reachable at the host's 127.0.0.1:8888
      (--publish 0.0.0.0:5353:53/udp: UDP, every host address).
  supervisor run --memory 512m --cpus 1.5 --pids 64 --timeout 30 -- python3 grade.py
      Cap memory, CPU, processes and wall time; the whole sandbox is killed
      at a limit, with one line saying which.
  supervisor run --trace -- python3 -c 'open(\"/etc/shadow\")'
      Log every call the sandbox traps, strace-style (--trace=FILE: to a file).
  supervisor run --output-limit 1m --report run.json -- ./grader
      Keep at most 1 MiB of output; write a JSON report (reason the run
      ended, times, peak memory, serviced and denied calls; see REPORT.md).

Limits are enforced in a cgroup beneath the supervisor's own (v2 where
delegated, else v1). Without one, --memory, --pids and --cpu-time fall
back to per-process rlimits and --cpus is not enforced; a warning says so.

Exit status: the command's own; 128+N if it died of signal N; 137 if a
limit killed the sandbox; 125 if the supervisor failed or a flag was
wrong; 126 if COMMAND cannot be executed; 127 if it was not found.";

#[derive(Parser, Debug)]
#[command(
    name = "supervisor",
    version,
    about = "Run untrusted programs in a sandbox that services their system calls itself.",
    after_help = EXAMPLES
)]
pub struct Cli {
    /// runc's global flags, for the OCI runtime commands.
    #[command(flatten)]
    pub oci: crate::oci::cli::GlobalFlags,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
// `defer`: clap builds a subcommand's arguments only when it is the one
// given, so `run` does not build every OCI command's too (a pooled
// client's start: 128 page faults and 0.65 ms of CPU became 101 and 0.58).
#[command(defer = true)]
pub enum Command {
    /// Run COMMAND in a fresh sandbox and exit with its status.
    #[command(after_help = EXAMPLES)]
    Run(Box<RunArgs>),
    /// Keep sandboxes set up and waiting, each for one `supervisor run --pool SOCKET` command.
    #[command(after_help = POOL_HELP)]
    Pool(Box<PoolArgs>),
    /// One of a pool's sandboxes (started by `supervisor pool`, its connection on stdin).
    #[command(name = "pool-sandbox", hide = true)]
    PoolSandbox(Box<PoolArgs>),
    /// Serve sandboxed executions over HTTP/1.1 + JSON on a Unix socket (and TCP with bearer tokens): docs/serve.md.
    Serve(Box<crate::serve::ServeArgs>),
    /// Talk to a running `supervisor serve` about its sessions: ls, create, exec, cp, rm, template.
    Sessions(Box<crate::serve::sessions::cli::SessionsArgs>),
    /// One session's sandbox (started by `supervisor serve`, its lifeline on stdin).
    #[command(name = "session-sandbox", hide = true)]
    SessionSandbox(Box<crate::sessions::host::SessionSandboxArgs>),
    #[command(name = "checkpoint", hide = true)]
    Checkpoint(crate::sessions::hibernate::helper::CheckpointArgs),
    /// Print the syscall policy table (which calls pass, are serviced, are denied) as Markdown.
    Policy,
    /// The OCI runtime (runc's commands, for Docker, containerd, Podman).
    #[command(flatten)]
    Oci(crate::oci::cli::OciCommand),
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

    /// Use DIR (an unpacked image) as the guest's / instead of the host's /usr, /etc, ...: read-only, writes land in the --disk layer; /proc, /dev, /sys, /tmp and mounts as usual.
    #[arg(long, value_name = "DIR", value_parser = parse_rootfs)]
    pub rootfs: Option<PathBuf>,

    /// Hide PATH inside: a directory shows empty, a file reads as empty (runc's maskedPaths); a missing PATH is ignored. Repeatable.
    #[arg(long = "mask", value_name = "PATH", value_parser = parse_mask)]
    pub mask: Vec<PathBuf>,

    /// Make PATH inside read-only, with everything mounted below it (runc's readonlyPaths, bwrap's --remount-ro); a missing PATH is ignored. Repeatable.
    #[arg(long = "remount-ro", value_name = "PATH", value_parser = parse_remount_ro)]
    pub remount_ro: Vec<PathBuf>,

    /// Starting directory inside the sandbox [default: the current directory; / with --rootfs].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Set K to V, or copy K from the host. Besides these the guest sees only PATH, HOME, LANG and TERM.
    #[arg(long = "env", short = 'e', value_name = "K=V|K")]
    pub env: Vec<String>,

    /// Hostname inside the sandbox.
    #[arg(long, value_name = "NAME", default_value = "sandbox")]
    pub hostname: String,

    /// Allow egress to RULE: a network or address (203.0.113.0/24, [2001:db8::/32], 198.51.100.7) or a DNS name (index.example.org; *.example.org: names below it), each with an optional :PORT or :FIRST-LAST. Special ranges (private, link-local with the metadata address, the host's loopback, multicast, ...) need a rule naming them. Repeatable; none: no egress.
    #[arg(long = "allow-net", value_name = "RULE", value_parser = netstack::rules::Rule::parse)]
    pub allow_net: Vec<netstack::rules::Rule>,

    /// Make the guest's listener on GUESTPORT reachable from the host at HOSTIP:HOSTPORT (HOSTIP default 127.0.0.1; /udp for UDP). Repeatable.
    #[arg(long, value_name = "[HOSTIP:]HOSTPORT:GUESTPORT[/udp]", value_parser = parse_publish)]
    pub publish: Vec<netstack::publish::PublishSpec>,

    /// Let the guest write under /usr, /bin, /sbin, /lib and /lib64 (pip install as root, make install): they become overlays whose writes land in the --disk layer and vanish with the run. Without it they are the host's, read-only (Read-only file system), and faster to walk; a --ro, --rw or --tmpfs mount below one of them makes that one an overlay.
    #[arg(long)]
    pub writable_system: bool,

    /// Size cap of the writable layer over the root (/tmp and every write outside mounts).
    #[arg(long, value_name = "SIZE", default_value = "1g", value_parser = parse_nonzero_size)]
    pub disk: u64,

    /// Memory of the whole sandbox (SIZE like 512m, 2g); reaching it kills the sandbox.
    #[arg(long, value_name = "SIZE", value_parser = parse_nonzero_size)]
    pub memory: Option<u64>,

    /// CPU time per period, in CPUs (fractional, like 0.5 or 2): a quota, not a pinning.
    #[arg(long, value_name = "N", value_parser = parse_cpus)]
    pub cpus: Option<f64>,

    /// Processes and threads at once; a refused fork kills the sandbox.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub pids: Option<u64>,

    /// Wall-clock time (seconds, or with s, m, h) after which the sandbox is killed.
    #[arg(long, value_name = "SECONDS", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// CPU time of all the sandbox's processes together (seconds, or with s, m, h).
    #[arg(long = "cpu-time", value_name = "SECONDS", value_parser = parse_duration)]
    pub cpu_time: Option<Duration>,

    /// Bytes of stdout and stderr together; the rest is dropped and the sandbox killed.
    #[arg(long = "output-limit", value_name = "SIZE", value_parser = parse_nonzero_size)]
    pub output_limit: Option<u64>,

    /// Open descriptors per process (RLIMIT_NOFILE).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub nofile: Option<u64>,

    /// Log every trapped call (serviced or denied) with decoded arguments, result and time, one line each, to stderr or FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "-")]
    pub trace: Option<PathBuf>,

    /// Write a JSON report of the run to FILE (schema: REPORT.md).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Leave the guest's text as it was built: a static program's plain read opens stay fast through the static loader's signal, and a dynamic one's loader and C library keep their own opens served, but no call site is rewritten into a jump to a trampoline (for programs that checksum or inspect their own code or libraries; docs/fast-reads.md).
    #[arg(long = "no-rewrite")]
    pub no_rewrite: bool,

    /// Threads started to answer the guest's trapped calls; one receives at a time, more start when a call blocks [default: 1].
    #[arg(long, value_name = "N", hide = true)]
    pub workers: Option<usize>,

    /// Which host ids the guest's user namespace maps: START:COUNT maps guest ids 0 to COUNT-1 onto host ids from START (root only; COUNT at least 65536); `auto` maps guest 0-65535 onto the `supervisor` entry of /etc/subuid and /etc/subgid (added on first use) as root, or onto the invoker's own subordinate ids otherwise; `none` maps the invoker's own id alone (root's guest is then host root, without capabilities) [default: auto as root, none otherwise].
    #[arg(long = "userns-range", value_name = "START:COUNT|auto|none", value_parser = parse_userns_range)]
    pub userns_range: Option<IdRange>,

    /// With a range of ids: take capability CAP from the guest root's set (Docker's default set). Repeatable; ALL for every one.
    #[arg(long = "cap-drop", value_name = "CAP", value_parser = parse_cap)]
    pub cap_drop: Vec<String>,

    /// With a range of ids: give capability CAP back (only from Docker's default set: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, MKNOD, AUDIT_WRITE, SETFCAP). Repeatable.
    #[arg(long = "cap-add", value_name = "CAP", value_parser = parse_cap)]
    pub cap_add: Vec<String>,

    /// With a range of ids: run COMMAND as guest user UID and group GID (default: UID's group in the host's /etc/passwd, else 0), as `docker run --user`.
    #[arg(long, value_name = "UID[:GID]", value_parser = parse_user)]
    pub user: Option<GuestUser>,

    /// Run COMMAND in a sandbox of the pool serving SOCKET (`supervisor pool`), set up before it was asked for; the pool's flags shape it, so only --env, --report and --trace may go with this one. Waits for a sandbox if none is ready.
    #[arg(long, value_name = "SOCKET")]
    pub pool: Option<PathBuf>,

    /// The program to run and its arguments.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

const POOL_HELP: &str = "\
Every sandbox serves one command (`supervisor run --pool SOCKET -- COMMAND`)
and is then destroyed; a new one is set up in its place (at once if no other
is ready, else once that command has ended). The flags above shape
every sandbox as they shape `supervisor run`'s. The command runs with the
client's stdin, stdout and stderr (as they are: a terminal gets no
pseudo-terminal of the sandbox's own) and the environment `run` would give it
(the client's PATH, HOME, LANG, TERM and --env), in the pool's starting
directory (--workdir, or the directory the pool was started in): the client's
own is not used. The socket is made mode 0600, and only the pool's own user
(and root) is served. SIGTERM or SIGINT: the idle sandboxes are torn down,
the socket removed, and the pool exits 0.

COMMAND, --env, --report and --pool (listed above, shared with `run`) are
the client's: the pool refuses them. A client may give --timeout too: the
shorter of its own and the pool's holds.

Example:
  supervisor pool --socket /tmp/pool.sock --size 4 --memory 512m --pids 64 &
  supervisor run --pool /tmp/pool.sock -- python3 -c 'print(1)'";

#[derive(clap::Args, Debug)]
pub struct PoolArgs {
    /// The unix socket to serve (made mode 0600; refused if another pool answers there).
    #[arg(long, value_name = "PATH", required = true)]
    pub socket: PathBuf,

    /// Sandboxes kept ready.
    #[arg(long, value_name = "N", default_value = "2", value_parser = parse_pool_size)]
    pub size: usize,

    /// Looked up in every idle sandbox's view before it is ready, with a
    /// directory's entries (repeatable; absolute): the command then finds
    /// them cached. Pays on the sandbox's fresh overlays: /etc, and /usr with
    /// --writable-system (e.g. --warm /usr/lib/python3.11 --warm /usr/lib/python3.11/encodings).
    #[arg(long, value_name = "PATH", value_parser = parse_warm)]
    pub warm: Vec<PathBuf>,

    /// The daemon's, for `pool-sandbox`: the sandbox was started at nice
    /// 19 and restores this nice value on all its tasks once set up.
    #[arg(long, value_name = "NICE", hide = true, allow_negative_numbers = true)]
    pub restore_nice: Option<i32>,

    /// The owner's (`supervisor serve`'s): stdin is a pipe the owner holds
    /// the write end of; its end of file (the owner exited or was killed)
    /// ends the pool and kills every sandbox, serving or not.
    #[arg(long, hide = true)]
    pub lifeline: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

impl TryFrom<RunArgs> for SandboxConfig {
    type Error = String;

    /// The sandbox `run`'s flags describe; checked, one line if wrong.
    fn try_from(args: RunArgs) -> Result<SandboxConfig, String> {
        let config = unchecked_config(args);
        config.validate()?;
        Ok(config)
    }
}

impl RunArgs {
    /// Every sandbox of a pool with these flags (`supervisor pool`'s):
    /// the command, and whether the guest takes the pty ready for it,
    /// come with the client.
    pub fn pooled_config(self) -> Result<SandboxConfig, String> {
        let mut config = unchecked_config(self);
        config.start = StartMode::Late;
        config.terminal = Terminal::AtStart;
        // The sandbox waits for its client confined; the client's report
        // decides whether the run waits for the teardown.
        config.schedule.start_early = false;
        config.schedule.confine_before_wait = true;
        config.validate()?;
        Ok(config)
    }
}

/// The sandbox the flags describe (the mounts in the order `--ro`,
/// `--rw`, `--tmpfs`), not checked yet.
fn unchecked_config(args: RunArgs) -> SandboxConfig {
    let mut config = SandboxConfig::new(args.command);
    config.env = GuestEnv::FromHost(args.env);
    config.workdir = args.workdir;
    config.hostname = args.hostname;
    let mut mounts = args.ro;
    mounts.extend(args.rw);
    mounts.extend(args.tmpfs);
    config.fs.mounts = mounts;
    config.fs.rootfs = args.rootfs;
    config.fs.masks = args.mask;
    config.fs.read_only = args.remount_ro;
    config.fs.writable_system = args.writable_system;
    config.fs.disk = args.disk;
    config.net.allow = args.allow_net;
    config.net.publish = args.publish;
    config.limits = Limits {
        memory: args.memory,
        cpus: args.cpus,
        pids: args.pids,
        timeout: args.timeout,
        cpu_time: args.cpu_time,
        output: args.output_limit,
        nofile: args.nofile,
        rlimits: Vec::new(),
    };
    config.trace = args.trace;
    config.report = args.report;
    config.rewrite_sites = !args.no_rewrite;
    config.workers = args.workers;
    config.ids.range = args.userns_range.unwrap_or_else(default_id_range);
    config.ids.cap_drop = args.cap_drop;
    config.ids.cap_add = args.cap_add;
    config.ids.user = args.user;
    config
}

/// The id range when `--userns-range` is not given: as root, `auto` (the
/// guest's root is an unprivileged host id, as under runsc or Docker's
/// userns-remap); otherwise the invoker's own id (see docs/launch-and-view.md, Ids).
pub fn default_id_range() -> IdRange {
    if nix::unistd::geteuid().is_root() {
        IdRange::Auto
    } else {
        IdRange::Invoker
    }
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
                    "supervisor: {} (see {})",
                    one_line(&e.to_string()),
                    help_hint()
                );
                125
            }
        }
    })
}

/// Where the help for the command line given is: `'supervisor SUB --help'`
/// for the subcommand named (the first word that is not a flag), else the
/// top-level help.
fn help_hint() -> String {
    use clap::CommandFactory;
    let cli = Cli::command();
    match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(sub) if cli.find_subcommand(&sub).is_some() => format!("'supervisor {sub} --help'"),
        _ => "'supervisor --help'".to_string(),
    }
}

/// The first line of clap's message, without its "error: " prefix; a
/// line that ends in a colon ("required arguments were not provided:")
/// takes the next one (what was missing) with it.
pub(crate) fn one_line(msg: &str) -> String {
    let mut lines = msg.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.trim_start_matches("error: ");
    match lines.next() {
        Some(next) if first.ends_with(':') => format!("{first} {next}"),
        _ => first.to_string(),
    }
}
