/* static_opens: the static program of issue 36's speed figure, for
 * scripts/static-opens (built there with `cc -static`): opens, reads and
 * closes FILE N times and prints the nanoseconds per iteration of the
 * loop alone (CLOCK_MONOTONIC, read through the vDSO).
 *
 *   usage: static_opens [--sigsys MARK | --rewrite MARK | --marked MARK] FILE N
 *
 * With no option each open is the C library's own, unmarked: what every
 * statically linked program makes (serviced under the supervisor).
 * --marked MARK: each open carries MARK (the policy table's
 * FAST_READ_MARK) in openat's fifth register: what a call site rewritten
 * to a trampoline would cost (the filter passes it in a fenced guest).
 * --sigsys MARK: the C library's unmarked opens, with an in-process
 * re-issue in front: the program stacks a filter that answers
 * SECCOMP_RET_TRAP for an unmarked openat and a SIGSYS handler that makes
 * the call again, marked: what a lazily found call site costs before it
 * is rewritten (the route docs/fast-reads.md measures).
 * --rewrite MARK: as --sigsys, and the handler also rewrites the trapped
 * site when it is the C library's `mov eax, 257; syscall` (seven bytes)
 * into a jump to a trampoline on a page mapped within 2 GiB of it, which
 * makes the call marked and jumps back: every later open of that site
 * costs the trampoline and no signal. A measuring probe only: it skips
 * the preload's checks (a refused procfs file, a served /proc
 * descriptor), which the route's handler must make. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static unsigned long mark;

static long openat_marked(long dirfd, long path, long flags, long mode)
{
    register long r10 __asm__("r10") = mode;
    register long r8 __asm__("r8") = (long)mark;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_openat), "D"(dirfd), "S"(path), "d"(flags), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

static int rewriting;
static void rewrite(unsigned char *after);

/* The trapped call's registers are in the signal's context: make the
 * call again, marked, and put its answer where the call's would be. */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    greg_t *r = ((ucontext_t *)ctx)->uc_mcontext.gregs;
    r[REG_RAX] = openat_marked(r[REG_RDI], r[REG_RSI], r[REG_RDX], r[REG_R10]);
    if (rewriting)
        rewrite((unsigned char *)r[REG_RIP]);
}

/* The C library's openat site, and the trampoline that replaces it: out
 * of the red zone, r8 saved, the call made marked, back after the site. */
static const unsigned char site[7] = {0xb8, 0x01, 0x01, 0x00, 0x00, 0x0f, 0x05};
static unsigned char *tramp;
static int sites;

static void rewrite(unsigned char *after)
{
    unsigned char *at = after - sizeof site;
    if (memcmp(at, site, sizeof site) || sites >= 64)
        return;
    if (!tramp) {
        void *near = (void *)(((unsigned long)at & ~0xffffUL) + (1UL << 24));
        tramp = mmap(near, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tramp == MAP_FAILED) {
            tramp = NULL;
            return;
        }
    }
    unsigned char *t = tramp + 64 * sites;
    long to_tramp = t - (at + 5), back = after - (t + 39);
    if (to_tramp != (int)to_tramp || back != (int)back)
        return;
    static const unsigned char head[] = {0x48, 0x8d, 0x64, 0x24, 0x80, 0x41, 0x50, 0x49, 0xb8};
    static const unsigned char tail[] = {0xb8, 0x01, 0x01, 0x00, 0x00, 0x0f, 0x05, 0x41, 0x58,
                                         0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, 0xe9};
    mprotect(tramp, 4096, PROT_READ | PROT_WRITE);
    memcpy(t, head, sizeof head);
    memcpy(t + 9, &mark, 8);
    memcpy(t + 17, tail, sizeof tail);
    int rel = (int)back;
    memcpy(t + 35, &rel, 4);
    mprotect(tramp, 4096, PROT_READ | PROT_EXEC);
    unsigned long page = (unsigned long)at & ~0xfffUL;
    if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC))
        return;
    unsigned char jump[7] = {0xe9, 0, 0, 0, 0, 0x90, 0x90};
    rel = (int)to_tramp;
    memcpy(jump + 1, &rel, 4);
    memcpy(at, jump, sizeof jump);
    mprotect((void *)page, 8192, PROT_READ | PROT_EXEC);
    sites++;
}

static void stack_trap_filter(void)
{
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigaction(SIGSYS, &sa, NULL);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 7),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)mark, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4]) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(mark >> 32), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
        perror("static_opens: seccomp");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int marked = 0, first = 1;
    if (argc == 5 && (!strcmp(argv[1], "--sigsys") || !strcmp(argv[1], "--rewrite") ||
                      !strcmp(argv[1], "--marked"))) {
        mark = strtoul(argv[2], NULL, 0);
        marked = !strcmp(argv[1], "--marked");
        rewriting = !strcmp(argv[1], "--rewrite");
        if (!marked)
            stack_trap_filter();
        first = 3;
    } else if (argc != 3) {
        fprintf(stderr, "usage: static_opens [--sigsys MARK | --rewrite MARK | --marked MARK] FILE N\n");
        return 2;
    }
    const char *file = argv[first];
    long n = atol(argv[first + 1]);
    char buf[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        int fd = marked ? (int)openat_marked(AT_FDCWD, (long)file, O_RDONLY, 0) : open(file, O_RDONLY);
        if (fd < 0 || read(fd, buf, sizeof buf) < 0) {
            perror("static_opens");
            return 1;
        }
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.0f\n", n > 0 ? ns / n : 0);
    return 0;
}
