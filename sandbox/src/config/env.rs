//! The guest's environment ([`GuestEnv`]): the host's few variables and
//! the `--env` entries, or exactly an OCI bundle's `process.env`.
//!
//! Owns that part of the configuration and its resolution to the
//! variables the guest starts with. Does not own setting them (`launch/`).

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::launch::LaunchError;

/// Host variables the guest inherits when they are set ([`GuestEnv::FromHost`]).
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

/// The guest's environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuestEnv {
    /// The host's PATH, HOME, LANG and TERM where set, then each entry
    /// in order: `K=V` sets K, a name alone copies the host's (if set).
    FromHost(Vec<String>),
    /// Exactly these variables (an OCI bundle's `process.env`).
    Exact(Vec<(OsString, OsString)>),
}

impl GuestEnv {
    /// The guest's whole environment.
    pub fn resolve(&self) -> Result<Vec<(OsString, OsString)>, LaunchError> {
        match self {
            GuestEnv::Exact(pairs) => Ok(pairs.clone()),
            GuestEnv::FromHost(extra) => host_env(extra),
        }
    }
}

/// [`GuestEnv::FromHost`]'s environment: the host's PATH, HOME, LANG and
/// TERM where set, then `extra` (`K=V`, or a name copied from the host).
pub fn host_env(extra: &[String]) -> Result<Vec<(OsString, OsString)>, LaunchError> {
    let mut env: Vec<(OsString, OsString)> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for item in extra {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.to_string(), OsString::from(v)),
            None => match std::env::var_os(item) {
                Some(v) => (item.clone(), v),
                None => continue,
            },
        };
        if k.is_empty() || k.contains('\0') {
            return Err(LaunchError {
                exit_code: 125,
                message: format!("--env {item}: invalid variable name"),
            });
        }
        env.retain(|(old, _)| old != k.as_str());
        env.push((k.into(), v));
    }
    Ok(env)
}
