/*
 * static_loader_trap.c: the static loader's SIGSYS handler and the filter
 * it stacks (static_loader.c says what the loader is, and what each
 * trapped call becomes). Runs in the loaded program's threads, on their
 * stacks or alternate stacks, for the program's whole life: re-entrant,
 * with no state but the stack and what the start learned.
 */
#include "static_loader.h"
#include "spelled_off_proc.h"
#include "write_reopen.h"

/* ---- state, in the loader's own image (it stays mapped) ---- */

char program_path[MAX_PATH];
char loader_path[MAX_PATH];
ul proc_dev, cover_dev;
int fast;
struct ksigaction program_sigsys;

/* ---- the preload's check, for a trapped plain read open ---- */

/* Whether descriptor `fd`, opened marked, may be a file the supervisor
 * serves (spelled_off_proc.h's maybe_served_file); an fstat that fails
 * says yes. */
static int maybe_served(long fd, long r9)
{
    struct stat st;
    if (sys6r9(__NR_fstat, fd, (long)&st, 0, 0, 0, r9) != 0)
        return 1;
    return maybe_served_file(st.st_dev, st.st_mode, proc_dev, cover_dev);
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

/* A plain read made marked by openat2 with RESOLVE_NO_SYMLINKS (which
 * the supervisor's fenced filter passes marked, its answer the kernel's
 * as a marked openat's): a descriptor, or an error that resolving
 * through no symlink gave, final but EACCES; -ELOOP where a symlink was
 * met or the call cannot be made so (EINVAL, ENOSYS, E2BIG): then the
 * marked openat and the preload's check. */
static long open_without_symlinks(long dirfd, long path, long flags, long r9)
{
    struct {
        unsigned long long flags, mode, resolve;
    } how = {(unsigned)flags, 0, RESOLVE_NO_SYMLINKS};
    long fd = sys6r9(NR_openat2, dirfd, path, (long)&how, sizeof how, (long)FAST_READ_MARK, r9);
    if (fd == -EINVAL || fd == -ENOSYS || fd == -E2BIG)
        return -ELOOP;
    return fd;
}

/* A plain read open made marked, then the preload's check (made again
 * unmarked after EACCES, or EPERM for O_NOATIME); an O_RDWR
 * open without O_EXCL made marked, and again unmarked if the fence
 * refused it (its answer is otherwise the one the supervisor's CONTINUE
 * or its open as the caller would give: no check). `r9` goes with each
 * call (LOADER_MARK from the handler; 0 from a rewritten site, whose
 * unmarked open the stacked filter then traps to the handler). An open
 * for writing only is made marked (the supervisor's filter passes it
 * either way; the stacked filter only marked), its answer the kernel's. */
static long open_plain(long dirfd, long path, long flags, long mode, long r9)
{
    long fd;
    if (fast && (flags & READ_WRITE_MASK) == O_RDWR) {
        fd = sys6r9(__NR_openat, dirfd, path, flags, NEEDS_MODE(flags) ? mode : 0,
                    (long)FAST_READ_MARK, r9);
        if (fd != -EACCES)
            return fd;
    } else if (fast && (flags & NOT_PLAIN) == 0) {
        /* First with no symlink followed: a descriptor that a path
         * spelled off /proc reached is on neither procfs nor a cover,
         * and needs no check (docs/fast-reads.md, "The check"). */
        fd = open_without_symlinks(dirfd, path, flags, r9);
        if (fd >= 0 && spelled_off_proc((const char *)path))
            return fd;
        if (fd == -ELOOP)
            fd = sys6r9(__NR_openat, dirfd, path, flags, 0, (long)FAST_READ_MARK, r9);
        if (fd >= 0) {
            if (!maybe_served(fd, r9))
                return fd;
            sys6r9(__NR_close, fd, 0, 0, 0, 0, r9);
        } else if (!refused_maybe_served(fd, flags)) {
            return fd;
        }
    }
    long mark = write_only(flags) ? (long)FAST_READ_MARK : 0;
    return sys6r9(__NR_openat, dirfd, path, flags, NEEDS_MODE(flags) ? mode : 0, mark, r9);
}

/* A trapped open (the handler's, or a rewritten site's call): made as
 * open_plain makes it; a write-only one the kernel refused made again by
 * openat2 (write_reopen.h), which the stacked filter passes and the
 * supervisor's traps; a plain read of the program's own exe made of the
 * program's file. */
long trapped_open(long dirfd, long path, long flags, long mode, long r9)
{
    long fd = open_plain(dirfd, path, flags, mode, r9);
    struct write_reopen_how how;
    if (write_reopen(fd, flags, mode, &how)) {
        long again = sys6r9(NR_openat2, dirfd, path, (long)&how, sizeof how, 0, r9);
        return again >= 0 ? again : fd;
    }
    if (fd >= 0 && (flags & NOT_PLAIN) == 0 && names_own_exe((const char *)path)) {
        sys6r9(__NR_close, fd, 0, 0, 0, 0, r9);
        fd = sys6r9(__NR_openat, AT_FDCWD, (long)program_path, flags, 0, (long)FAST_READ_MARK, r9);
    }
    return fd;
}

/* ---- signals ---- */

long set_mask(ul mask)
{
    return sys4(__NR_rt_sigprocmask, SIG_SETMASK, &mask, 0, sizeof mask);
}

ul get_mask(void)
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

struct ksigaction our_sigsys(void)
{
    struct ksigaction sa = {
        .handler = (ul)on_sigsys,
        .flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART | 0x04000000 /* SA_RESTORER */,
        .restorer = (ul)loader_restorer,
        /* Every other signal waits for the handler's sigreturn: a
         * handler that ran inside it would start with the loader's
         * registers, r9 holding LOADER_MARK, and its calls would pass
         * the stacked filter unseen. */
        .mask = ~SIGSYS_BIT,
    };
    return sa;
}

/* rt_sigaction from the program. For SIGSYS the kernel still does the
 * copying (so a bad pointer is its EFAULT): the program's view is put in
 * place, the call made, what it installed read back as the new view
 * (unless the caller shares a parent's memory, static_loader_mm.c), and
 * ours put back. For any other signal, SIGSYS is taken out of the mask. */
static long trapped_sigaction(long sig, long act, long old, long size)
{
    if (sig == SIGSYS && size == sizeof(ul)) {
        struct ksigaction ours = our_sigsys(), now;
        sys4(__NR_rt_sigaction, SIGSYS, &program_sigsys, 0, size);
        long ret = sys4(__NR_rt_sigaction, SIGSYS, act, old, size);
        sys4(__NR_rt_sigaction, SIGSYS, &ours, &now, size);
        if (ret == 0 && owns_memory())
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
ul fd_path(char *to, long fd)
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
    static const char nested[] = NESTED_NAME, nested_as_built[] = NESTED_NAME_NO_REWRITE;
    args[0] = (char *)(rewriting ? nested : nested_as_built);
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

static void call_program_handler(struct ksigaction h, int sig, siginfo_t *info, void *ctx);

/* A SIGSYS that is not the stacked filter's: the program's disposition,
 * its handler run with the mask it would have had (the interrupted
 * thread's and the handler's own, SIGSYS left deliverable). */
static void chain(int sig, siginfo_t *info, void *ctx)
{
    struct ksigaction h = program_sigsys;
    ul *uc_mask = (ul *)&((struct ucontext *)ctx)->uc_sigmask;
    if (h.handler != (ul)SIG_IGN && h.handler != (ul)SIG_DFL) {
        ul ours = get_mask();
        set_mask((*uc_mask | h.mask) & ~SIGSYS_BIT);
        call_program_handler(h, sig, info, ctx);
        set_mask(ours);
        return;
    }
    call_program_handler(h, sig, info, ctx);
}

static void call_program_handler(struct ksigaction h, int sig, siginfo_t *info, void *ctx)
{
    if (h.handler == (ul)SIG_IGN)
        return;
    if (h.handler == (ul)SIG_DFL) {
        struct ksigaction dfl = {0};
        sys4(__NR_rt_sigaction, SIGSYS, &dfl, 0, sizeof(ul));
        sys3(__NR_tgkill, sys0(__NR_getpid), sys0(__NR_gettid), SIGSYS);
        return;
    }
    if ((h.flags & SA_RESETHAND) && owns_memory())
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
        ret = trapped_open(a, b, c, d, (long)LOADER_MARK);
        if (rewriting)
            rewrite_site(r->rip, __NR_openat);
        break;
    case __NR_open:
        ret = trapped_open(AT_FDCWD, a, b, c, (long)LOADER_MARK);
        if (rewriting)
            rewrite_site(r->rip, __NR_open);
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
    case __NR_execveat: {
        /* The new program starts with the interrupted thread's mask. */
        ul ours = get_mask();
        set_mask(*(ul *)&uc->uc_sigmask & ~SIGSYS_BIT);
        if (info->si_syscall == __NR_execve) {
            ret = exec_nested(AT_FDCWD, a, b, c, 0);
            if (ret == KERNEL_EXEC)
                ret = sys3(__NR_execve, a, b, c);
        } else {
            ret = exec_nested(a, b, c, d, e);
            if (ret == KERNEL_EXEC)
                ret = sys6(__NR_execveat, a, b, c, d, e);
        }
        set_mask(ours);
        break;
    }
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

long stack_filter(void)
{
    /* The number first, and every call but the eight below allowed with
     * no register read: the kernel's seccomp cache then passes each such
     * number without running any filter (it emulates a filter per number
     * and caches ALLOW only where no argument is read; an argument read
     * before the number made every call of the program run both this
     * filter and the supervisor's). Trapped: an unmarked plain read or
     * write-only openat, a plain read or write-only open, and the calls
     * below. The index of each instruction in its comment: TRAP is 46,
     * ALLOW 47. */
    struct sock_filter f[] = {
        /* 0 */ LD(offsetof(struct seccomp_data, arch)),
        /* 1 */ JEQ(AUDIT_ARCH_X86_64, 0, 45),
        /* 2 */ LD(offsetof(struct seccomp_data, nr)),
        /* 3 */ JEQ(__NR_openat, 7, 0),
        /* 4 */ JEQ(__NR_open, 6, 0),
        /* 5 */ JEQ(__NR_rt_sigaction, 5, 0),
        /* 6 */ JEQ(__NR_execve, 4, 0),
        /* 7 */ JEQ(__NR_execveat, 3, 0),
        /* 8 */ JEQ(__NR_readlink, 2, 0),
        /* 9 */ JEQ(__NR_readlinkat, 1, 0),
        /* 10 */ JEQ(__NR_rt_sigprocmask, 0, 36),
        /* 11: the loader's own calls pass */
        LD(ARG_LO(5)),
        /* 12 */ JEQ((unsigned)LOADER_MARK, 0, 2),
        /* 13 */ LD(ARG_HI(5)),
        /* 14 */ JEQ((unsigned)(LOADER_MARK >> 32), 32, 0),
        /* 15 */ LD(offsetof(struct seccomp_data, nr)),
        /* 16 */ JEQ(__NR_openat, 7, 0),
        /* 17 */ JEQ(__NR_open, 14, 0),
        /* 18 */ JEQ(__NR_rt_sigaction, 21, 0),
        /* 19 */ JEQ(__NR_execve, 26, 0),
        /* 20 */ JEQ(__NR_execveat, 25, 0),
        /* 21 */ JEQ(__NR_readlink, 24, 0),
        /* 22 */ JEQ(__NR_readlinkat, 23, 0),
        /* 23 */ JEQ(__NR_rt_sigprocmask, 12, 23),
        /* 24: openat, a plain read or a write-only open, without the
         * fast-read mark */
        LD(ARG_LO(2)),
        /* 25 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PLAIN_MASK, 0, 2),
        /* 26 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, O_ACCMODE | O_PATH),
        /* 27 */ JEQ(O_WRONLY, 0, 19),
        /* 28 */ LD(ARG_LO(4)),
        /* 29 */ JEQ((unsigned)FAST_READ_MARK, 0, 16),
        /* 30 */ LD(ARG_HI(4)),
        /* 31 */ JEQ((unsigned)(FAST_READ_MARK >> 32), 15, 14),
        /* 32: open, a plain read or a write-only open */
        LD(ARG_LO(1)),
        /* 33 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PLAIN_MASK, 0, 12),
        /* 34 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, O_ACCMODE | O_PATH),
        /* 35 */ JEQ(O_WRONLY, 10, 11),
        /* 36: rt_sigprocmask with a set (a query passes) */
        LD(ARG_LO(1)),
        /* 37 */ JEQ(0, 0, 8),
        /* 38 */ LD(ARG_HI(1)),
        /* 39 */ JEQ(0, 7, 6),
        /* 40: rt_sigaction with a new action, or of SIGSYS (a query of
         * another signal passes: the kernel's answer is the handler's) */
        LD(ARG_LO(1)),
        /* 41 */ JEQ(0, 0, 4),
        /* 42 */ LD(ARG_HI(1)),
        /* 43 */ JEQ(0, 0, 2),
        /* 44 */ LD(ARG_LO(0)),
        /* 45 */ JEQ(SIGSYS, 0, 1),
        /* 46 */ RET(SECCOMP_RET_TRAP | TRAP_DATA),
        /* 47 */ RET(SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    sys2(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1);
    return sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
