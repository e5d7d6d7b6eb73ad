/* The check of a marked plain read open, for the preload (fast_reads.c)
 * and the static loader (static_loader_trap.c), which share no library:
 * whether its path can reach /proc (else it needs no fstat), whether
 * the file its fstat describes may be one the supervisor serves, and
 * whether its error may be one the supervisor answers otherwise (then
 * it is made again unmarked). Freestanding: no libc, no kernel headers
 * (the dynamic loader's trampoline includes it too). */
#ifndef SPELLED_OFF_PROC_H
#define SPELLED_OFF_PROC_H

/* Whether `p`, an absolute path resolved with no symlink, cannot reach
 * /proc (the view's procfs, and the covers mounted beneath it, which a
 * marked open may meet under /proc/sys): no "." or ".." component and a
 * first component other than "proc". Read only once an open of it
 * succeeded (the kernel found it readable). */
static inline int spelled_off_proc(const char *p)
{
    if (*p != '/')
        return 0;
    for (int first = 1; *p; first = 0) {
        while (*p == '/')
            p++;
        const char *c = p;
        while (*p && *p != '/')
            p++;
        unsigned long n = (unsigned long)(p - c);
        if (n > 0 && c[0] == '.' && (n == 1 || (n == 2 && c[1] == '.')))
            return 0;
        if (first && n == 4 && c[0] == 'p' && c[1] == 'r' && c[2] == 'o' && c[3] == 'c')
            return 0;
    }
    return 1;
}

/* Whether a file a marked open reached, of device `dev` and mode `mode`
 * (its fstat), may be one the supervisor serves: a cover (`cover_dev`),
 * or a directory of the view's procfs (`proc_dev`). A regular file of
 * procfs that a marked open reached is one the fence lets through
 * (/proc/sys, /proc/sysvipc), which the supervisor leaves to the kernel
 * unless it is served, and every served one has a cover mounted over it
 * (docs/procfs.md, "The covers"), which the open would have met instead. */
static inline int maybe_served_file(unsigned long dev, unsigned int mode, unsigned long proc_dev,
                                    unsigned long cover_dev)
{
    if (dev == cover_dev)
        return 1;
    return dev == proc_dev && (mode & 0170000) != 0100000; /* not S_ISREG */
}

/* Whether `err`, the error (negative) of a marked plain read open with
 * `flags`, may be the refusal of a file the supervisor serves: the
 * fence's EACCES, or the EPERM of an O_NOATIME open of a file the
 * caller does not own, which the kernel checks before the fence. A
 * served /proc file is the host root's: a guest root under a range of
 * ids does not own it, and the supervisor answers it as a root holding
 * CAP_FOWNER (syscalls/src/handlers/open/serve.rs); for any other file
 * the handler leaves the open to the kernel, which refuses it again. */
static inline int refused_maybe_served(long err, int flags)
{
    enum { eperm = 1, eacces = 13, o_noatime = 01000000 };
    return err == -eacces || (err == -eperm && (flags & o_noatime) != 0);
}

#endif
