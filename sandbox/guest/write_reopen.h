/* The retry of a refused open for writing only, for the preload
 * (fast_reads.c) and the static loader (static_loader_trap.c), which
 * share no library: whether an open's answer is the kernel's refusal
 * (EACCES) of a write-only open (no O_PATH), and the `open_how` with
 * which the caller makes it again by openat2, which the supervisor's
 * filter always traps: the supervisor serves the reopen of a file
 * handed to the guest as its stdio (`> out.txt`, then `echo x >
 * /dev/stdout` or freopen), which a root invoker's guest, running as
 * ids of its own, may not open natively (docs/launch-and-view.md,
 * "Stdio that is a host file"). Anything else the handler leaves to the
 * kernel, whose answer is the same refusal: then the first answer
 * stands, whatever the second was. Each caller keeps its own system
 * call primitive (and its own r9). Freestanding: no libc, no kernel
 * headers. Does not own which opens reach the retry (the callers'
 * filters and wrappers). */
#ifndef WRITE_REOPEN_H
#define WRITE_REOPEN_H

/* The kernel's struct open_how. */
struct write_reopen_how {
    unsigned long long flags, mode, resolve;
};

/* Whether `flags` open for writing only: O_WRONLY, no O_PATH. */
static inline int write_only(long flags)
{
    enum { o_accmode = 03, o_wronly = 01, o_path = 010000000 };
    return (flags & (o_accmode | o_path)) == o_wronly;
}

/* Whether `ret`, the answer of an open with `flags` (and `mode`), is a
 * refusal to make again by openat2; if so `how` holds its flags and
 * mode (the mode only where the open creates, as the kernel's openat
 * reads it). */
static inline int write_reopen(long ret, long flags, long mode, struct write_reopen_how *how)
{
    enum { eacces = 13, o_creat = 0100, o_tmpfile = 020200000 };
    if (ret != -eacces || !write_only(flags))
        return 0;
    int creates = (flags & o_creat) || (flags & o_tmpfile) == o_tmpfile;
    how->flags = (unsigned)flags;
    how->mode = creates ? (unsigned long long)(mode & 07777) : 0;
    how->resolve = 0;
    return 1;
}

#endif
