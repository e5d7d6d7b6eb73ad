//! A session's metadata: the operator's tags (`{"user": "u_42",
//! "kind": "kernel"}`), string keys to string values, given at creation,
//! kept in the session's record and shown by its state and the list,
//! which a [`Filter`] narrows. Metadata never reaches the guest: it is
//! not in the sandbox's flags nor in any command's environment.
//!
//! Owns the bounds on metadata and matching it against a list filter;
//! not where it is kept (`record.rs`) nor the query's wire form
//! (`serve/sessions/`).

use std::collections::BTreeMap;

/// A session's metadata.
pub type Metadata = BTreeMap<String, String>;

/// Most keys a session's metadata holds.
pub const MAX_KEYS: usize = 64;
/// Longest key, bytes.
pub const MAX_KEY: usize = 128;
/// Longest value, bytes.
pub const MAX_VALUE: usize = 1024;
/// Most bytes of keys and values together.
pub const MAX_TOTAL: usize = 16 * 1024;

/// Checks `metadata` against the bounds: at most [`MAX_KEYS`] keys of 1
/// to [`MAX_KEY`] bytes, values of at most [`MAX_VALUE`] bytes, at most
/// [`MAX_TOTAL`] bytes in all, no control characters in either.
pub fn check(metadata: &Metadata) -> Result<(), String> {
    if metadata.len() > MAX_KEYS {
        return Err(format!(
            "metadata: {} keys, at most {MAX_KEYS}",
            metadata.len()
        ));
    }
    let mut total = 0;
    for (k, v) in metadata {
        check_key(k)?;
        if v.len() > MAX_VALUE {
            return Err(format!(
                "metadata {:?}: a value of {} bytes, at most {MAX_VALUE}",
                short(k),
                v.len()
            ));
        }
        if v.chars().any(char::is_control) {
            return Err(format!(
                "metadata {:?}: a value without control characters",
                short(k)
            ));
        }
        total += k.len() + v.len();
    }
    if total > MAX_TOTAL {
        return Err(format!(
            "metadata: {total} bytes of keys and values, at most {MAX_TOTAL}"
        ));
    }
    Ok(())
}

fn check_key(k: &str) -> Result<(), String> {
    if k.is_empty() || k.len() > MAX_KEY {
        return Err(format!(
            "metadata {:?}: a key of {} bytes, from 1 to {MAX_KEY}",
            short(k),
            k.len()
        ));
    }
    if k.chars().any(char::is_control) {
        return Err(format!(
            "metadata {:?}: a key without control characters",
            short(k)
        ));
    }
    Ok(())
}

/// The first 32 characters of `s`, for an error's line.
fn short(s: &str) -> String {
    match s.char_indices().nth(32) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

/// Reads metadata (`#[serde(deserialize_with)]`): an object of string
/// values (`null`: none), or an error that says so and names the field.
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
    use serde::de::Error;
    let object = match serde::Deserialize::deserialize(d)? {
        serde_json::Value::Object(object) => object,
        serde_json::Value::Null => return Ok(Metadata::new()),
        other => {
            return Err(D::Error::custom(format!(
                "metadata: an object of string values, not {}",
                kind(&other)
            )))
        }
    };
    object
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(v) => Ok((k, v)),
            other => Err(D::Error::custom(format!(
                "metadata {:?}: a string value, not {}",
                short(&k),
                kind(&other)
            ))),
        })
        .collect()
}

/// What a JSON value is, for an error's line.
fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A list filter: pairs every one of which a session's metadata must hold.
#[derive(Debug, Default)]
pub struct Filter(Vec<(String, String)>);

impl Filter {
    /// The filter of a list request's query pairs: each `metadata.KEY`
    /// asks for KEY's value; any other name is refused.
    pub fn from_query(pairs: Vec<(String, String)>) -> Result<Filter, String> {
        let mut wanted = Vec::new();
        for (name, value) in pairs {
            let Some(key) = name.strip_prefix("metadata.") else {
                return Err(format!(
                    "query parameter {:?}: only metadata.KEY=VALUE filters the list",
                    short(&name)
                ));
            };
            check_key(key)?;
            wanted.push((key.to_string(), value));
        }
        Ok(Filter(wanted))
    }

    /// Whether `metadata` holds every pair of the filter.
    pub fn matches(&self, metadata: &Metadata) -> bool {
        self.0
            .iter()
            .all(|(k, v)| metadata.get(k).is_some_and(|have| have == v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> Metadata {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn bounds_are_kept() {
        assert!(check(&meta(&[("user", "u_42"), ("kind", "kernel")])).is_ok());
        assert!(check(&meta(&[("", "x")])).is_err());
        assert!(check(&meta(&[(&"k".repeat(MAX_KEY + 1), "x")])).is_err());
        assert!(check(&meta(&[("k", &"v".repeat(MAX_VALUE + 1))])).is_err());
        assert!(check(&meta(&[("k", "a\nb")])).is_err());
        let many: Metadata = (0..=MAX_KEYS)
            .map(|i| (i.to_string(), String::new()))
            .collect();
        assert!(check(&many).is_err());
        let big: Metadata = (0..20).map(|i| (i.to_string(), "v".repeat(1000))).collect();
        assert!(check(&big).unwrap_err().contains("at most 16384"));
    }

    #[test]
    fn every_pair_of_a_filter_must_match() {
        let q = |pairs: &[(&str, &str)]| {
            Filter::from_query(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let m = meta(&[("user", "u_42"), ("kind", "kernel")]);
        assert!(q(&[]).unwrap().matches(&m));
        assert!(q(&[("metadata.user", "u_42")]).unwrap().matches(&m));
        assert!(!q(&[("metadata.user", "u_42"), ("metadata.kind", "x")])
            .unwrap()
            .matches(&m));
        assert!(!q(&[("metadata.team", "")]).unwrap().matches(&m));
        assert!(q(&[("user", "u_42")]).is_err());
        assert!(q(&[("metadata.", "x")]).is_err());
    }
}
