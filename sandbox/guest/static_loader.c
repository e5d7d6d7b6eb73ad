/*
 * static_loader.c: the foothold in statically linked guest programs
 * (docs/fast-reads.md, "Static programs"; sandbox/src/launch/static_loader.rs
 * says when the supervisor starts it).
 *
 * A static program loads no preload, so its plain read opens are
 * serviced round trips. The supervisor starts this loader in its place:
 *
 *   static_loader PROGRAM ARGV0 ARGS...       (argv[0] "sandbox-static-loader")
 *
 * It maps PROGRAM's segments itself (static, static-pie, and a dynamic
 * program's interpreter when an exec from a loaded program names one),
 * fixes the auxiliary vector (AT_PHDR, AT_PHNUM, AT_PHENT, AT_ENTRY,
 * AT_BASE, AT_EXECFN), installs a SIGSYS handler, stacks a filter that
 * answers SECCOMP_RET_TRAP for the calls the handler takes over, drops
 * its two leading arguments and jumps to the entry.
 *
 * The handler (its calls carry LOADER_MARK in r9, which the stacked
 * filter lets pass and the kernel ignores for every call it traps):
 * - a plain read open (open, openat), unmarked: made again with
 *   FAST_READ_MARK in r8, which the supervisor's filter passes in a
 *   fenced guest, then the preload's check (EACCES from the fence, or a
 *   descriptor on the view's procfs or a cover: closed and made again
 *   unmarked, for the supervisor to serve); an open of /proc/self/exe
 *   opens the program;
 * - rt_sigprocmask and rt_sigaction: made as asked, except that SIGSYS
 *   never gets blocked (a forced SIGSYS on a thread that blocks it kills
 *   the process); the program's own SIGSYS disposition is kept here and
 *   runs for every SIGSYS that is not this filter's;
 * - readlink of /proc/self/exe (or /proc/thread-self/exe, /proc/PID/exe):
 *   the program's path, as the kernel would name it;
 * - execve and execveat: the stacked filter outlives exec while this
 *   handler does not, so the new program is started through the loader
 *   again (argv[0] "sandbox-static-loader:nested", no second filter).
 *
 * Nothing here is trusted by the supervisor: the marks are registers any
 * guest code can set, and its filter decides on them as for any call.
 * What goes wrong here only hurts the guest itself. Built by
 * sandbox/build.rs as a freestanding static-pie with no relocations: no C
 * library, no TLS, no stack protector, no jump tables.
 */
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
#include <linux/filter.h>
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/stat.h>
#include <stddef.h>
#include <stdint.h>

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

#define PLAIN_MASK 0x210003 /* O_ACCMODE | O_PATH | O_DIRECTORY */
#define NEEDS_MODE(f) (((f) & O_CREAT) || ((f) & __O_TMPFILE) == __O_TMPFILE)
#define NOT_PLAIN (PLAIN_MASK | O_CREAT | __O_TMPFILE | O_TRUNC)
#define PAGE 4096UL
#define SIGSYS_BIT (1UL << (SIGSYS - 1))
#define MAX_PATH 4096

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

typedef unsigned long ul;

/* ---- system calls: every one carries LOADER_MARK in r9 ---- */

static long sys6(long nr, long a, long b, long c, long d, long e)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = (long)LOADER_MARK;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#define sys0(n) sys6(n, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0)

static long mmap6(ul addr, ul len, long prot, long flags, long fd, ul off)
{
    register long r10 __asm__("r10") = flags;
    register long r8 __asm__("r8") = fd;
    register long r9 __asm__("r9") = (long)off;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)__NR_mmap), "D"(addr), "S"(len), "d"(prot), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* ---- small freestanding helpers ---- */

static ul str_len(const char *s)
{
    ul n = 0;
    while (s[n])
        n++;
    return n;
}

static int str_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static void copy(void *to, const void *from, ul n)
{
    volatile char *t = to;
    const char *f = from;
    while (n--)
        *t++ = *f++;
}

static void zero(void *to, ul n)
{
    volatile char *t = to;
    while (n--)
        *t++ = 0;
}

static void say(const char *a, const char *b, const char *c)
{
    sys3(__NR_write, 2, a, str_len(a));
    sys3(__NR_write, 2, b, str_len(b));
    sys3(__NR_write, 2, c, str_len(c));
}

