/* marked-cost: what one marked plain read open costs, and which layer of
 * the sandbox the cost comes from (PERFORMANCE.md, branch markedcost).
 * Opens FILE with openat(O_RDONLY | O_CLOEXEC) and FAST_READ_MARK in r8
 * (the mark the fenced filter passes), optionally reads it, closes it;
 * prints the loop's CPU time per iteration in ns (the thread's own
 * CLOCK_THREAD_CPUTIME_ID, median of 5 blocks of N), which other work on
 * the machine moves far less than wall time. Run it natively, under
 * `supervisor run --ro DIR -- ...` and under bwrap; natively it can stack
 * the supervisor's costs on itself:
 *
 *   cc -O2 -static -o /tmp/marked-cost scripts/marked-cost.c
 *   marked-cost [-n N] [-r] [-m HOW] [-f FILTERS] [-l LAYERS [-L DIR]] FILE
 *
 *   -r          read up to 256 bytes after each open
 *   -m HOW      how each open is made: `openat` (the default: marked
 *               openat), `openat2` (marked openat2 with
 *               RESOLVE_NO_SYMLINKS, the call the static loader's
 *               rewritten site makes) or `libc` (the C library's open,
 *               unmarked: built static and run under the supervisor, the
 *               static loader rewrites its site, so this is the rewritten
 *               site's whole route)
 *   -f FILTERS  stack that many seccomp filters that test openat's r8 for
 *               the mark and allow everything (9 instructions each)
 *   -l LAYERS   stack that many Landlock layers handling READ_FILE (and
 *               READ_DIR, EXECUTE), each with rules on the host's usual
 *               top-level directories, as the fence grants the view's
 *   -L DIR      one more rule in each layer, on DIR (the walk from FILE
 *               then ends there)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* FAST_READ_MARK (syscalls/src/policy/table/conds.rs). */
static const unsigned long mark = 0xa5c39e4f17b2d860UL;

static long openat_marked(long dirfd, const char *path, long flags)
{
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = (long)mark;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(257L), "D"(dirfd), "S"(path), "d"(flags), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

static long openat2_marked(long dirfd, const char *path, long flags)
{
    struct open_how how = {.flags = (unsigned long long)flags, .resolve = RESOLVE_NO_SYMLINKS};
    register long r10 __asm__("r10") = sizeof how;
    register long r8 __asm__("r8") = (long)mark;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(437L), "D"(dirfd), "S"(path), "d"(&how), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

/* One open of `path` made as `how` says (-m): the descriptor or -errno. */
static long open_as(char how, const char *path)
{
    if (how == '2')
        return openat2_marked(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (how == 'c') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
    }
    return openat_marked(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
}

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int stack_filter(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 257, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 16 + 8 * 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)mark, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {sizeof f / sizeof f[0], f};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p);
}

static int stack_layer(const char *extra)
{
    struct landlock_ruleset_attr ra = {
        .handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                             LANDLOCK_ACCESS_FS_EXECUTE,
    };
    int rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
    if (rs < 0)
        return -1;
    const char *dirs[] = {"/usr", "/etc", "/tmp", "/bin", "/lib", "/lib64", "/dev", "/sys",
                          "/work", "/root", "/opt", "/var", "/home", "/run", "/sbin", extra};
    for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i])
            continue;
        int fd = open(dirs[i], O_PATH | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct landlock_path_beneath_attr pb = {.allowed_access = ra.handled_access_fs,
                                                .parent_fd = fd};
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0)) {
            /* Not a directory: the file rights only. */
            pb.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
            syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        }
        close(fd);
    }
    int r = syscall(SYS_landlock_restrict_self, rs, 0);
    close(rs);
    return r;
}

int main(int argc, char **argv)
{
    int filters = 0, layers = 0, do_read = 0, opt;
    char how = 'o';
    long n = 20000;
    const char *extra = NULL;
    while ((opt = getopt(argc, argv, "n:rm:f:l:L:")) != -1) {
        switch (opt) {
        case 'n': n = atol(optarg); break;
        case 'r': do_read = 1; break;
        case 'm':
            if (strcmp(optarg, "openat2") == 0)
                how = '2';
            else if (strcmp(optarg, "libc") == 0)
                how = 'c';
            else if (strcmp(optarg, "openat") != 0)
                return 2;
            break;
        case 'f': filters = atoi(optarg); break;
        case 'l': layers = atoi(optarg); break;
        case 'L': extra = optarg; break;
        default: return 2;
        }
    }
    if (optind + 1 != argc || n <= 0) {
        fprintf(stderr, "usage: marked-cost [-n N] [-r] [-m openat|openat2|libc] [-f FILTERS] "
                        "[-l LAYERS [-L DIR]] FILE\n");
        return 2;
    }
    const char *path = argv[optind];
    if ((filters || layers) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        perror("marked-cost: no_new_privs");
        return 1;
    }
    for (int i = 0; i < filters; i++)
        if (stack_filter()) {
            perror("marked-cost: seccomp");
            return 1;
        }
    for (int i = 0; i < layers; i++)
        if (stack_layer(extra)) {
            perror("marked-cost: landlock");
            return 1;
        }
    char buf[256];
    double per[5];
    for (int b = 0; b < 5; b++) {
        double t = cpu_ns();
        for (long i = 0; i < n; i++) {
            long fd = open_as(how, path);
            if (fd < 0) {
                fprintf(stderr, "marked-cost: open %s: error %ld\n", path, -fd);
                return 1;
            }
            if (do_read && read(fd, buf, sizeof buf) < 0)
                return 1;
            close(fd);
        }
        per[b] = (cpu_ns() - t) / n;
    }
    qsort(per, 5, sizeof per[0], by_value);
    printf("%.0f\n", per[2]);
    return 0;
}
