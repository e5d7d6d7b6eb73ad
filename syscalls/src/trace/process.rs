//! Decoding the arguments of the process-family calls the policy denies
//! (or lets pass only without namespace flags), for `--trace`:
//! `unshare(CLONE_NEWUSER|CLONE_NEWNS) = -1 EPERM [denied by policy]`,
//! `ptrace(PTRACE_TRACEME, 0, 0, 0)`, `bpf(BPF_PROG_LOAD, 0x7ff..., 148)`.
//!
//! Owns: the names of clone and namespace flags, ptrace requests and bpf
//! commands, all read from registers. Does not own which argument is
//! which (the signatures in `mod.rs`).

use super::flag_names;

/// `clone`'s, `unshare`'s and `setns`'s flags: the namespace and sharing
/// bits by name; `clone`'s exit signal (its low byte) as a number.
pub(super) fn clone_flags(raw: u64) -> String {
    const NAMES: &[(u32, &str)] = &[
        (libc::CLONE_VM as u32, "CLONE_VM"),
        (libc::CLONE_FS as u32, "CLONE_FS"),
        (libc::CLONE_FILES as u32, "CLONE_FILES"),
        (libc::CLONE_SIGHAND as u32, "CLONE_SIGHAND"),
        (libc::CLONE_PIDFD as u32, "CLONE_PIDFD"),
        (libc::CLONE_PTRACE as u32, "CLONE_PTRACE"),
        (libc::CLONE_VFORK as u32, "CLONE_VFORK"),
        (libc::CLONE_PARENT as u32, "CLONE_PARENT"),
        (libc::CLONE_THREAD as u32, "CLONE_THREAD"),
        (libc::CLONE_NEWNS as u32, "CLONE_NEWNS"),
        (libc::CLONE_SYSVSEM as u32, "CLONE_SYSVSEM"),
        (libc::CLONE_SETTLS as u32, "CLONE_SETTLS"),
        (libc::CLONE_PARENT_SETTID as u32, "CLONE_PARENT_SETTID"),
        (libc::CLONE_CHILD_CLEARTID as u32, "CLONE_CHILD_CLEARTID"),
        (libc::CLONE_UNTRACED as u32, "CLONE_UNTRACED"),
        (libc::CLONE_CHILD_SETTID as u32, "CLONE_CHILD_SETTID"),
        (libc::CLONE_NEWCGROUP as u32, "CLONE_NEWCGROUP"),
        (libc::CLONE_NEWUTS as u32, "CLONE_NEWUTS"),
        (libc::CLONE_NEWIPC as u32, "CLONE_NEWIPC"),
        (libc::CLONE_NEWUSER as u32, "CLONE_NEWUSER"),
        (libc::CLONE_NEWPID as u32, "CLONE_NEWPID"),
        (libc::CLONE_NEWNET as u32, "CLONE_NEWNET"),
        (libc::CLONE_IO as u32, "CLONE_IO"),
        // CLONE_NEWTIME shares CSIGNAL's bits: named for unshare and setns.
        (libc::CLONE_NEWTIME as u32, "CLONE_NEWTIME"),
    ];
    flag_names(raw as u32, NAMES, "0")
}

/// `ptrace`'s request: `PTRACE_ATTACH`, or the number.
pub(super) fn ptrace_request(raw: u64) -> String {
    let name = match raw as u32 {
        0 => "PTRACE_TRACEME",
        1 => "PTRACE_PEEKTEXT",
        2 => "PTRACE_PEEKDATA",
        4 => "PTRACE_POKETEXT",
        5 => "PTRACE_POKEDATA",
        7 => "PTRACE_CONT",
        8 => "PTRACE_KILL",
        12 => "PTRACE_GETREGS",
        16 => "PTRACE_ATTACH",
        17 => "PTRACE_DETACH",
        24 => "PTRACE_SYSCALL",
        0x4200 => "PTRACE_SETOPTIONS",
        0x4206 => "PTRACE_SEIZE",
        other => return other.to_string(),
    };
    name.to_string()
}

/// `bpf`'s command: `BPF_PROG_LOAD`, or the number.
pub(super) fn bpf_command(raw: u64) -> String {
    const NAMES: [&str; 6] = [
        "BPF_MAP_CREATE",
        "BPF_MAP_LOOKUP_ELEM",
        "BPF_MAP_UPDATE_ELEM",
        "BPF_MAP_DELETE_ELEM",
        "BPF_MAP_GET_NEXT_KEY",
        "BPF_PROG_LOAD",
    ];
    NAMES
        .get(raw as usize)
        .map_or_else(|| (raw as i32).to_string(), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_flags_read_like_strace() {
        let f = (libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as u64;
        assert_eq!(clone_flags(f), "CLONE_NEWNS|CLONE_NEWUSER");
        assert_eq!(clone_flags(0), "0");
        assert_eq!(clone_flags(libc::CLONE_NEWNET as u64), "CLONE_NEWNET");
        // fork's SIGCHLD in clone's low byte: a number, as strace shows.
        assert_eq!(clone_flags(libc::SIGCHLD as u64), "0x11");
    }

    #[test]
    fn requests_and_commands_are_named() {
        assert_eq!(ptrace_request(0), "PTRACE_TRACEME");
        assert_eq!(ptrace_request(0x4206), "PTRACE_SEIZE");
        assert_eq!(ptrace_request(999), "999");
        assert_eq!(bpf_command(5), "BPF_PROG_LOAD");
        assert_eq!(bpf_command(77), "77");
    }
}