static void __attribute__((noreturn)) die(const char *what, const char *path)
{
    say("sandbox-static-loader: ", what, ": ");
    say(path, "\n", "");
    for (;;)
        sys1(__NR_exit_group, 127);
}

/* ---- state, in the loader's own image (it stays mapped) ---- */

static char program_path[MAX_PATH]; /* as /proc/self/exe would name it */
static char loader_path[MAX_PATH];  /* the loader in the guest's view */
static ul proc_dev, cover_dev;      /* learned at start, as the preload does */
static int fast;                    /* whether marked opens are made at all */
/* The program's view of SIGSYS's disposition (struct k_sigaction). */
struct ksigaction {
    ul handler, flags, restorer, mask;
};
static struct ksigaction program_sigsys;

/* ---- the preload's check, for a trapped plain read open ---- */

static ul dev_of(long fd)
{
    struct stat st;
    if (sys2(__NR_fstat, fd, &st) != 0)
        return (ul)-1;
    return st.st_dev;
}

/* The path `p` (known readable: the kernel just resolved it) names this
 * process's executable: /proc/self/exe, /proc/thread-self/exe or
 * /proc/PID/exe. */
static int names_own_exe(const char *p)
{
    static const char proc[] = "/proc/";
    for (int i = 0; i < 6; i++)
        if (p[i] != proc[i])
            return 0;
    p += 6;
    if (str_eq(p, "self/exe") || str_eq(p, "thread-self/exe"))
        return 1;
    long pid = sys0(__NR_getpid), n = 0;
    if (*p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        n = n * 10 + (*p++ - '0');
    return n == pid && str_eq(p, "/exe");
}

static long open_plain(long dirfd, long path, long flags, long mode)
{
    long fd;
    if (fast && (flags & NOT_PLAIN) == 0) {
        fd = sys6(__NR_openat, dirfd, path, flags, 0, (long)FAST_READ_MARK);
        if (fd >= 0) {
            ul dev = dev_of(fd);
            if (dev != proc_dev && dev != cover_dev && dev != (ul)-1)
                return fd;
            sys1(__NR_close, fd);
        } else if (fd != -EACCES) {
            return fd;
        }
    }
    return sys4(__NR_openat, dirfd, path, flags, NEEDS_MODE(flags) ? mode : 0);
}

static long trapped_open(long dirfd, long path, long flags, long mode)
{
    long fd = open_plain(dirfd, path, flags, mode);
    if (fd >= 0 && (flags & NOT_PLAIN) == 0 && names_own_exe((const char *)path)) {
        sys1(__NR_close, fd);
        fd = sys4(__NR_openat, AT_FDCWD, program_path, flags, 0);
    }
    return fd;
}

/* ---- signals ---- */

static long set_mask(ul mask)
{
    return sys4(__NR_rt_sigprocmask, SIG_SETMASK, &mask, 0, sizeof mask);
}

static ul get_mask(void)
{
    ul mask = 0;
    sys4(__NR_rt_sigprocmask, SIG_BLOCK, 0, &mask, sizeof mask);
    return mask;
}

/* rt_sigprocmask from the program: made with the interrupted thread's
 * mask in place, then SIGSYS taken out of the mask sigreturn restores. */
static long trapped_sigprocmask(ul *uc_mask, long how, long set, long old, long size)
{
    set_mask(*uc_mask);
    long ret = sys4(__NR_rt_sigprocmask, how, set, old, size);
    *uc_mask = get_mask() & ~SIGSYS_BIT;
    return ret;
}

static void on_sigsys(int, void *, void *);
extern void loader_restorer(void);

static struct ksigaction our_sigsys(void)
{
    struct ksigaction sa = {
        .handler = (ul)on_sigsys,
        .flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART | 0x04000000 /* SA_RESTORER */,
        .restorer = (ul)loader_restorer,
        .mask = 0,
    };
    return sa;
}

/* rt_sigaction from the program. For SIGSYS the kernel still does the
 * copying (so a bad pointer is its EFAULT): the program's view is put in
 * place, the call made, what it installed read back as the new view, and
 * ours put back. For any other signal, SIGSYS is taken out of the mask. */
static long trapped_sigaction(long sig, long act, long old, long size)
{
    if (sig == SIGSYS && size == sizeof(ul)) {
        struct ksigaction ours = our_sigsys(), now;
        sys4(__NR_rt_sigaction, SIGSYS, &program_sigsys, 0, size);
        long ret = sys4(__NR_rt_sigaction, SIGSYS, act, old, size);
        sys4(__NR_rt_sigaction, SIGSYS, &ours, &now, size);
        if (ret == 0)
            program_sigsys = now;
        return ret;
    }
    long ret = sys4(__NR_rt_sigaction, sig, act, old, size);
    if (ret == 0 && act != 0) {
        struct ksigaction now;
        if (sys4(__NR_rt_sigaction, sig, 0, &now, sizeof(ul)) == 0 && (now.mask & SIGSYS_BIT)) {
            now.mask &= ~SIGSYS_BIT;
            sys4(__NR_rt_sigaction, sig, &now, 0, sizeof(ul));
        }
    }
    return ret;
}

/* readlink from the program: made at most as long as the program's
 * path (so that the kernel checks both pointers and writes no byte the
 * answer does not), then, for the program's own exe, that path. */
static long trapped_readlink(long dirfd, long path, long buf, long size)
{
    ul len = str_len(program_path);
    long first = size > 0 && (ul)size > len && len > 0 ? (long)len : size;
    long n = sys4(__NR_readlinkat, dirfd, path, buf, first);
    if (n < 0)
        return n;
    if (names_own_exe((const char *)path)) {
        if (len > (ul)size)
            len = (ul)size;
        copy((char *)buf, program_path, len);
        return (long)len;
    }
    if (n == first && first < size)
        n = sys4(__NR_readlinkat, dirfd, path, buf, size);
    return n;
}

/* ---- exec through the loader again ---- */

/* Whether the file at `path` is one the loader can start: an ELF file or
 * a script, readable. Anything else is left to the kernel's execve
 * (which then gives its own error, or starts a program the loader could
 * not read: mode --x, the case with no answer). */
static int loadable(const char *path)
{
    long fd = sys4(__NR_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    unsigned char head[4] = {0};
    long n = sys4(__NR_pread64, fd, head, 4, 0);
    sys1(__NR_close, fd);
    if (n >= 2 && head[0] == '#' && head[1] == '!')
        return 1;
    return n == 4 && head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F';
}

/* "/proc/self/fd/N" into `to`; its length. */
static ul fd_path(char *to, long fd)
{
    static const char prefix[] = "/proc/self/fd/";
    copy(to, prefix, sizeof prefix - 1);
    ul len = sizeof prefix - 1;
    char digits[24];
    int d = 0;
    ul v = (ul)fd;
    do
        digits[d++] = (char)('0' + v % 10);
    while ((v /= 10) && d < 24);
    while (d)
        to[len++] = digits[--d];
    to[len] = 0;
    return len;
}

#define TARGET_BYTES (2 * MAX_PATH)
#define KERNEL_EXEC 1

/* execve/execveat from the program: the new program started through the
 * loader (nested: the filter is there already). KERNEL_EXEC: make the
 * program's own call (a file the loader cannot start); otherwise the
 * (negative) error. */
static long exec_nested(long dirfd, long path, long argv, long envp, long flags)
{
    if (!loader_path[0] || (flags & ~AT_EMPTY_PATH) != 0)
        return KERNEL_EXEC;
    const char *p = (const char *)path;
    /* The kernel checks the name first: an error it gives is the answer
     * (and the name is then known readable). */
    long ok = sys3(__NR_faccessat, dirfd, path, 1 /* X_OK */);
    if (ok == -EFAULT)
        return ok;
    int empty = (flags & AT_EMPTY_PATH) && p[0] == '\0';
    if (ok < 0 && !empty)
        return ok;
    char *target = (char *)mmap6(0, TARGET_BYTES, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((ul)target > (ul)-4096)
        return -ENOMEM;
    ul l = str_len(p);
    if (empty) {
        fd_path(target, dirfd);
    } else if (p[0] != '/' && dirfd != AT_FDCWD) {
        ul len = fd_path(target, dirfd);
        target[len++] = '/';
        if (len + l >= TARGET_BYTES)
            goto too_long;
        copy(target + len, p, l + 1);
    } else {
        if (l >= TARGET_BYTES)
            goto too_long;
        copy(target, p, l + 1);
    }
    if (names_own_exe(target))
        copy(target, program_path, str_len(program_path) + 1);
    if (!loadable(target)) {
        sys2(__NR_munmap, target, TARGET_BYTES);
        return KERNEL_EXEC;
    }
    /* argv: [NESTED_NAME, target, argv...]: read as the kernel would
     * (a bad pointer here faults in the handler: a crash where the
     * kernel would answer EFAULT). */
    char **old = (char **)argv;
    ul count = 0;
    if (old)
        while (old[count])
            count++;
    ul bytes = (count + 4) * sizeof(char *);
    char **args = (char **)mmap6(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((ul)args > (ul)-4096) {
        sys2(__NR_munmap, target, TARGET_BYTES);
        return -ENOMEM;
    }
    static const char nested[] = NESTED_NAME;
    args[0] = (char *)nested;
    args[1] = target;
    for (ul i = 0; i < count; i++)
        args[2 + i] = old[i];
    if (count == 0)
        args[2 + count++] = (char *)"";
    args[2 + count] = 0;
    long ret = sys3(__NR_execve, loader_path, args, envp);
    sys2(__NR_munmap, args, bytes);
    sys2(__NR_munmap, target, TARGET_BYTES);
    return ret;
too_long:
    sys2(__NR_munmap, target, TARGET_BYTES);
    return -ENAMETOOLONG;
}

/* ---- the handler ---- */

/* A SIGSYS that is not the stacked filter's: the program's disposition. */
static void chain(int sig, siginfo_t *info, void *ctx)
{
    struct ksigaction h = program_sigsys;
    if (h.handler == (ul)SIG_IGN)
        return;
    if (h.handler == (ul)SIG_DFL) {
        struct ksigaction dfl = {0};
        sys4(__NR_rt_sigaction, SIGSYS, &dfl, 0, sizeof(ul));
        sys3(__NR_tgkill, sys0(__NR_getpid), sys0(__NR_gettid), SIGSYS);
        return;
    }
    if (h.flags & SA_RESETHAND)
        program_sigsys.handler = (ul)SIG_DFL;
    if (h.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))h.handler)(sig, info, ctx);
    else
        ((void (*)(int))h.handler)(sig);
}

static void on_sigsys(int sig, void *vinfo, void *vctx)
{
    siginfo_t *info = vinfo;
    struct ucontext *uc = vctx;
    if (info->si_code != SYS_SECCOMP || info->si_errno != TRAP_DATA) {
        chain(sig, info, vctx);
        return;
    }
    struct sigcontext *r = &uc->uc_mcontext;
    long a = (long)r->rdi, b = (long)r->rsi, c = (long)r->rdx, d = (long)r->r10, e = (long)r->r8;
    long ret;
    switch (info->si_syscall) {
    case __NR_openat:
        ret = trapped_open(a, b, c, d);
        break;
    case __NR_open:
        ret = trapped_open(AT_FDCWD, a, b, c);
        break;
    case __NR_rt_sigprocmask:
        ret = trapped_sigprocmask((ul *)&uc->uc_sigmask, a, b, c, d);
        break;
    case __NR_rt_sigaction:
        ret = trapped_sigaction(a, b, c, d);
        break;
    case __NR_readlink:
        ret = trapped_readlink(AT_FDCWD, a, b, c);
        break;
    case __NR_readlinkat:
        ret = trapped_readlink(a, b, c, d);
        break;
    case __NR_execve:
        ret = exec_nested(AT_FDCWD, a, b, c, 0);
        if (ret == KERNEL_EXEC)
            ret = sys3(__NR_execve, a, b, c);
        break;
    case __NR_execveat:
        ret = exec_nested(a, b, c, d, e);
        if (ret == KERNEL_EXEC)
            ret = sys6(__NR_execveat, a, b, c, d, e);
        break;
    default:
        ret = -ENOSYS;
    }
    r->rax = (ul)ret;
}

/* ---- the stacked filter ---- */

#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define ARG_HI(n) (ARG_LO(n) + 4)
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define RET(k) BPF_STMT(BPF_RET | BPF_K, (k))

static long stack_filter(void)
{
    /* The index of each instruction in its comment: TRAP is 27, ALLOW 28. */
    struct sock_filter f[] = {
        /* 0 */ LD(offsetof(struct seccomp_data, arch)),
        /* 1 */ JEQ(AUDIT_ARCH_X86_64, 0, 26),
        /* 2: the loader's own calls pass */
        LD(ARG_LO(5)),
        /* 3 */ JEQ((unsigned)LOADER_MARK, 0, 2),
        /* 4 */ LD(ARG_HI(5)),
        /* 5 */ JEQ((unsigned)(LOADER_MARK >> 32), 22, 0),
        /* 6 */ LD(offsetof(struct seccomp_data, nr)),
        /* 7 */ JEQ(__NR_openat, 7, 0),
        /* 8 */ JEQ(__NR_open, 12, 0),
        /* 9 */ JEQ(__NR_rt_sigaction, 17, 0),
        /* 10 */ JEQ(__NR_execve, 16, 0),
        /* 11 */ JEQ(__NR_execveat, 15, 0),
        /* 12 */ JEQ(__NR_readlink, 14, 0),
        /* 13 */ JEQ(__NR_readlinkat, 13, 0),
        /* 14 */ JEQ(__NR_rt_sigprocmask, 8, 13),
        /* 15: openat, a plain read without the fast-read mark */
        LD(ARG_LO(2)),
        /* 16 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PLAIN_MASK, 11, 0),
        /* 17 */ LD(ARG_LO(4)),
        /* 18 */ JEQ((unsigned)FAST_READ_MARK, 0, 8),
        /* 19 */ LD(ARG_HI(4)),
        /* 20 */ JEQ((unsigned)(FAST_READ_MARK >> 32), 7, 6),
        /* 21: open, a plain read */
        LD(ARG_LO(1)),
        /* 22 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PLAIN_MASK, 5, 4),
        /* 23: rt_sigprocmask with a set (a query passes) */
        LD(ARG_LO(1)),
        /* 24 */ JEQ(0, 0, 2),
        /* 25 */ LD(ARG_HI(1)),
        /* 26 */ JEQ(0, 1, 0),
        /* 27 */ RET(SECCOMP_RET_TRAP | TRAP_DATA),
        /* 28 */ RET(SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    sys2(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1);
    return sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* ---- mapping a program ---- */

#define MAX_PHNUM 64

struct image {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[MAX_PHNUM];
    ul base; /* load bias: 0 for ET_EXEC */
};

static int read_at(long fd, void *buf, ul len, ul off)
{
    return sys4(__NR_pread64, fd, buf, len, off) == (long)len;
}

static void read_headers(long fd, struct image *im, const char *path)
{
    if (!read_at(fd, &im->eh, sizeof im->eh, 0))
        die("cannot read the ELF header", path);
    Elf64_Ehdr *eh = &im->eh;
    if (eh->e_ident[0] != 0x7f || eh->e_ident[1] != 'E' || eh->e_ident[2] != 'L' ||
        eh->e_ident[3] != 'F' || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
        (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > MAX_PHNUM)
        die("not an x86_64 ELF program the loader maps", path);
    if (!read_at(fd, im->ph, eh->e_phnum * sizeof(Elf64_Phdr), eh->e_phoff))
        die("cannot read the program headers", path);
}

static long prot_of(Elf64_Word flags)
{
    return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) |
           (flags & PF_X ? PROT_EXEC : 0);
}

#define TRUNC(x) ((x) & ~(PAGE - 1))
#define ROUND(x) (((x) + PAGE - 1) & ~(PAGE - 1))

static int bad(long r)
{
    return (ul)r > (ul)-4096;
}

static void map_image(long fd, struct image *im, const char *path)
{
    ul lo = (ul)-1, hi = 0;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        if (p->p_filesz > p->p_memsz || (p->p_vaddr - p->p_offset) % PAGE)
            die("a malformed segment", path);
        if (TRUNC(p->p_vaddr) < lo)
            lo = TRUNC(p->p_vaddr);
        if (ROUND(p->p_vaddr + p->p_memsz) > hi)
            hi = ROUND(p->p_vaddr + p->p_memsz);
    }
    if (hi <= lo)
        die("no loadable segment", path);
    long flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (im->eh.e_type == ET_EXEC)
        flags |= MAP_FIXED_NOREPLACE;
    long at = mmap6(im->eh.e_type == ET_EXEC ? lo : 0, hi - lo, PROT_NONE, flags, -1, 0);
    if (bad(at) || (im->eh.e_type == ET_EXEC && (ul)at != lo))
        die("cannot reserve the program's addresses", path);
    im->base = im->eh.e_type == ET_EXEC ? 0 : (ul)at - lo;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        long prot = prot_of(p->p_flags);
        ul start = im->base + TRUNC(p->p_vaddr);
        ul file_end = im->base + p->p_vaddr + p->p_filesz;
        ul mem_end = im->base + p->p_vaddr + p->p_memsz;
        if (p->p_filesz) {
            long m = mmap6(start, file_end - start, prot | (p->p_memsz > p->p_filesz ? PROT_WRITE : 0),
                           MAP_PRIVATE | MAP_FIXED, fd, TRUNC(p->p_offset));
            if (bad(m))
                die("cannot map a segment", path);
        }
        if (p->p_memsz > p->p_filesz) {
            /* The rest of the file's last page is bss: zeroed. */
            if (p->p_filesz && ROUND(file_end) > file_end)
                zero((void *)file_end, ROUND(file_end) - file_end);
            ul anon = p->p_filesz ? ROUND(file_end) : start;
            if (ROUND(mem_end) > anon) {
                long m = mmap6(anon, ROUND(mem_end) - anon, prot, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                if (bad(m))
                    die("cannot map the bss", path);
            }
            if (p->p_filesz && !(prot & PROT_WRITE))
                sys3(__NR_mprotect, start, ROUND(file_end) - start, prot);
        }
    }
}

/* The address of the program headers in the mapped image. */
static ul phdr_address(struct image *im)
{
    for (int i = 0; i < im->eh.e_phnum; i++)
        if (im->ph[i].p_type == PT_PHDR)
            return im->base + im->ph[i].p_vaddr;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type == PT_LOAD && p->p_offset <= im->eh.e_phoff &&
            im->eh.e_phoff < p->p_offset + p->p_filesz)
            return im->base + p->p_vaddr + (im->eh.e_phoff - p->p_offset);
    }
    return 0;
}

static long open_or_die(const char *path)
{
    long fd = sys4(__NR_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        die("cannot open", path);
    return fd;
}

/* ---- the start ---- */

static void learn_devices(void)
{
    struct stat st;
    if (sys2(__NR_stat, "/proc", &st) != 0)
        return;
    proc_dev = st.st_dev;
    cover_dev = st.st_dev;
    if (sys2(__NR_stat, "/proc/sys/fs/file-nr", &st) == 0)
        cover_dev = st.st_dev;
    fast = 1;
}

/* A script: its interpreter started through the loader, with the
 * kernel's arguments (interpreter, its one optional argument, the
 * script's path, then the script's own arguments but the first). */
static void __attribute__((noreturn)) exec_script(long fd, char **argv, long argc, char **envp)
{
    static char line[256];
    long n = sys4(__NR_pread64, fd, line, sizeof line - 1, 0);
    if (n < 3)
        die("cannot read the script", argv[1]);
    line[n] = 0;
    char *p = line + 2, *interp, *arg = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    interp = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n')
        p++;
    if (*p == ' ' || *p == '\t') {
        *p++ = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        arg = p;
        while (*p && *p != '\n')
            p++;
        char *end = p;
        while (end > arg && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        *end = 0;
        if (!*arg)
            arg = 0;
    }
    *p = 0;
    if (!*interp)
        die("a script names no interpreter", argv[1]);
    /* argv: [name, interp, interp, arg?, script, args 1..] */
    char *args[4 + 512 + 1];
    long k = 0;
    args[k++] = argv[0];
    args[k++] = interp;
    args[k++] = interp;
    if (arg)
        args[k++] = arg;
    args[k++] = argv[1];
    for (long i = 3; i < argc && k < 4 + 512; i++)
        args[k++] = argv[i];
    args[k] = 0;
    sys3(__NR_execve, loader_path, args, envp);
    die("cannot start the script's interpreter", interp);
}

static void __attribute__((noreturn, used)) loader_main(ul *sp)
{
    long argc = (long)sp[0];
    char **argv = (char **)(sp + 1);
    if (argc < 3)
        die("usage", FIRST_NAME " PROGRAM ARGV0 [ARGS...]");
    int nested = str_eq(argv[0], NESTED_NAME);
    const char *prog = argv[1];
    char **envp = argv + argc + 1;
    char **e = envp;
    while (*e)
        e++;
    Elf64_auxv_t *auxv = (Elf64_auxv_t *)(e + 1);

    long n = sys4(__NR_readlinkat, AT_FDCWD, "/proc/self/exe", loader_path, MAX_PATH - 1);
    loader_path[n > 0 ? n : 0] = 0;

    long fd = sys4(__NR_openat, AT_FDCWD, prog, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        /* Not readable (mode --x): the kernel alone may start it. */
        sys3(__NR_execve, prog, argv + 2, envp);
        die("cannot start", prog);
    }
    char own[32];
    fd_path(own, fd);
    n = sys4(__NR_readlinkat, AT_FDCWD, own, program_path, MAX_PATH - 1);
    program_path[n > 0 ? n : 0] = 0;
    char head[2] = {0};
    if (read_at(fd, head, 2, 0) && head[0] == '#' && head[1] == '!')
        exec_script(fd, argv, argc, envp);

    static struct image program, interp;
    read_headers(fd, &program, prog);
    map_image(fd, &program, prog);
    ul entry = program.base + program.eh.e_entry, base = 0;
    for (int i = 0; i < program.eh.e_phnum; i++) {
        Elf64_Phdr *p = &program.ph[i];
        if (p->p_type != PT_INTERP)
            continue;
        static char interp_path[MAX_PATH];
        if (p->p_filesz < 2 || p->p_filesz >= MAX_PATH ||
            !read_at(fd, interp_path, p->p_filesz, p->p_offset) || interp_path[p->p_filesz - 1])
            die("a malformed interpreter name", prog);
        long ifd = open_or_die(interp_path);
        read_headers(ifd, &interp, interp_path);
        map_image(ifd, &interp, interp_path);
        sys1(__NR_close, ifd);
        base = interp.base;
        entry = interp.base + interp.eh.e_entry;
    }
    sys1(__NR_close, fd);

    for (Elf64_auxv_t *a = auxv; a->a_type != AT_NULL; a++) {
        switch (a->a_type) {
        case AT_PHDR:
            a->a_un.a_val = phdr_address(&program);
            break;
        case AT_PHNUM:
            a->a_un.a_val = program.eh.e_phnum;
            break;
        case AT_PHENT:
            a->a_un.a_val = sizeof(Elf64_Phdr);
            break;
        case AT_ENTRY:
            a->a_un.a_val = program.base + program.eh.e_entry;
            break;
        case AT_BASE:
            a->a_un.a_val = base;
            break;
        case AT_EXECFN:
            a->a_un.a_val = (ul)prog;
            break;
        }
    }

    learn_devices();
    struct ksigaction ours = our_sigsys();
    sys4(__NR_rt_sigaction, SIGSYS, &ours, &program_sigsys, sizeof(ul));
    ul mask = get_mask();
    if (mask & SIGSYS_BIT)
        set_mask(mask & ~SIGSYS_BIT);
    if (!nested)
        stack_filter();

    /* Drop the loader's two arguments: argc moves up two slots, where
     * the program's argv already starts. */
    ul *new_sp = sp + 2;
    new_sp[0] = (ul)(argc - 2);
    __asm__ volatile("mov %0, %%rsp\n\t"
                     "xor %%edx, %%edx\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "jmp *%1"
                     :
                     : "r"(new_sp), "r"(entry)
                     : "memory");
    __builtin_unreachable();
}

__asm__(".text\n"
        ".globl _start\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call loader_main\n"
        "  hlt\n"
        ".globl loader_restorer\n"
        "loader_restorer:\n"
        "  mov $15, %eax\n"
        "  syscall\n"
        "  hlt\n");
