/* Read opens as a statically linked program makes them: with no preload
 * to mark them, each is the C library's own `syscall` instruction
 * (tests/fs/static_reads.rs builds this with `cc -static` and with
 * `musl-gcc -static`, runs it natively and under the supervisor and
 * compares the output line by line). Only portable calls: no guest.h,
 * errno printed as a number, so glibc and musl print alike.
 *
 * static_reads DIR (DIR holds `a` and `sub/b`): the open family (open,
 * openat with a directory descriptor, fopen), failing opens (a missing
 * name, a bad pointer, a directory read), 2,000 opens in a row; opens
 * with every signal blocked, with the program's own SIGSYS handler and
 * while an interval timer interrupts them; opens in a forked child and in
 * an exec'd copy of itself; a dynamic program and a shell exec'd from it;
 * /proc/self/exe, named and read; queries of signal dispositions (SIGSYS's
 * and another's); a SIGSYS of a filter the program stacks
 * itself, in a forked child, reaching its own handler; and a checksum of
 * its own text before and after, which must not change (under the
 * supervisor with `--no-rewrite`). First of all, before any other open,
 * threads racing to the first opens of a site (the static loader rewrites
 * a site at its first trap); later opens in a signal handler that
 * interrupts opens, and a vforked child that execs. Last, where the text
 * changed, whether only at rewritten sites (docs/fast-reads.md,
 * "Rewritten sites": glibc's `mov $257, %eax` become a `jmp`, musl's
 * `syscall` a `jmp` onto the padding after its `ret`), and how many.
 * static_reads --child DIR: the exec'd copy: one open, then exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern const char __executable_start[], etext[];

static char dir[PATH_MAX / 2];

/* The first line of what `fd` holds, or the errno of the open. */
static void show(const char *what, int fd)
{
    char buf[64] = {0};
    if (fd < 0) {
        printf("%s: open = -1 errno %d\n", what, errno);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        printf("%s: read = -1 errno %d\n", what, errno);
    else
        printf("%s: \"%.*s\"\n", what, (int)strcspn(buf, "\n"), buf);
    close(fd);
}

static const char *in_dir(const char *name)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* 1 when `n` opens and reads of DIR/a all give its text. */
static int many(int n)
{
    for (int i = 0; i < n; i++) {
        char buf[16] = {0};
        int fd = open(in_dir("a"), O_RDONLY);
        if (fd < 0 || read(fd, buf, sizeof buf - 1) != 10 || strcmp(buf, "text of a\n"))
            return 0;
        close(fd);
    }
    return 1;
}

/* glibc's __open_nocancel, `mov $257, %eax` to `syscall`. */
#define NOCANCEL "\xb8\x01\x01\0\0\x48\x89\xfe\xbf\x9c\xff\xff\xff\x0f\x05"

/* Sites where `now` differs from `was` (the text at the start), each
 * one of the three rewrites; -1 if any other byte changed. */
static int rewritten_sites(const unsigned char *was, const unsigned char *now, size_t len)
{
    int sites = 0;
    for (size_t i = 0; i < len;) {
        if (was[i] == now[i]) {
            i++;
            continue;
        }
        if (i + 7 <= len && was[i] == 0xb8 && !memcmp(was + i + 3, "\0\0\x0f\x05", 4) &&
            now[i] == 0xe9 && !memcmp(now + i + 5, "\x0f\x05", 2) &&
            ((was[i + 1] == 1 && was[i + 2] == 1) || (was[i + 1] == 2 && was[i + 2] == 0))) {
            sites++;
            i += 5;
        } else if (i + 15 <= len && !memcmp(was + i, NOCANCEL, 15) && now[i] == 0xe9 &&
                   !memcmp(now + i + 5, NOCANCEL + 5, 10)) {
            sites++;
            i += 5;
        } else if (i >= 3 && i + 8 <= len && !memcmp(was + i - 3, "\x48\x89\xca\x0f\x05\xc3", 6) &&
                   !memcmp(now + i, "\xeb\x01\xc3\xe9", 4)) {
            sites++;
            i += 8;
        } else {
            return -1;
        }
    }
    return sites;
}

static unsigned long text_sum(void)
{
    unsigned long sum = 0;
    for (const char *p = __executable_start; p < etext; p++)
        sum = sum * 31 + (unsigned char)*p;
    return sum;
}

/* 1 when the first bytes of /proc/self/exe are those of `path`. */
static int exe_reads_as(const char *path)
{
    char a[512], b[512];
    int fa = open("/proc/self/exe", O_RDONLY), fb = open(path, O_RDONLY);
    ssize_t na = fa < 0 ? -1 : read(fa, a, sizeof a), nb = fb < 0 ? -2 : read(fb, b, sizeof b);
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return na == nb && na > 0 && !memcmp(a, b, (size_t)na);
}

/* A filter of the program's own (no kernel headers: musl-gcc has none)
 * that answers SECCOMP_RET_TRAP with data 7 for getppid. */
struct filt {
    unsigned short code;
    unsigned char jt, jf;
    unsigned int k;
};
struct fprog {
    unsigned short len;
    struct filt *filter;
};

static volatile int own_trap_errno = -1, own_trap_nr = -1;
static void on_own_trap(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    own_trap_errno = si->si_errno;
    own_trap_nr = si->si_syscall;
}

/* In a forked child: the program's own filter's SIGSYS reaches its own
 * handler, and opens still work under both filters. */
static void own_filter_child(void)
{
    struct sigaction sa = {.sa_sigaction = on_own_trap, .sa_flags = SA_SIGINFO};
    sigaction(SIGSYS, &sa, NULL);
    struct filt f[] = {
        {0x20, 0, 0, 4},                   /* ld arch */
        {0x15, 0, 3, 0xc000003e},          /* jeq x86_64 */
        {0x20, 0, 0, 0},                   /* ld nr */
        {0x15, 0, 1, SYS_getppid},         /* jeq getppid */
        {0x06, 0, 0, 0x00030000 | 7},      /* ret TRAP | 7 */
        {0x06, 0, 0, 0x7fff0000},          /* ret ALLOW */
    };
    struct fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, 1, 0, &prog)) {
        printf("own filter: errno %d\n", errno);
        _exit(1);
    }
    long r = syscall(SYS_getppid);
    printf("own filter's SIGSYS: data %d, call %d, returns %ld\n", own_trap_errno, own_trap_nr, r);
    show("open under its own filter", open(in_dir("a"), O_RDONLY));
    _exit(0);
}

