//! The capabilities the guest's root holds inside its own user namespace
//! when the sandbox maps a range of ids: Docker's default set, less
//! `--cap-drop`, plus `--cap-add` (only from that set: a capability
//! outside it, SYS_ADMIN, NET_ADMIN, SYS_PTRACE..., is refused at the
//! command line). With one id mapped the guest holds none.
//!
//! Owns the names and the set; not how they are kept (`privs.rs`,
//! `users.rs`) or what they unlock (docs/policy.md).

/// (number, name) of Docker's default capabilities.
pub const DEFAULT_CAPS: [(u32, &str); 13] = [
    (0, "CHOWN"),
    (1, "DAC_OVERRIDE"),
    (3, "FOWNER"),
    (4, "FSETID"),
    (5, "KILL"),
    (6, "SETGID"),
    (7, "SETUID"),
    (8, "SETPCAP"),
    (10, "NET_BIND_SERVICE"),
    (18, "SYS_CHROOT"),
    (27, "MKNOD"),
    (29, "AUDIT_WRITE"),
    (31, "SETFCAP"),
];

/// The default set as a mask (bit N: capability N).
pub fn default_mask() -> u64 {
    DEFAULT_CAPS.iter().fold(0, |m, (n, _)| m | (1 << n))
}

/// A capability's bit from its name (`CHOWN`, `cap_chown`; `ALL` for
/// the whole default set), or a one-line error naming the set.
pub fn parse(name: &str) -> Result<u64, String> {
    let upper = name.trim().to_ascii_uppercase();
    let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
    if bare == "ALL" {
        return Ok(default_mask());
    }
    DEFAULT_CAPS
        .iter()
        .find(|(_, n)| *n == bare)
        .map(|(bit, _)| 1u64 << bit)
        .ok_or_else(|| {
            let names: Vec<&str> = DEFAULT_CAPS.iter().map(|(_, n)| *n).collect();
            format!(
                "{name}: not a capability the sandbox can grant (one of {}, or ALL)",
                names.join(", ")
            )
        })
}

/// The set after `drop` and `add` (masks from [`parse`]), Docker's
/// order: drops first, adds win.
pub fn resolve(drop: u64, add: u64) -> u64 {
    (default_mask() & !drop) | add
}

/// The names of the capabilities in `mask`.
pub fn names(mask: u64) -> Vec<&'static str> {
    DEFAULT_CAPS
        .iter()
        .filter(|(bit, _)| mask & (1 << bit) != 0)
        .map(|(_, n)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_default_set() {
        assert_eq!(default_mask(), 0xa804_05fb);
        assert_eq!(names(default_mask()).len(), 13);
    }

    #[test]
    fn parses_names() {
        assert_eq!(parse("CHOWN"), Ok(1));
        assert_eq!(parse("cap_kill"), Ok(1 << 5));
        assert_eq!(parse("all"), Ok(default_mask()));
        let e = parse("SYS_ADMIN").unwrap_err();
        assert!(e.starts_with("SYS_ADMIN: not a capability"), "{e}");
        assert!(parse("NET_ADMIN").is_err() && parse("SYS_PTRACE").is_err());
    }

    #[test]
    fn drops_then_adds() {
        let no_chown = resolve(1, 0);
        assert_eq!(no_chown & 1, 0);
        assert_eq!(resolve(default_mask(), 1 << 7), 1 << 7);
        assert_eq!(resolve(1, 1), default_mask());
    }
}
