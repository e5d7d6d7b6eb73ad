//! Lexical path utilities: splitting off the final component, and spotting
//! the few prefixes that name the caller itself (`/proc/self`,
//! `/proc/thread-self`, `/dev/fd`, `/dev/stdin`, ...).
//!
//! Owns: byte-level parsing only. Nothing here touches the filesystem or
//! decides what a path may reach; see [`crate::Resolver`].

/// Whether a guest path is absolute.
pub fn is_abs(p: &[u8]) -> bool {
    p.first() == Some(&b'/')
}

/// A path cut before its final component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split<'a> {
    /// The path is all slashes: it names the root, which has no name.
    Root,
    /// `dir` (empty: the start directory itself; may be `/`) and the
    /// offset of the final component, whose trailing slashes stay on it.
    Name { dir: &'a [u8], name_at: usize },
}

/// Split `p` (non-empty) into its directory part and final component.
pub fn split_last(p: &[u8]) -> Split<'_> {
    let end = p.iter().rposition(|&c| c != b'/').map_or(0, |i| i + 1);
    if end == 0 {
        return Split::Root;
    }
    match p[..end].iter().rposition(|&c| c == b'/') {
        Some(i) => Split::Name {
            dir: &p[..=i],
            name_at: i + 1,
        },
        None => Split::Name {
            dir: &[],
            name_at: 0,
        },
    }
}

/// The first component of a relative path (empty when there is none).
pub fn first_component(p: &[u8]) -> &[u8] {
    let p = trim_start_slashes(p);
    &p[..p.iter().position(|&c| c == b'/').unwrap_or(p.len())]
}

fn trim_start_slashes(p: &[u8]) -> &[u8] {
    &p[p.iter().position(|&c| c != b'/').unwrap_or(p.len())..]
}

/// A prefix that names the calling process or thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// `/proc/self` → `/proc/<tgid>`.
    ProcSelf,
    /// `/proc/thread-self` → `/proc/<tgid>/task/<tid>`.
    ProcThreadSelf,
    /// `/proc/mounts` and `/proc/net` → `/proc/<tgid>/<same>`.
    ProcOwn(&'static str),
    /// `/dev/fd` → `/proc/<tgid>/fd`.
    DevFd,
    /// `/dev/stdin`, `/dev/stdout`, `/dev/stderr` → `/proc/<tgid>/fd/N`.
    DevStd(u8),
}

impl Special {
    /// The rewritten prefix for the caller `(tgid, tid)`.
    pub fn expand(self, tgid: i32, tid: i32) -> String {
        match self {
            Special::ProcSelf => format!("/proc/{tgid}"),
            Special::ProcThreadSelf => format!("/proc/{tgid}/task/{tid}"),
            Special::ProcOwn(name) => format!("/proc/{tgid}/{name}"),
            Special::DevFd => format!("/proc/{tgid}/fd"),
            Special::DevStd(n) => format!("/proc/{tgid}/fd/{n}"),
        }
    }
}

