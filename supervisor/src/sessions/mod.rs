//! Sessions: long-lived per-user sandboxes that run one command after
//! another (`exec`), hold files, mount a persistent volume by name, and
//! end when idle past their TTL, at their maximum lifetime, or when
//! deleted. The daemon (`supervisor serve`) serves them over HTTP; this
//! module has no HTTP in it.
//!
//! - `spec`: what a client asks for (a session, a command), checked;
//! - `registry`: the sessions, their lifecycle and the reaper;
//! - `requests`: a session's exec and file requests;
//! - `info`: a session's state as the API shows it;
//! - `metadata`: the operator's tags on a session, their bounds and the list's filter;
//! - `error`: what goes wrong, by who is to blame;
//! - `host`: the `session-sandbox` process running one session's sandbox;
//! - `exec`: one command over the sandbox's exec socket, output streamed;
//! - `files`: put and get of a session's files, as commands in it;
//! - `volume`: persistent volumes under the data directory;
//! - `record`: a session's record on disk and recovery at a restart;
//! - `procs`: a session's processes and memory, from /proc;
//! - `process`: a session's sandbox process: start, ready, stop;
//! - `template`: a template (a session's shape and its setup), checked and kept;
//! - `templates`: the templates' warm sessions and their filler;
//! - `hibernate`: saving a session's processes and waking them in a new sandbox.

pub mod ending;
pub mod error;
pub mod exec;
pub mod files;
pub mod hibernate;
pub mod host;
pub mod info;
pub mod metadata;
pub mod process;
pub mod procs;
pub mod record;
pub mod registry;
pub mod requests;
pub mod spec;
pub mod template;
pub mod templates;
pub mod volume;

pub use registry::{SessionError, SessionInfo, Sessions};
