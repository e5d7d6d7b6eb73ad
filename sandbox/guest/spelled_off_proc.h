/* Whether a path a plain read opened can reach /proc, for the preload
 * (fast_reads.c) and the static loader (static_loader_trap.c), which
 * share no library: both decide by it whether an open needs the fstat
 * that tells a served file. Freestanding: no libc. */
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

#endif
