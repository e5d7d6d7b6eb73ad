/*
 * static_loader.h: what the static loader's two files share (the start
 * and mapping in static_loader.c, the SIGSYS handler and its stacked
 * filter in static_loader_trap.c, which process owns the loader's state
 * in static_loader_mm.c): the marks, the loader's own system
 * calls, small freestanding helpers and the state the start sets for the
 * handler. static_loader.c says what the loader is.
 */
#ifndef STATIC_LOADER_H
#define STATIC_LOADER_H
#define _GNU_SOURCE
#include <asm-generic/errno.h>
#include <asm/siginfo.h>
#include <asm/signal.h>
#include <asm/sigcontext.h>
#include <asm/stat.h>
#include <asm/ucontext.h>
#include <asm/unistd.h>
#include <elf.h>
#include <linux/audit.h>
#include <linux/fcntl.h>
#include <linux/prctl.h>
#include <linux/filter.h>
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/stat.h>
#include <stddef.h>
#include <stdint.h>

#include "raw_syscall.h"
#include "site_patch.h"

/* Must equal sandbox_syscalls::policy::FAST_READ_MARK (a unit test in
 * sandbox/src/launch/static_loader.rs compares them). */
#define FAST_READ_MARK 0xa5c39e4f17b2d860UL
/* The loader's own mark, in r9 (arg 5): the stacked filter passes every
 * call that carries it. Any value the supervisor's filter ignores. */
#define LOADER_MARK 0x5e1f10ad3c4b2a19UL
/* SECCOMP_RET_DATA of the stacked filter's traps: si_errno tells the
 * handler the SIGSYS is its own. */
#define TRAP_DATA 0x5a5
#define FIRST_NAME "sandbox-static-loader"
#define NESTED_NAME "sandbox-static-loader:nested"
/* The same, with the program's text left as it is (run --no-rewrite). */
#define FIRST_NAME_NO_REWRITE "sandbox-static-loader:no-rewrite"
#define NESTED_NAME_NO_REWRITE "sandbox-static-loader:nested-no-rewrite"

#define PLAIN_MASK 0x210003 /* O_ACCMODE | O_PATH | O_DIRECTORY */
#define NEEDS_MODE(f) (((f) & O_CREAT) || ((f) & __O_TMPFILE) == __O_TMPFILE)
#define NOT_PLAIN (PLAIN_MASK | O_CREAT | __O_TMPFILE | O_TRUNC)
/* An O_RDWR open is made marked when these flags are O_RDWR alone: the
 * filter passes a marked one but with O_EXCL (fast_reads.c says why). */
#define READ_WRITE_MASK (PLAIN_MASK | O_EXCL)
#define PAGE 4096UL
#define SIGSYS_BIT (1UL << (SIGSYS - 1))
#define MAX_PATH 4096

/* openat2 and its resolve flag (linux/openat2.h), for older headers. */
#define NR_openat2 437
#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

/* ---- system calls: every one carries LOADER_MARK in r9 (but those of
 * a rewritten site's call, sys6r9 with 0) ---- */

static inline long sys6r9(long nr, long a, long b, long c, long d, long e, long mark)
{
    return raw_syscall6(nr, a, b, c, d, e, mark);
}
static inline long sys6(long nr, long a, long b, long c, long d, long e)
{
    return sys6r9(nr, a, b, c, d, e, (long)LOADER_MARK);
}
#define sys0(n) sys6(n, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0)

static inline long mmap6(ul addr, ul len, long prot, long flags, long fd, ul off)
{
    return raw_syscall6(__NR_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
}

/* ---- small freestanding helpers ---- */

static inline ul str_len(const char *s)
{
    ul n = 0;
    while (s[n])
        n++;
    return n;
}

static inline int str_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static inline void copy(void *to, const void *from, ul n)
{
    volatile char *t = to;
    const char *f = from;
    while (n--)
        *t++ = *f++;
}

static inline void zero(void *to, ul n)
{
    volatile char *t = to;
    while (n--)
        *t++ = 0;
}

/* ---- state, in the loader's own image (it stays mapped) ---- */

extern char program_path[MAX_PATH]; /* as /proc/self/exe would name it */
extern char loader_path[MAX_PATH];  /* the loader in the guest's view */
extern ul proc_dev, cover_dev;      /* learned at start, as the preload does */
extern int fast;                    /* whether marked opens are made at all */
/* The program's view of SIGSYS's disposition (struct k_sigaction). */
struct ksigaction {
    ul handler, flags, restorer, mask;
};
extern struct ksigaction program_sigsys;
/* Whether trapped open sites are rewritten (static_loader_rewrite.c). */
extern int rewriting;
/* The program's executable, non-writable segments as the loader mapped
 * them: the only text a site is rewritten in. */
#define MAX_TEXT 8
struct text_range {
    ul lo, hi;
    long prot;
};
extern struct text_range program_text[MAX_TEXT];
extern int program_text_count;

/* static_loader_trap.c */
long stack_filter(void);
struct ksigaction our_sigsys(void);
long set_mask(ul mask);
ul get_mask(void);
ul fd_path(char *to, long fd);
/* static_loader_mm.c */
void claim_memory(void);
int owns_memory(void);
long trapped_open(long dirfd, long path, long flags, long mode, long r9);
/* static_loader_sites.c: a site the loader may rewrite, and its plan */
enum site_kind { SITE_NONE, SITE_GLIBC, SITE_GLIBC_NOCANCEL, SITE_MUSL, SITE_GO };
struct site {
    enum site_kind kind;
    const struct text_range *text; /* the text it lies in */
    ul jump_at;                    /* where `jmp rel32` to its slot goes */
    ul hop_at;                     /* 0, or the `syscall` that becomes `jmp` onto jump_at */
    int copied;                    /* bytes at jump_at the slot runs first (the jump replaces them) */
    ul back;                       /* where the slot returns: past the `syscall` */
};
const struct text_range *text_of(ul lo, ul hi);
int find_site(ul s, long nr, struct site *site);
/* static_loader_rewrite.c */
void rewrite_site(ul after, long nr);
/* static_loader.c (the signal restorer, in assembly) */
void loader_restorer(void);

#endif
