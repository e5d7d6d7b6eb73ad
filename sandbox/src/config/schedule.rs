//! When and how the guest starts: its terminal ([`Terminal`]), when its
//! command is known ([`StartMode`]), and when things happen in the run
//! where front-ends differ ([`Schedule`]).
//!
//! Owns that part of the configuration's shape. Does not own acting on it
//! (`run/`, `launch/`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Whether the guest gets a pseudo-terminal of the sandbox's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    /// As its stdin, stdout, stderr where ours is a terminal, relayed
    /// to ours.
    Host,
    /// As all three, its master sent to the console socket at this path
    /// (an OCI runtime's `--console-socket`).
    Console(PathBuf),
    /// None: the guest inherits our stdio.
    Never,
    /// Set up, and taken where the start says ([`StartMode::Late`]).
    AtStart,
}

/// When the guest's command, environment and stdio are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartMode {
    /// At the launch: [`SandboxConfig::command`]. The run's clock (the
    /// timeout, the report's wall time) starts at the launch.
    Launch,
    /// At start (the pool's client's, from the front-end's
    /// `Embedding::ready`); the launch builds the view only, and the
    /// run's clock starts then: the sandbox may wait long for it.
    Late,
}

/// When things happen in a run, where front-ends differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The guest may exec as soon as the supervisor has taken the view's
    /// measure (its root, the fence's grants), before the trap serves:
    /// its first serviced call waits in the listener's queue, and its
    /// exec overlaps the trap's start, the signal thread and the
    /// supervisor's confinement, which then comes before any worker (no
    /// call is ever served unconfined). Not with a terminal (the guest
    /// could ask its size before the relay has set it); not with a late
    /// start. For a front-end whose `Embedding::ready` does not wait.
    pub start_early: bool,
    /// The supervisor confines itself before the front-end's wait
    /// (`Embedding::ready`) rather than after it: the pool's sandbox
    /// waits for its client there, so its confinement (the own filter's
    /// `seccomp(TSYNC)`, about 0.15 ms) is off the request's path.
    /// Everything `ready` calls must then pass that filter.
    pub confine_before_wait: bool,
    /// The run may end without waiting for the sandbox's init to exit
    /// and its cgroup to go (the janitor removes it just after), unless a
    /// report is asked for (it needs init's resource usage): the guest's
    /// processes are all gone either way.
    pub leave_teardown: bool,
    /// The nice value the sandbox's tasks get once init has set the
    /// sandbox up and waits to fork the guest's main process, while this
    /// process has no thread yet: every task made from then on inherits
    /// it. The pool's sandbox is set up at nice 19 and restores its own
    /// value so (restored later, it raced init's fork of the guest's main
    /// process). A failed change fails the set-up: no guest runs at the
    /// set-up's priority.
    pub nice_after_set_up: Option<i32>,
}
