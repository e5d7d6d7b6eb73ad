//! The allowlists of the multiplexed calls the filter passes: the ioctl
//! requests, fcntl commands, prctl options, madvise advice and
//! personalities that reach the host kernel (each tested in BPF on the
//! low 32 bits of its register, an `unsigned int` or `int` in the
//! kernel). Anything else gets the errno the table names for its call.
//!
//! Owns only the lists and why each entry is on them. Does not own the
//! rows that use them (`table.rs`) or the filter (`bpf.rs`).

/// ioctl requests: the terminal's (termios, window size, job control,
/// pseudo-terminals: shells, editors, `script`, Python's `pty` and
/// `os.get_terminal_size`), the generic descriptor requests
/// (FIONREAD/FIONBIO/FIOCLEX/FIONCLEX/FIOASYNC, FIOGETOWN/FIOSETOWN),
/// the socket requests that read the guest's own network namespace
/// (interface names, indexes, flags, addresses: glibc's
/// `if_nametoindex`, `ifconfig`, Python's `socket.if_nametoindex`) and
/// SIOCATMARK/SIOCGSTAMP, and /dev/random's entropy count.
pub const IOCTL: &[u32] = &[
    // termios (TCGETS..TCFLSH: tcgetattr, tcsetattr, tcdrain, tcflow, tcflush).
    0x5401,
    0x5402,
    0x5403,
    0x5404,
    0x5405,
    0x5406,
    0x5407,
    0x5408,
    0x5409,
    0x540a,
    0x540b,
    // TIOCEXCL, TIOCNXCL, TIOCSCTTY, TIOCGPGRP, TIOCSPGRP, TIOCOUTQ.
    0x540c,
    0x540d,
    0x540e,
    0x540f,
    0x5410,
    0x5411,
    // TIOCGWINSZ, TIOCSWINSZ, FIONREAD, TIOCPKT, FIONBIO, TIOCNOTTY.
    0x5413,
    0x5414,
    0x541b,
    0x5420,
    0x5421,
    0x5422,
    // TIOCGETD, TCSBRKP, TIOCSBRK, TIOCCBRK, TIOCGSID.
    0x5424,
    0x5425,
    0x5427,
    0x5428,
    0x5429,
    // TCGETS2, TCSETS2, TCSETSW2, TCSETSF2.
    0x802c_542a,
    0x402c_542b,
    0x402c_542c,
    0x402c_542d,
    // TIOCGPTN, TIOCSPTLCK, TIOCGDEV, TIOCSIG, TIOCVHANGUP (of the
    // guest's own pty), TIOCGPKT, TIOCGPTLCK, TIOCGEXCL, TIOCGPTPEER.
    0x8004_5430,
    0x4004_5431,
    0x8004_5432,
    0x4004_5436,
    0x5437,
    0x8004_5438,
    0x8004_5439,
    0x8004_5440,
    0x5441,
    // FIONCLEX, FIOCLEX, FIOASYNC.
    0x5450,
    0x5451,
    0x5452,
    // FIOSETOWN, SIOCSPGRP, FIOGETOWN, SIOCGPGRP, SIOCATMARK, SIOCGSTAMP, SIOCGSTAMPNS.
    0x8901,
    0x8902,
    0x8903,
    0x8904,
    0x8905,
    0x8906,
    0x8907,
    // SIOCGIFNAME, SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFDSTADDR,
    // SIOCGIFBRDADDR, SIOCGIFNETMASK, SIOCGIFMETRIC, SIOCGIFMTU,
    // SIOCGIFHWADDR, SIOCGIFINDEX, SIOCGIFTXQLEN.
    0x8910,
    0x8912,
    0x8913,
    0x8915,
    0x8917,
    0x8919,
    0x891b,
    0x891d,
    0x8921,
    0x8927,
    0x8933,
    0x8942,
    // RNDGETENTCNT.
    0x8004_5200,
];

/// fcntl commands: duplicating, descriptor and status flags, record and
/// open-file-description locks, signal-driven I/O owners, dnotify, pipe
/// sizes and memfd seals. Leases (F_SETLEASE, F_GETLEASE) and write-life
/// hints are left out (EINVAL): Samba and databases treat them as absent.
pub const FCNTL: &[u32] = &[
    0,    // F_DUPFD
    1,    // F_GETFD
    2,    // F_SETFD
    3,    // F_GETFL
    4,    // F_SETFL
    5,    // F_GETLK
    6,    // F_SETLK
    7,    // F_SETLKW
    8,    // F_SETOWN
    9,    // F_GETOWN
    10,   // F_SETSIG
    11,   // F_GETSIG
    15,   // F_SETOWN_EX
    16,   // F_GETOWN_EX
    17,   // F_GETOWNER_UIDS
    36,   // F_OFD_GETLK
    37,   // F_OFD_SETLK
    38,   // F_OFD_SETLKW
    1026, // F_NOTIFY
    1030, // F_DUPFD_CLOEXEC
    1031, // F_SETPIPE_SZ
    1032, // F_GETPIPE_SZ
    1033, // F_ADD_SEALS
    1034, // F_GET_SEALS
];

