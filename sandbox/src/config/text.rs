//! Serde for the configuration's values that are written as text: a
//! network rule and a published port as their flag's value, a mount as
//! its kind and spec. Reading one parses it as the flag would, so a
//! config read from JSON is checked as the flags are.
//!
//! Owns those conversions only.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use vfs::mounts::{MountKind, MountSpec};

/// A list of values written as their `Display` text and read by `FromStr`.
pub mod list {
    use std::fmt::Display;
    use std::str::FromStr;

    use super::*;

    pub fn serialize<T: Display, S: Serializer>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(items.iter().map(|i| i.to_string()))
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Vec<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        let texts = Vec::<String>::deserialize(d)?;
        texts
            .iter()
            .map(|t| t.parse().map_err(D::Error::custom))
            .collect()
    }
}

/// One mount: `{"kind": "ro" | "rw" | "tmpfs", "spec": "HOST:GUEST" | "GUEST[:SIZE]"}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MountText {
    kind: String,
    spec: String,
}

/// Mounts as [`MountText`]s.
pub mod mounts {
    use super::*;

    pub fn serialize<S: Serializer>(mounts: &[MountSpec], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(mounts.iter().map(|m| {
            MountText {
                kind: match m.kind {
                    MountKind::ReadOnly => "ro",
                    MountKind::ReadWrite => "rw",
                    MountKind::Tmpfs { .. } => "tmpfs",
                }
                .to_string(),
                spec: m.spec.clone(),
            }
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MountSpec>, D::Error> {
        let texts = Vec::<MountText>::deserialize(d)?;
        texts
            .iter()
            .map(|t| {
                let parsed = match t.kind.as_str() {
                    "ro" => MountSpec::parse_ro(&t.spec),
                    "rw" => MountSpec::parse_rw(&t.spec),
                    "tmpfs" => MountSpec::parse_tmpfs(&t.spec),
                    other => return Err(D::Error::custom(format!("mount kind {other:?}"))),
                };
                parsed.map_err(D::Error::custom)
            })
            .collect()
    }
}
