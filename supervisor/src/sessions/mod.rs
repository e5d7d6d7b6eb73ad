//! Sessions: long-lived per-user sandboxes that run one command after
//! another (`exec`), hold files, mount a persistent volume by name, and
//! end when idle past their TTL, at their maximum lifetime, or when
//! deleted. The daemon (`supervisor serve`) serves them over HTTP; this
//! module has no HTTP in it.
//!
//! - `spec`: what a client asks for (a session, a command), checked;
//! - `registry`: the sessions, their lifecycle and the reaper;
//! - `host`: the `session-sandbox` process running one session's sandbox;
//! - `exec`: one command over the sandbox's exec socket, output streamed;
//! - `files`: put and get of a session's files, as commands in it;
//! - `volume`: persistent volumes under the data directory;
//! - `record`: a session's record on disk and recovery at a restart;
//! - `procs`: a session's processes and memory, from /proc;
//! - `hibernate`: saving a session's processes and waking them in a new sandbox.

pub mod exec;
pub mod files;
pub mod hibernate;
pub mod host;
pub mod procs;
pub mod record;
pub mod registry;
pub mod spec;
pub mod volume;

pub use registry::{SessionError, SessionInfo, Sessions};
