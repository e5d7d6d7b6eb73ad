/*
 * ldso_hostile.c: a dynamic program that turns against the trampoline in
 * its own loader's text (the view's copy of the loader,
 * sandbox/src/launch/ldso_patch.rs, sandbox/guest/ldso_trampoline.c).
 * It finds the slot the loader's open site jumps to (the site's three
 * moves, then the step over the red zone and a `call`) in the loader's
 * executable segment, and calls the slot's entry from here, an address
 * that is no site, with forged registers: a seeded fuzz of calls
 * (openat of good, missing, /proc, served, relative and bad names with
 * random flags, the fast-read mark forged in r8 among random values;
 * openat2, getpid, close of bad descriptors), each also made directly.
 * An openat through the entry must answer as the preload's rule says:
 * what its direct twin made marked answers where that is an error other
 * than the fence's EACCES (the kernel refused it before the fence, as it
 * would refuse the unmarked call it makes for the supervisor), else what
 * the twin made unmarked answers (the supervisor's); any other call, what
 * the same registers answer directly. The answers must agree (the same
 * errno, or descriptors whose first line reads the same), and the entry
 * must keep every register a `syscall` keeps. Natively (no trampoline)
 * the openat rule is taken as met.
 *
 * usage: ldso_hostile DIR SEED COUNT  (DIR holds a file "f")
 * Prints "trampoline found: 0|1" (natively 0: the loader as built has no
 * slot, and both calls are direct), then the fuzz's summary.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAST_READ_MARK 0xa5c39e4f17b2d860UL

static const unsigned char moves[] = {0xb8, 0x01, 0x01, 0x00, 0x00, 0x48, 0x89, 0xfe, 0xbf, 0x9c, 0xff, 0xff, 0xff};
static const unsigned char down[] = {0x48, 0x8d, 0x64, 0x24, 0x80};

/* The entry the loader's slot calls, or 0 where the loader has none. */
static unsigned long find_entry(void)
{
    unsigned long base = getauxval(AT_BASE);
    if (!base)
        return 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
            continue;
        const unsigned char *t = (const unsigned char *)(base + ph[i].p_vaddr);
        for (unsigned long o = 0; o + 23 <= ph[i].p_memsz; o++) {
            if (memcmp(t + o, moves, sizeof moves) || memcmp(t + o + 13, down, sizeof down) || t[o + 18] != 0xe8)
                continue;
            int rel;
            memcpy(&rel, t + o + 19, 4);
            return (unsigned long)(t + o + 23) + (long)rel;
        }
    }
    return 0;
}

struct regs {
    long rax, rdi, rsi, rdx, r10, r8, r9;
};

/* The call made through `entry` (from here, with the red zone stepped
 * over), or with `syscall` where entry is 0; `kept`: the registers a
 * syscall keeps came back as they went. */
static long call(unsigned long entry, struct regs r, int *kept)
{
    register long r10 __asm__("r10") = r.r10;
    register long r8 __asm__("r8") = r.r8;
    register long r9 __asm__("r9") = r.r9;
    long rdi = r.rdi, rsi = r.rsi, rdx = r.rdx, ret;
    if (entry)
        __asm__ volatile("sub $128, %%rsp\n\tcall *%[e]\n\tadd $128, %%rsp"
                         : "=a"(ret), "+D"(rdi), "+S"(rsi), "+d"(rdx), "+r"(r10), "+r"(r8), "+r"(r9)
                         : "0"(r.rax), [e] "r"(entry)
                         : "rcx", "r11", "memory", "cc");
    else
        __asm__ volatile("syscall"
                         : "=a"(ret), "+D"(rdi), "+S"(rsi), "+d"(rdx), "+r"(r10), "+r"(r8), "+r"(r9)
                         : "0"(r.rax)
                         : "rcx", "r11", "memory");
    *kept = rdi == r.rdi && rsi == r.rsi && rdx == r.rdx && r10 == r.r10 && r8 == r.r8 && r9 == r.r9;
    return ret;
}

/* An answer as one line: the errno, or the descriptor's first line. */
static void describe(long ret, char *out, size_t n)
{
    if (ret < 0) {
        snprintf(out, n, "errno %ld", -ret);
        return;
    }
    char buf[128] = {0};
    long got = pread((int)ret, buf, sizeof buf - 1, 0);
    if (got < 0)
        snprintf(out, n, "fd, pread errno");
    else
        snprintf(out, n, "fd: %.*s", (int)strcspn(buf, "\n"), buf);
    close((int)ret);
}

