//! /proc/PID/mountinfo's octal escapes (`\040` for a space, `\134` for
//! a backslash: the kernel escapes what would break its fields), decoded
//! to the bytes of the name, for the readers of mountinfo lines: the
//! cgroup hierarchies (`limits/cgroup.rs`) and an engine's overlay
//! (`launch/engine_overlay.rs`). Does not own splitting lines or fields.

/// The byte of a `\NNN` octal escape at the start of `b`.
pub fn octal(b: &[u8]) -> Option<u8> {
    match b {
        [b'\\', d @ ..] if d.len() >= 3 && d[..3].iter().all(|c| (b'0'..=b'7').contains(c)) => {
            let v = d[..3].iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
            u8::try_from(v).ok()
        }
        _ => None,
    }
}

/// `text` with its `\NNN` octal escapes decoded.
pub fn unescape(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let (mut out, mut i) = (Vec::with_capacity(b.len()), 0);
    while i < b.len() {
        match octal(&b[i..]) {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b"), b"/a b");
        assert_eq!(unescape(r"/a\\"), br"/a\\");
        // Not three octal digits, or past a byte: left as written.
        assert_eq!(unescape(r"/a\9999"), br"/a\9999");
        assert_eq!(unescape(r"/a\777"), br"/a\777");
    }
}
