/*
 * trampoline_hostile.c: a static program that turns against the static
 * loader's rewritten sites (docs/fast-reads.md, "Rewritten sites"; built
 * `cc -static` by tests/fs/trampoline_hostile.rs, run natively and under
 * the supervisor). Each line that does not start with "route " prints
 * the same natively and supervised; the "route " lines say what a
 * hostile program got from the trampoline, found only when the loader
 * rewrote a site (natively, and with --no-rewrite, there is none).
 *
 * trampoline_hostile DIR (DIR holds `a` and `sub/b`, and is writable):
 *
 * - 50 opens through glibc's open, whose site the loader rewrites into
 *   a jump to a slot; the program finds the slot and the trampoline page
 *   by comparing its text with a copy taken at its start.
 * - A fuzz: 4,000 calls from a seeded generator (openat and open of good,
 *   missing, /proc, bad and relative names, random flags, the fast-read
 *   and loader marks forged in r8 and r9 or random values; getpid,
 *   close of bad descriptors) made twice: through the trampoline's entry
 *   from an address that is no site, and directly. The answers must be
 *   the same (the same file, or the same errno).
 * - Forged marks: a plain read open of /proc/self/status with both
 *   marks is refused (EACCES: the fence) or is the unmarked answer; an
 *   O_RDWR open with the marks is the unmarked one's.
 * - Hostile children (each forked, each must end, by exit or a signal,
 *   with every open it completed right): a thread tearing the site's
 *   bytes (the original and the jump, written a byte at a time) while
 *   another opens through it; the trampoline page made writable and its
 *   entry pointer aimed at the program's own code that makes a
 *   forged-mark open; jumps into the middle of the slot and the entry.
 *   After them the parent's opens still read right and its forged-mark
 *   open is still refused.
 * - JIT code: `mov $257, %eax; syscall; ret` written into an anonymous
 *   executable page and called 200 times: every open reads right and the
 *   bytes stay as written (the loader rewrites the program's own text
 *   alone).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../sandbox/guest/raw_syscall.h"

#define FAST_READ_MARK 0xa5c39e4f17b2d860UL
#define LOADER_MARK 0x5e1f10ad3c4b2a19UL

extern const char __executable_start[], etext[];

static char dir[512], path_a[600], path_missing[600], path_sub[600], path_scratch[600];
static unsigned char *site; /* the rewritten `mov` (now `jmp`), or 0 */
static unsigned char *slot;
static void *entry; /* the trampoline's entry, read from the page's start */


/* The same call made through the trampoline's entry (called from here,
 * no site), or directly when there is none. */
static long via_entry(long nr, long a, long b, long c, long d, long e, long f)
{
    if (!entry)
        return raw_syscall6(nr, a, b, c, d, e, f);
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\tcall *%[to]\n\tlea 128(%%rsp), %%rsp"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9), [to] "r"(entry)
                     : "rcx", "r11", "memory");
    return ret;
}

static int reads_a(int fd)
{
    char buf[32] = {0};
    int ok = fd >= 0 && read(fd, buf, sizeof buf - 1) == 10 && !strcmp(buf, "text of a\n");
    if (fd >= 0)
        close(fd);
    return ok;
}

static int opens_right(int n)
{
    for (int i = 0; i < n; i++)
        if (!reads_a(open(path_a, O_RDONLY)))
            return 0;
    return 1;
}

/* The site glibc's open took, rewritten: `mov $257, %eax` (or $2) now a
 * `jmp` to its slot. */
static void find_trampoline(const unsigned char *was)
{
    const unsigned char *now = (const unsigned char *)__executable_start;
    size_t len = (size_t)(etext - __executable_start);
    for (size_t i = 0; i + 7 <= len; i++) {
        if (was[i] == 0xb8 && now[i] == 0xe9 && !memcmp(was + i + 3, "\0\0\x0f\x05", 4) &&
            was[i + 1] == 1 && was[i + 2] == 1) {
            int rel;
            memcpy(&rel, now + i + 1, 4);
            site = (unsigned char *)now + i;
            slot = site + 5 + rel;
            entry = *(void **)((unsigned long)slot & ~4095UL);
            return;
        }
    }
}