static unsigned long long seed;
static unsigned long next(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (unsigned long)seed;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    char file[4096];
    snprintf(file, sizeof file, "%s/f", argv[1]);
    int dir = open(argv[1], O_PATH | O_DIRECTORY);
    seed = strtoull(argv[2], 0, 10) | 1;
    int count = atoi(argv[3]);
    unsigned long entry = find_entry();
    printf("trampoline found: %d\n", entry != 0);
    const char *names[] = {file, "/nonexistent/x", "/proc/self/status", "/proc/meminfo", "f", "/proc", "/proc/self/fd",
                           "/proc/sys/kernel/ngroups_max", "/etc/passwd", "/lib64/ld-linux-x86-64.so.2", "", 0};
    /* Never creating, truncating or making a temporary file: natively this
     * runs as root against real files. */
    const long flag_sets[] = {O_RDONLY, O_RDONLY | O_CLOEXEC, O_RDWR, O_WRONLY, O_DIRECTORY, O_PATH, O_NOFOLLOW,
                              O_RDONLY | O_NONBLOCK | O_NOCTTY, O_RDWR | O_EXCL, -1};
    const long forbidden = O_CREAT | O_TRUNC | __O_TMPFILE | O_APPEND;
    int differ = 0, lost = 0, forged = 0;
    for (int i = 0; i < count; i++) {
        struct regs r = {0};
        unsigned long k = next() % 8;
        const char *name = names[next() % (sizeof names / sizeof names[0])];
        long flags = flag_sets[next() % (sizeof flag_sets / sizeof flag_sets[0])];
        if (flags == -1)
            flags = (long)(next() & 0x3fffff);
        flags &= ~forbidden;
        r.r8 = next() % 3 == 0 ? (long)FAST_READ_MARK : (next() % 2 ? (long)next() : 0);
        r.r9 = next() % 2 ? (long)next() : 0;
        forged += r.r8 == (long)FAST_READ_MARK;
        if (k < 5) {
            r.rax = SYS_openat;
            r.rdi = name && name[0] == 'f' ? dir : AT_FDCWD;
            r.rsi = k == 4 ? (long)1 : (long)name; /* a bad pointer */
            r.rdx = flags;
            r.r10 = (long)(next() & 0777);
        } else if (k == 5) {
            struct {
                unsigned long long flags, mode, resolve;
            } how = {(unsigned long long)(flags & O_ACCMODE), 0, next() % 2 ? 0x04 : 0};
            r.rax = SYS_openat2;
            r.rdi = AT_FDCWD;
            r.rsi = (long)(name ? name : file);
            r.rdx = (long)&how;
            r.r10 = sizeof how;
            int kept;
            char a[192], b[192];
            describe(call(entry, r, &kept), a, sizeof a);
            lost += !kept;
            describe(call(0, r, &kept), b, sizeof b);
            if (strcmp(a, b) != 0 && ++differ <= 5)
                printf("call %d openat2 %s: through %s, direct %s\n", i, name ? name : "(null)", a, b);
            continue;
        } else if (k == 6) {
            r.rax = SYS_getpid;
        } else {
            r.rax = SYS_close;
            r.rdi = 100000 + (long)(next() % 1000);
        }
        int kept;
        char a[192], b[192];
        if (r.rax == SYS_openat) {
            /* What the preload's rule gives: the marked call's answer
             * where it is an error other than the fence's EACCES, else
             * the unmarked call's (the supervisor's). */
            struct regs twin = r;
            twin.r8 = (long)FAST_READ_MARK;
            describe(call(0, twin, &kept), b, sizeof b);
            if (strncmp(b, "errno", 5) != 0 || strcmp(b, "errno 13") == 0) {
                twin.r8 = 0;
                describe(call(0, twin, &kept), b, sizeof b);
            }
            if (entry) {
                describe(call(entry, r, &kept), a, sizeof a);
                lost += !kept;
            } else {
                strcpy(a, b);
            }
        } else {
            long through = call(entry, r, &kept);
            lost += !kept;
            snprintf(a, sizeof a, "%ld", through);
            snprintf(b, sizeof b, "%ld", call(0, r, &kept));
        }
        if (strcmp(a, b) != 0 && ++differ <= 5)
            printf("call %d nr %ld %s flags %#lx r8 %#lx: through %s, direct %s\n", i, r.rax, name ? name : "(null)",
                   (unsigned long)r.rdx, (unsigned long)r.r8, a, b);
    }
    printf("fuzzed calls: %d, with a forged fast-read mark: %d, answers that differ: %d, registers lost: %d\n", count,
           forged > 0, differ, lost);
    return 0;
}