static volatile sig_atomic_t sigsys_seen, ticks, handler_opens_ok = 1, handler_opens;
static void on_sigsys(int sig) { (void)sig; sigsys_seen = 1; }
static void on_tick(int sig) { (void)sig; ticks++; }

/* A timer's handler that itself opens and reads, interrupting opens. */
static char b_path[PATH_MAX];
static void on_tick_open(int sig)
{
    (void)sig;
    int saved = errno;
    char buf[16] = {0};
    int fd = open(b_path, O_RDONLY);
    if (fd < 0 || read(fd, buf, sizeof buf - 1) != 10 || strcmp(buf, "text of b\n"))
        handler_opens_ok = 0;
    if (fd >= 0)
        close(fd);
    handler_opens++;
    errno = saved;
}

/* Threads started together, each making `THREAD_OPENS` opens. */
#define THREADS 4
#define THREAD_OPENS 500
/* Queries of a disposition (no new action), which the static loader's
 * filter passes for any signal but SIGSYS: another signal's is the
 * kernel's answer, its handler and its mask's other signals as set;
 * SIGSYS's the program's own handler, not the loader's. */
static void queries(void)
{
    struct sigaction set = {.sa_handler = on_tick}, got = {0};
    sigemptyset(&set.sa_mask);
    sigaddset(&set.sa_mask, SIGUSR1);
    sigaction(SIGUSR2, &set, NULL);
    sigaction(SIGUSR2, NULL, &got);
    printf("query SIGUSR2: own handler %d, SIGUSR1 in its mask %d\n", got.sa_handler == on_tick,
           sigismember(&got.sa_mask, SIGUSR1));
    sigaction(SIGSYS, NULL, &got);
    printf("query SIGSYS: own handler %d\n", got.sa_handler == on_sigsys);
    errno = 0;
    long r = syscall(SYS_rt_sigaction, SIGUSR2, NULL, (void *)8, 8);
    printf("query to a bad pointer: %ld errno %d\n", r, errno);
    signal(SIGUSR2, SIG_DFL);
}