static unsigned long seed = 0x9e3779b97f4a7c15UL;
static unsigned long next(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

static dev_t dir_dev;

/* Whether two answers of an open are the same: the same errno, or the
 * same file (closed after): the same device and type, and in DIR the
 * same inode (a /proc file the supervisor serves is a new one at each
 * open) unless `creating` (the file was made again between the two). */
static int creating;

static int same_answer(long x, long y)
{
    if (x < 0 || y < 0) {
        if (x >= 0)
            close((int)x);
        if (y >= 0)
            close((int)y);
        return x == y;
    }
    struct stat sx, sy;
    int same = !fstat((int)x, &sx) && !fstat((int)y, &sy) && sx.st_dev == sy.st_dev && sx.st_mode == sy.st_mode &&
               (sx.st_dev != dir_dev || creating || sx.st_ino == sy.st_ino);
    close((int)x);
    close((int)y);
    return same;
}

static void fuzz(int calls)
{
    const char *names[] = {path_a, path_missing, path_sub, "/proc/self/status", "/proc/self/mem",
                           "a", "/etc/hostname", path_scratch, (const char *)1, 0};
    const long flag_bits[] = {O_WRONLY, O_RDWR, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_PATH,
                              O_NONBLOCK, O_CREAT, O_TRUNC, O_EXCL, O_NOATIME, O_LARGEFILE};
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    int differ = 0, forged = 0;
    for (int i = 0; i < calls; i++) {
        unsigned long r = next();
        int pick = (int)(r % 10);
        long nr = pick < 6 ? __NR_openat : pick < 8 ? __NR_open : pick < 9 ? __NR_getpid : __NR_close;
        const char *name = names[(r >> 8) % (sizeof names / sizeof names[0])];
        long flags = 0;
        for (int b = 0; b < 12; b++)
            if ((r >> (16 + b)) % 5 == 0)
                flags |= flag_bits[b];
        /* Creating, truncating and writing opens in the scratch file only. */
        if (name != path_scratch)
            flags &= ~(long)(O_CREAT | O_TRUNC | O_EXCL | (name == path_a ? 0 : O_WRONLY | O_RDWR));
        long marks[] = {0, (long)FAST_READ_MARK, (long)LOADER_MARK, (long)next()};
        long r8 = marks[(r >> 32) % 4], r9 = marks[(r >> 36) % 4];
        long dfd = ((r >> 40) % 3 == 0) ? dirfd : ((r >> 40) % 3 == 1) ? AT_FDCWD : 9999;
        if (r8 == (long)FAST_READ_MARK)
            forged++;
        long x, y;
        creating = (flags & O_CREAT) != 0;
        if (creating)
            unlink(path_scratch);
        if (nr == __NR_openat) {
            if (flags & O_CREAT) {
                x = via_entry(nr, dfd, (long)name, flags, 0600, r8, r9);
                unlink(path_scratch);
                y = raw_syscall6(nr, dfd, (long)name, flags, 0600, r8, r9);
                differ += !same_answer(x, y);
                continue;
            }
            x = via_entry(nr, dfd, (long)name, flags, 0600, r8, r9);
            y = raw_syscall6(nr, dfd, (long)name, flags, 0600, r8, r9);
            differ += !same_answer(x, y);
        } else if (nr == __NR_open) {
            x = via_entry(nr, (long)name, flags, 0600, 0, r8, r9);
            if (flags & O_CREAT)
                unlink(path_scratch);
            y = raw_syscall6(nr, (long)name, flags, 0600, 0, r8, r9);
            differ += !same_answer(x, y);
        } else if (nr == __NR_getpid) {
            x = via_entry(nr, 0, 0, 0, 0, r8, r9);
            y = raw_syscall6(nr, 0, 0, 0, 0, r8, r9);
            differ += x != y;
        } else {
            x = via_entry(nr, -1 - (long)(r % 3), 0, 0, 0, r8, r9);
            y = raw_syscall6(nr, -1 - (long)(r % 3), 0, 0, 0, r8, r9);
            differ += x != y;
        }
    }
    close(dirfd);
    printf("fuzzed calls: %d, with a forged fast-read mark: %d, answers that differ: %d\n", calls, forged > 0,
           differ);
}

/* A plain read open of /proc/self/status with both marks: refused by
 * the fence, or what the unmarked open gives. */
static int forged_mark_buys_nothing(void)
{
    long m = raw_syscall6(__NR_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY, 0, (long)FAST_READ_MARK,
                 (long)LOADER_MARK);
    long u = raw_syscall6(__NR_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY, 0, 0, 0);
    int ok = m == -EACCES || same_answer(m, u);
    if (m == -EACCES && u >= 0)
        close((int)u);
    long rw_m = raw_syscall6(__NR_openat, AT_FDCWD, (long)path_a, O_RDWR, 0, (long)FAST_READ_MARK, (long)LOADER_MARK);
    long rw_u = raw_syscall6(__NR_openat, AT_FDCWD, (long)path_a, O_RDWR, 0, 0, 0);
    return ok && same_answer(rw_m, rw_u);
}

static long forged_status_open(void)
{
    long m = raw_syscall6(__NR_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY, 0, (long)FAST_READ_MARK,
                 (long)LOADER_MARK);
    if (m >= 0)
        close((int)m);
    return m < 0 ? -m : 0;
}

/* ---- hostile children ---- */

static volatile int stop;

static void *tear_site(void *arg)
{
    (void)arg;
    unsigned char jump[5], orig[5] = {0xb8, 0x01, 0x01, 0x00, 0x00};
    memcpy(jump, site, 5);
    volatile unsigned char *s = site;
    while (!stop)
        for (int i = 0; i < 5; i++) {
            s[i] = orig[i];
            s[i] = jump[i];
        }
    return 0;
}

static void *scribble_page(void *arg)
{
    (void)arg;
    volatile unsigned char *page = (unsigned char *)((unsigned long)slot & ~4095UL);
    while (!stop)
        page[8 + next() % 4088] = (unsigned char)next();
    return 0;
}

static long forged_entry(void)
{
    return raw_syscall6(__NR_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY, 0, (long)FAST_READ_MARK, 0);
}

/* A child that runs `what` and exits 0 when every open it completed read
 * right (3 otherwise); 1 when it ended, by exit or by a signal, with no
 * wrong read. */
static int child_ends_clean(int what)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        unsigned char *page = (unsigned char *)((unsigned long)slot & ~4095UL);
        mprotect((void *)((unsigned long)site & ~4095UL), 8192, PROT_READ | PROT_WRITE | PROT_EXEC);
        mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
        pthread_t t;
        if (what == 0 || what == 1) {
            pthread_create(&t, 0, what == 0 ? tear_site : scribble_page, 0);
            for (int i = 0; i < 20000; i++) {
                int fd = open(path_a, O_RDONLY);
                if (fd >= 0 && !reads_a(fd))
                    _exit(3);
            }
            stop = 1;
            pthread_join(t, 0);
            _exit(0);
        }
        if (what == 2) {
            /* The entry pointer aimed at our own forged-mark open: opens
             * through the site now make it, and the fence refuses it. */
            *(void **)page = (void *)forged_entry;
            int fd = open(path_a, O_RDONLY);
            _exit(fd == -1 && errno == EACCES ? 0 : 4);
        }
        /* Jumps into the middle of the slot and of the entry. */
        unsigned char *mid = what == 3 ? slot + 1 : what == 4 ? slot + 7 : (unsigned char *)entry + 3;
        long ret;
        __asm__ volatile("lea -128(%%rsp), %%rsp\n\tcall *%[to]\n\tlea 128(%%rsp), %%rsp"
                         : "=a"(ret)
                         : "0"((long)__NR_getpid), "D"(0L), "S"(0L), "d"(0L), [to] "r"(mid)
                         : "rcx", "r8", "r9", "r10", "r11", "memory");
        _exit(ret == getpid() ? 0 : 5);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 0;
    if (what == 2)
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- JIT code ---- */

static int jit_left_alone(void)
{
    static const unsigned char code[] = {0xb8, 0x01, 0x01, 0x00, 0x00, 0x0f, 0x05, 0xc3};
    unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    memcpy(p, code, sizeof code);
    int ok = 1;
    for (int i = 0; i < 200; i++) {
        long fd;
        register long r10 __asm__("r10") = 0;
        register long r8 __asm__("r8") = 0;
        __asm__ volatile("lea -128(%%rsp), %%rsp\n\tcall *%[to]\n\tlea 128(%%rsp), %%rsp"
                         : "=a"(fd)
                         : "D"((long)AT_FDCWD), "S"(path_a), "d"((long)O_RDONLY), "r"(r10), "r"(r8), [to] "r"(p)
                         : "rcx", "r11", "memory");
        ok &= reads_a((int)fd);
    }
    ok &= !memcmp(p, code, sizeof code);
    munmap(p, 4096);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trampoline_hostile DIR\n");
        return 2;
    }
    setvbuf(stdout, 0, _IONBF, 0);
    snprintf(dir, sizeof dir, "%s", argv[1]);
    snprintf(path_a, sizeof path_a, "%s/a", dir);
    snprintf(path_missing, sizeof path_missing, "%s/missing", dir);
    snprintf(path_sub, sizeof path_sub, "%s/sub", dir);
    snprintf(path_scratch, sizeof path_scratch, "%s/scratch", dir);
    struct stat d;
    if (chdir(dir) != 0 || stat(dir, &d) != 0)
        return 1;
    dir_dev = d.st_dev;
    size_t len = (size_t)(etext - __executable_start);
    unsigned char *was = malloc(len);
    if (!was)
        return 1;
    memcpy(was, __executable_start, len);
    printf("50 opens: %d\n", opens_right(50));
    find_trampoline(was);
    printf("route trampoline found: %d\n", entry != 0);
    fuzz(4000);
    printf("a forged mark buys nothing: %d\n", forged_mark_buys_nothing());
    printf("jit code left as written, its opens right: %d\n", jit_left_alone());
    if (entry) {
        printf("route torn site, child ended clean: %d\n", child_ends_clean(0));
        printf("route scribbled trampoline page, child ended clean: %d\n", child_ends_clean(1));
        printf("route entry aimed at a forged-mark open, refused: %d\n", child_ends_clean(2));
        printf("route jumps into a slot and the entry, children ended: %d\n",
               child_ends_clean(3) && child_ends_clean(4) && child_ends_clean(5));
        printf("route forged-mark open of /proc/self/status after them: errno %ld\n", forged_status_open());
    }
    printf("2000 opens after: %d\n", opens_right(2000));
    return 0;
}