/// prctl options a program uses on itself. Left out (EINVAL): timing and
/// TSC controls, machine check policy, perf events, syscall user
/// dispatch, core scheduling, KSM merging, the I/O flusher flag.
/// PR_SET_MM passes, for what the kernel grants without privilege:
/// PR_SET_MM_MAP (a process's own memory-map bounds: code, data, heap,
/// stack, arguments, environment, each validated against its maps and
/// its data limit), which a woken session's restorer sets in the
/// restored process (`sandbox/src/checkpoint/restore.rs`); replacing
/// the exe link needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN, and every
/// single-field PR_SET_MM_* option CAP_SYS_RESOURCE in the initial user
/// namespace, none of which a guest holds (docs/policy.md).
pub const PRCTL: &[u32] = &[
    1,           // PR_SET_PDEATHSIG
    2,           // PR_GET_PDEATHSIG
    3,           // PR_GET_DUMPABLE
    4,           // PR_SET_DUMPABLE
    7,           // PR_GET_KEEPCAPS
    8,           // PR_SET_KEEPCAPS
    15,          // PR_SET_NAME
    16,          // PR_GET_NAME
    21,          // PR_GET_SECCOMP
    22,          // PR_SET_SECCOMP
    23,          // PR_CAPBSET_READ
    24,          // PR_CAPBSET_DROP
    27,          // PR_GET_SECUREBITS
    28,          // PR_SET_SECUREBITS
    29,          // PR_SET_TIMERSLACK
    30,          // PR_GET_TIMERSLACK
    35,          // PR_SET_MM (PR_SET_MM_MAP; the rest EPERM: see above)
    36,          // PR_SET_CHILD_SUBREAPER
    37,          // PR_GET_CHILD_SUBREAPER
    38,          // PR_SET_NO_NEW_PRIVS
    39,          // PR_GET_NO_NEW_PRIVS
    41,          // PR_SET_THP_DISABLE
    42,          // PR_GET_THP_DISABLE
    47,          // PR_CAP_AMBIENT
    52,          // PR_GET_SPECULATION_CTRL
    53,          // PR_SET_SPECULATION_CTRL
    65,          // PR_SET_MDWE
    66,          // PR_GET_MDWE
    0x4155_5856, // PR_GET_AUXV
    0x5356_4d41, // PR_SET_VMA (glibc names its anonymous mappings)
    0x5961_6d61, // PR_SET_PTRACER (Yama; ptrace itself is denied)
];

/// madvise advice. Left out (EINVAL): KSM merging (MADV_MERGEABLE,
/// MADV_UNMERGEABLE: a cross-process side channel), MADV_COLLAPSE, and
/// the poisoning and soft-offline requests.
pub const MADVISE: &[u32] = &[
    0,   // MADV_NORMAL
    1,   // MADV_RANDOM
    2,   // MADV_SEQUENTIAL
    3,   // MADV_WILLNEED
    4,   // MADV_DONTNEED
    8,   // MADV_FREE
    9,   // MADV_REMOVE
    10,  // MADV_DONTFORK
    11,  // MADV_DOFORK
    14,  // MADV_HUGEPAGE
    15,  // MADV_NOHUGEPAGE
    16,  // MADV_DONTDUMP
    17,  // MADV_DODUMP
    18,  // MADV_WIPEONFORK
    19,  // MADV_KEEPONFORK
    20,  // MADV_COLD
    21,  // MADV_PAGEOUT
    22,  // MADV_POPULATE_READ
    23,  // MADV_POPULATE_WRITE
    24,  // MADV_DONTNEED_LOCKED
    102, // MADV_GUARD_INSTALL
    103, // MADV_GUARD_REMOVE
];

/// Personalities, Docker's list: PER_LINUX, PER_LINUX32, UNAME26 with
/// either, and the query (0xffffffff).
pub const PERSONALITY: &[u32] = &[0, 0x8, 0x2_0000, 0x2_0008, 0xffff_ffff];