static pthread_barrier_t start_line;
static void *opener(void *ok)
{
    pthread_barrier_wait(&start_line);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/a", dir);
    for (int i = 0; i < THREAD_OPENS; i++) {
        char buf[16] = {0};
        int fd = openat(AT_FDCWD, path, O_RDONLY);
        if (fd < 0 || read(fd, buf, sizeof buf - 1) != 10 || strcmp(buf, "text of a\n"))
            *(int *)ok = 0;
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

static int racing_threads(void)
{
    pthread_t t[THREADS];
    int ok[THREADS];
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        ok[i] = 1;
        if (pthread_create(&t[i], NULL, opener, &ok[i]))
            return 0;
    }
    int all = 1;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        all &= ok[i];
    }
    return all;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "--child")) {
        snprintf(dir, sizeof dir, "%s", argv[2]);
        show("exec'd child open", open(in_dir("sub/b"), O_RDONLY));
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: static_reads DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    unsigned long sum = text_sum();
    size_t text_len = (size_t)(etext - __executable_start);
    unsigned char *text_was = malloc(text_len);
    if (!text_was)
        return 1;
    memcpy(text_was, __executable_start, text_len);
    printf("%d threads x %d first opens: %d\n", THREADS, THREAD_OPENS, racing_threads());

    show("open", open(in_dir("a"), O_RDONLY));
    show("open cloexec", open(in_dir("a"), O_RDONLY | O_CLOEXEC));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    show("openat rel", openat(dfd, "sub/b", O_RDONLY));
    show("openat missing", openat(dfd, "missing", O_RDONLY));
    show("open dir read", open(in_dir("sub"), O_RDONLY));
    close(dfd);
    show("open bad pointer", open((const char *)8, O_RDONLY));
    FILE *f = fopen(in_dir("sub/b"), "r");
    char line[64] = {0};
    printf("fopen: \"%s\"\n", f && fgets(line, sizeof line, f) ? strtok(line, "\n") : "(failed)");
    if (f)
        fclose(f);
    printf("2000 opens: %d\n", many(2000));

    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    show("open, every signal blocked", open(in_dir("a"), O_RDONLY));
    sigprocmask(SIG_SETMASK, &old, NULL);

    struct sigaction sa = {.sa_handler = on_sigsys};
    sigaction(SIGSYS, &sa, NULL);
    show("open, own SIGSYS handler", open(in_dir("a"), O_RDONLY));
    printf("own SIGSYS handler ran: %d\n", (int)sigsys_seen);
    queries();

    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 50}, {0, 50}}, stop = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, NULL);
    int interrupted_ok = many(5000);
    setitimer(ITIMER_REAL, &stop, NULL);
    printf("5000 opens under a 50 us timer: %d (ticks seen: %d)\n", interrupted_ok, ticks > 0);
    snprintf(b_path, sizeof b_path, "%s/sub/b", dir);
    sa.sa_handler = on_tick_open;
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &every, NULL);
    interrupted_ok = many(3000);
    setitimer(ITIMER_REAL, &stop, NULL);
    printf("3000 opens under a 50 us timer whose handler opens: %d (handler opens: %d, all read: %d)\n",
           interrupted_ok, handler_opens > 0, (int)handler_opens_ok);

    pid_t pid = fork();
    if (pid == 0) {
        show("forked child open", open(in_dir("a"), O_RDONLY));
        _exit(many(100) ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    printf("forked child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", dir, (char *)NULL);
        printf("exec: errno %d\n", errno);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    printf("exec'd child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    pid = vfork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--child", dir, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    printf("vforked exec'd child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    pid = fork();
    if (pid == 0) {
        execl("/bin/cat", "cat", in_dir("sub/b"), (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    printf("exec'd cat: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "read l < \"$0\"; echo \"sh read: $l\"", in_dir("a"), (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    printf("exec'd sh: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    pid = fork();
    if (pid == 0)
        own_filter_child();
    waitpid(pid, &status, 0);
    printf("own filter child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    char exe[PATH_MAX] = {0}, self[PATH_MAX] = {0};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    printf("/proc/self/exe is the program: %d\n", n > 0 && realpath(argv[0], self) && !strcmp(exe, self));
    printf("/proc/self/exe reads as the program: %d\n", realpath(argv[0], self) && exe_reads_as(self));
    printf("text unchanged: %d\n", text_sum() == sum);
    int sites = rewritten_sites(text_was, (const unsigned char *)__executable_start, text_len);
    printf("text changed only at rewritten sites: %d\n", sites >= 0);
    printf("rewritten sites: %d\n", sites);
    return 0;
}