fn classify(a: &[u8], b: &[u8]) -> Option<Special> {
    match (a, b) {
        (b"proc", b"self") => Some(Special::ProcSelf),
        (b"proc", b"thread-self") => Some(Special::ProcThreadSelf),
        (b"proc", b"mounts") => Some(Special::ProcOwn("mounts")),
        (b"proc", b"net") => Some(Special::ProcOwn("net")),
        (b"dev", b"fd") => Some(Special::DevFd),
        (b"dev", b"stdin") => Some(Special::DevStd(0)),
        (b"dev", b"stdout") => Some(Special::DevStd(1)),
        (b"dev", b"stderr") => Some(Special::DevStd(2)),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether the absolute path `p` starts (lexically: `//`, `.` and `..`
/// folded) with a [`Special`] prefix, and the offset just past it in `p`.
/// `follow`: whether a prefix that is the whole path is followed (a final
/// `/proc/self` without follow names the symlink itself, not the caller).
pub fn special_prefix(p: &[u8], follow: bool) -> Option<(Special, usize)> {
    if !contains(p, b"proc") && !contains(p, b"dev") {
        return None;
    }
    let mut stack: [&[u8]; 2] = [&[], &[]];
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < p.len() {
        if p[i] == b'/' {
            i += 1;
            continue;
        }
        let end = p[i..]
            .iter()
            .position(|&c| c == b'/')
            .map_or(p.len(), |n| i + n);
        let comp = &p[i..end];
        i = end;
        match comp {
            b"." => continue,
            b".." => {
                depth = depth.saturating_sub(1);
                continue;
            }
            _ => {}
        }
        if depth < 2 {
            stack[depth] = comp;
        }
        depth += 1;
        if depth == 2 {
            if let Some(s) = classify(stack[0], stack[1]) {
                let followed = follow || end < p.len();
                return followed.then_some((s, end));
            }
        }
    }
    None
}

/// Whether `p` has a `..` component.
pub fn has_dotdot(p: &[u8]) -> bool {
    p.split(|&c| c == b'/').any(|c| c == b"..")
}

/// Whether a relative path may need the caller's identity when it starts
/// in /proc or /dev (its first component is one of the special names).
pub fn maybe_special_relative(p: &[u8]) -> bool {
    matches!(
        first_component(p),
        b"self" | b"thread-self" | b"mounts" | b"net" | b"fd" | b"stdin" | b"stdout" | b"stderr"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(p: &[u8]) -> (&[u8], &[u8]) {
        match split_last(p) {
            Split::Root => (b"<root>", b""),
            Split::Name { dir, name_at } => (dir, &p[name_at..]),
        }
    }

    #[test]
    fn dotdot_components_are_found_not_dots_in_names() {
        assert!(has_dotdot(b"/../self/comm"));
        assert!(has_dotdot(b".."));
        assert!(!has_dotdot(b"/..x/comm"));
        assert!(!has_dotdot(b"/a.../b"));
    }

    #[test]
    fn splits() {
        assert_eq!(split_last(b"/"), Split::Root);
        assert_eq!(split_last(b"///"), Split::Root);
        assert_eq!(name(b"a"), (&b""[..], &b"a"[..]));
        assert_eq!(name(b"a/"), (&b""[..], &b"a/"[..]));
        assert_eq!(name(b"/a"), (&b"/"[..], &b"a"[..]));
        assert_eq!(name(b"/a/b//"), (&b"/a/"[..], &b"b//"[..]));
        assert_eq!(name(b"a/."), (&b"a/"[..], &b"."[..]));
        assert_eq!(name(b"//x"), (&b"//"[..], &b"x"[..]));
    }

    #[test]
    fn specials() {
        assert_eq!(
            special_prefix(b"/proc/self/fd", false),
            Some((Special::ProcSelf, 10))
        );
        assert_eq!(special_prefix(b"/proc/self", false), None);
        assert_eq!(
            special_prefix(b"/proc/self", true),
            Some((Special::ProcSelf, 10))
        );
        assert_eq!(
            special_prefix(b"/proc/self/", false),
            Some((Special::ProcSelf, 10))
        );
        assert_eq!(
            special_prefix(b"//./proc//self/x", true),
            Some((Special::ProcSelf, 14))
        );
        assert_eq!(
            special_prefix(b"/../proc/thread-self/x", true).map(|s| s.0),
            Some(Special::ProcThreadSelf)
        );
        assert_eq!(
            special_prefix(b"/dev/stdout", true),
            Some((Special::DevStd(1), 11))
        );
        assert_eq!(special_prefix(b"/dev/null", true), None);
        assert_eq!(special_prefix(b"/usr/proc/self", true), None);
        assert_eq!(special_prefix(b"/proc/1/fd", true), None);
        assert_eq!(
            special_prefix(b"/a/b/../../proc/self/x", true).map(|s| s.1),
            Some(20)
        );
        assert_eq!(
            special_prefix(b"/tmp/../dev/fd/3", true),
            Some((Special::DevFd, 14))
        );
        assert_eq!(Special::DevStd(2).expand(7, 9), "/proc/7/fd/2");
        assert_eq!(Special::ProcThreadSelf.expand(7, 9), "/proc/7/task/9");
    }

    #[test]
    fn relative_specials() {
        assert!(maybe_special_relative(b"self/status"));
        assert!(maybe_special_relative(b"fd"));
        assert!(!maybe_special_relative(b"a/self"));
    }
}
