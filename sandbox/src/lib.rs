//! The sandbox engine: launching a sandbox (`launch`, which mounts the
//! guest's /proc and /sys as the `procfs` crate plans them), serving its
//! trapped calls (`trap`), its network (`network`, `socket_factory`),
//! its limits (`limits`, `output`), the supervisor's own confinement
//! (`confine`), and a run from launch to report (`run`, `ending`,
//! `report`), all configured by one [`config::SandboxConfig`].
//!
//! The front-ends (`run`'s flags, the pool, the OCI runtime: the
//! `supervisor` crate) build that config and call [`run::run`] with
//! their [`embedding::Embedding`]; nothing here knows of them. Host calls are wrapped in `sys`.

pub mod checkpoint;
pub mod config;
pub mod confine;
pub mod embedding;
mod ending;
pub mod launch;
mod launch_hooks;
pub mod limits;
mod mountinfo;
pub mod network;
pub mod output;
mod proc_text;
pub mod report;
pub mod run;
pub mod socket_factory;
pub mod sys;
pub mod trap;
pub mod tty;
