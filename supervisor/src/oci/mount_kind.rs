//! What a config.json mount entry is, as the runtime reads it: a tmpfs
//! (with its `size=`), a bind (type `bind`, or an `rbind`/`bind` option)
//! of a source, or a type the sandbox does not take.
//!
//! Owns that classification alone, one for every reader of the mounts
//! (`bundle.rs`'s mounts, `dev_shm.rs`'s /dev/shm). Does not own what a
//! reader makes of an entry (its destination, its checks of the source,
//! its warnings).

use std::path::PathBuf;

use super::config::Mount;

/// One mount entry, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciMountKind {
    /// Type `tmpfs`; `size` is its `size=` option as written.
    Tmpfs { size: Option<String>, no_exec: bool },
    /// A bind of `source` (empty when config.json gives none).
    Bind {
        source: PathBuf,
        read_only: bool,
        no_exec: bool,
    },
    /// Any other type (empty when config.json gives none).
    Other { typ: String },
}

/// What `m` is: its type first, then its `bind`/`rbind` options.
pub fn classify(m: &Mount) -> OciMountKind {
    let options = m.options().clone().unwrap_or_default();
    let has = |o: &str| options.iter().any(|x| x == o);
    let no_exec = has("noexec");
    let typ = m.typ().clone().unwrap_or_default();
    if typ == "tmpfs" {
        let size = options
            .iter()
            .find_map(|o| o.strip_prefix("size="))
            .map(str::to_string);
        return OciMountKind::Tmpfs { size, no_exec };
    }
    if typ == "bind" || has("bind") || has("rbind") {
        return OciMountKind::Bind {
            source: m.source().clone().unwrap_or_default(),
            read_only: has("ro"),
            no_exec,
        };
    }
    OciMountKind::Other { typ }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(json: &str) -> Mount {
        serde_json::from_str(json).expect("a test's mount")
    }

    #[test]
    fn types_then_options() {
        let m =
            mount(r#"{"destination": "/t", "type": "tmpfs", "options": ["noexec", "size=1m"]}"#);
        let want = OciMountKind::Tmpfs {
            size: Some("1m".into()),
            no_exec: true,
        };
        assert_eq!(classify(&m), want);
        let m = mount(r#"{"destination": "/b", "source": "/s", "options": ["rbind", "ro"]}"#);
        let want = OciMountKind::Bind {
            source: "/s".into(),
            read_only: true,
            no_exec: false,
        };
        assert_eq!(classify(&m), want);
        let m = mount(r#"{"destination": "/b", "type": "bind"}"#);
        let want = OciMountKind::Bind {
            source: PathBuf::new(),
            read_only: false,
            no_exec: false,
        };
        assert_eq!(classify(&m), want);
        let m = mount(r#"{"destination": "/m", "type": "mqueue", "options": ["ro"]}"#);
        let want = OciMountKind::Other {
            typ: "mqueue".into(),
        };
        assert_eq!(classify(&m), want);
    }
}
