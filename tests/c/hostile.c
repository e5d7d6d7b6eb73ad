/* Every serviced syscall against hostile arguments (tests/security/hostile.rs).
 *
 * Usage: hostile DIR        one line per case, "name: result" (the return
 *                           value, or -ERRNONAME), run in the scratch DIR
 *        hostile race DIR   threads change guest memory under serviced calls;
 *                           prints one line per call: every result was success
 *                           or an expected errno, and every call came back.
 *
 * Calls go through syscall(2), so libc adds nothing. Nothing printed depends
 * on addresses, pids, inode numbers or fd numbers. Every call either fails
 * before acting or acts only inside DIR; network calls go to 127.0.0.1 only
 * (and the test runs both sides in a fresh network namespace anyway).
 *
 * The families of cases are in hostile_files.h, hostile_sockets.h and
 * hostile_messages.h, the race mode in hostile_race.h, each included below
 * where its functions belong (one program, built from this file alone). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "guest.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#define KERNEL ((void *)0xffff800000000000UL)
#define PG 4096
#define ALL_BITS (~0UL)
#define HIGH_BITS 0xdead000000000000UL

static char *none_page;  /* PROT_NONE */
static char *edge;       /* last bytes of a mapped page, next page unmapped */
static char *page_full;  /* a whole page of 'a', no NUL, next page unmapped */
static char long_path[PATH_MAX + 2];
static char long_name[NAME_MAX + 8];
static int closed_fd, pipe_fd, opath_fd, dir_fd;

static void show(const char *name, long r, int e) {
    if (r < 0)
        printf("%s: -%s\n", name, strerrorname_np(e));
    else
        printf("%s: %ld\n", name, r);
    fflush(stdout);
}

#define R(name, expr)                                                          \
    do {                                                                       \
        memset(edge, 'a', 8); /* earlier partial writes are not compared */    \
        errno = 0;                                                             \
        long r_ = (long)(expr);                                                \
        show(name, r_, errno);                                                 \
    } while (0)

/* A call that returns an fd: print "fd" (numbers may differ), then close it. */
#define RFD(name, expr)                                                        \
    do {                                                                       \
        memset(edge, 'a', 8);                                                  \
        errno = 0;                                                             \
        long r_ = (long)(expr);                                                \
        if (r_ >= 0) {                                                         \
            printf("%s: fd\n", name);                                          \
            fflush(stdout);                                                    \
            close((int)r_);                                                    \
        } else                                                                 \
            show(name, r_, errno);                                             \
    } while (0)

struct ptr { const char *label; const void *p; };

/* Hostile path strings. */
static struct ptr paths[9];
#define NPATHS 9
/* Hostile pointers to memory the kernel would read or write. */
static struct ptr bufs[5];
#define NBUFS 5
/* Hostile directory fds, used with the relative path "f". */
struct fdv { const char *label; long fd; };
static struct fdv dirfds[7];
#define NDIRFDS 7
/* Hostile fds where a socket or a file is wanted. */
static struct fdv fds[5];
#define NFDS 5

/* One case per value of a hostile set: DECL names the value for EXPR. */
#define FOR_SET(set, n, decl, field, call, arg, expr)                          \
    for (int i_ = 0; i_ < (n); i_++) {                                         \
        decl set[i_].field;                                                    \
        char nm_[160];                                                         \
        snprintf(nm_, sizeof nm_, "%s %s=%s", call, arg, set[i_].label);       \
        R(nm_, expr);                                                          \
    }
#define FOR_PATHS(call, expr) FOR_SET(paths, NPATHS, const char *P =, p, call, "path", expr)
#define FOR_BUFS(call, arg, expr) FOR_SET(bufs, NBUFS, void *B = (void *), p, call, arg, expr)
#define FOR_DIRFDS(call, expr) FOR_SET(dirfds, NDIRFDS, long D =, fd, call, "dirfd", expr)
#define FOR_FDS(call, expr) FOR_SET(fds, NFDS, long F =, fd, call, "fd", expr)

static void die(const char *what) {
    perror(what);
    exit(2);
}

static void setup_memory(void) {
    none_page = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *two = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *two2 = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (none_page == MAP_FAILED || two == MAP_FAILED || two2 == MAP_FAILED)
        die("mmap");
    munmap(two + PG, PG);
    munmap(two2 + PG, PG);
    memset(two, 'a', PG);
    memset(two2, 'a', PG);
    edge = two + PG - 8; /* 8 readable bytes, then a fault */
    page_full = two2;
    memset(long_path, 'a', PATH_MAX + 1);
    strcpy(long_name, "d/");
    memset(long_name + 2, 'x', NAME_MAX + 1);

    struct ptr p[NPATHS] = {
        {"null", NULL}, {"one", (void *)1}, {"prot_none", none_page},
        {"no_nul_to_unmapped", edge}, {"page_no_nul", page_full},
        {"kernel", KERNEL}, {"empty", ""}, {"path_max_plus_1", long_path},
        {"name_max_plus_1", long_name},
    };
    memcpy(paths, p, sizeof p);
    struct ptr b[NBUFS] = {
        {"null", NULL}, {"one", (void *)1}, {"prot_none", none_page},
        {"kernel", KERNEL}, {"straddling_unmapped", edge},
    };
    memcpy(bufs, b, sizeof b);
}

static void setup_files(void) {
    int f = open("f", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (f < 0 || write(f, "hello\n", 6) != 6)
        die("f");
    close(f);
    if (mkdir("d", 0755) < 0 || symlink("f", "l") < 0 || symlink("loop", "loop") < 0)
        die("fixtures");
    if (setxattr("f", "user.a", "1", 1, 0) < 0)
        printf("# no user xattrs here\n");
    closed_fd = open("f", O_RDONLY);
    close(closed_fd);
    int p[2];
    if (pipe(p) < 0)
        die("pipe");
    pipe_fd = p[0];
    opath_fd = open("f", O_PATH);
    dir_fd = open("d", O_RDONLY | O_DIRECTORY);
    if (opath_fd < 0 || dir_fd < 0)
        die("fds");
    struct fdv d[NDIRFDS] = {
        {"minus1", -1}, {"huge", 1000000}, {"closed", closed_fd},
        {"pipe", pipe_fd}, {"opath_file", opath_fd}, {"minus101", -101},
        {"high_bits_fdcwd", (long)(0x100000000L | (unsigned)AT_FDCWD)},
    };
    memcpy(dirfds, d, sizeof d);
    struct fdv s[NFDS] = {
        {"minus1", -1}, {"huge", 1000000}, {"closed", closed_fd},
        {"pipe", pipe_fd}, {"opath", opath_fd},
    };
    memcpy(fds, s, sizeof s);
}

/* Put the fixtures back after a family whose cases may have moved them. */
static void restore(void) {
    rename("r1", "f");
    int f = open("f", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (f >= 0) {
        write(f, "hello\n", 6);
        close(f);
    }
    chmod("f", 0644);
    rmdir("r1");
    mkdir("d", 0755);
    symlink("f", "l");
    setxattr("f", "user.a", "1", 1, 0);
}

#include "hostile_files.h"

/* ---- lseek, sysinfo, sched_getaffinity ---------------------------------- */

static void t_misc(void) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    FOR_FDS("lseek rewind", syscall(SYS_lseek, F, 0, SEEK_SET));
    R("lseek rewind fd=socket", syscall(SYS_lseek, s, 0, SEEK_SET));
    R("lseek rewind fd=dir", syscall(SYS_lseek, dir_fd, 0, SEEK_SET));
    R("lseek rewind fd=high_bits", syscall(SYS_lseek, HIGH_BITS | (unsigned)dir_fd, 0, SEEK_SET));
    int pm = open("/proc/self/meminfo", O_RDONLY);
    R("lseek rewind fd=proc_meminfo", syscall(SYS_lseek, pm, 0, SEEK_SET));
    close(pm);
    close(s);

    FOR_BUFS("sysinfo", "info", syscall(SYS_sysinfo, B));
    char *mis = malloc(sizeof(struct sysinfo) + 8);
    R("sysinfo info=misaligned", syscall(SYS_sysinfo, mis + 1) < 0 ? -1 : 0);
    free(mis);
    char *tight = edge + 8 - sizeof(struct sysinfo) + 4; /* last 4 bytes unmapped */
    R("sysinfo info=last_bytes_unmapped", syscall(SYS_sysinfo, tight));

    unsigned long mask[64];
    FOR_BUFS("sched_getaffinity", "mask", syscall(SYS_sched_getaffinity, 0, 8, B));
    R("sched_getaffinity len=0", syscall(SYS_sched_getaffinity, 0, 0, mask));
    R("sched_getaffinity len=7", syscall(SYS_sched_getaffinity, 0, 7, mask));
    R("sched_getaffinity len=huge", syscall(SYS_sched_getaffinity, 0, SIZE_MAX, mask));
    R("sched_getaffinity len=huge_aligned", syscall(SYS_sched_getaffinity, 0, 1UL << 40, mask));
    R("sched_getaffinity len=int_max_aligned", syscall(SYS_sched_getaffinity, 0, 0x7ffffff8UL, mask));
    R("sched_getaffinity len=minus8", syscall(SYS_sched_getaffinity, 0, -8L, mask));
    R("sched_getaffinity pid=minus1", syscall(SYS_sched_getaffinity, -1, 8, mask));
    R("sched_getaffinity pid=huge", syscall(SYS_sched_getaffinity, 0x3fffffff, 8, mask));
    R("sched_getaffinity pid=high_bits_self", syscall(SYS_sched_getaffinity, HIGH_BITS, 8, mask));
    R("sched_getaffinity mask=straddling_unmapped_len16",
      syscall(SYS_sched_getaffinity, 0, 16, edge));
}

/* ---- calls the supervisor answers: clocks, NUMA, task stats, sync, ioctl - */

static void t_answered(void) {
    /* Values that differ between runs (times, pids) are shown as 0. */
    FOR_BUFS("time", "tloc", syscall(SYS_time, B) < 0 ? -1 : 0);
    FOR_BUFS("gettimeofday", "tv", syscall(SYS_gettimeofday, B, NULL));
    FOR_BUFS("gettimeofday", "tz", syscall(SYS_gettimeofday, NULL, B));
    FOR_BUFS("clock_getres", "res", syscall(SYS_clock_getres, CLOCK_MONOTONIC, B));
    struct timespec ts;
    R("clock_getres clock=1000", syscall(SYS_clock_getres, 1000, &ts));
    R("clock_getres clock=high_bits_monotonic",
      syscall(SYS_clock_getres, HIGH_BITS | CLOCK_MONOTONIC, &ts));
    R("clock_getres clock=process_cputime", syscall(SYS_clock_getres, CLOCK_PROCESS_CPUTIME_ID, &ts));
    R("clock_getres clock=self_sched", syscall(SYS_clock_getres, (long)((~0L << 3) | 2), &ts));
    R("clock_getres clock=pid_huge_sched",
      syscall(SYS_clock_getres, (long)((~0x3fffffL) << 3 | 2), &ts));
    R("clock_getres clock=fd0", syscall(SYS_clock_getres, (long)(int)((~0) << 3 | 3), &ts));
    long policies[] = {0, 1, 2, 3, 5, 6, 4, 7, -1, (long)(HIGH_BITS | 1)};
    for (unsigned i = 0; i < sizeof policies / sizeof *policies; i++) {
        char nm[96];
        snprintf(nm, sizeof nm, "sched_get_priority_max policy=%ld", policies[i] & 0xffffffff);
        R(nm, syscall(SYS_sched_get_priority_max, policies[i]));
        snprintf(nm, sizeof nm, "sched_get_priority_min policy=%ld", policies[i] & 0xffffffff);
        R(nm, syscall(SYS_sched_get_priority_min, policies[i]));
    }

    /* A one-node machine, natively and answered. */
    FOR_BUFS("get_mempolicy", "mode", syscall(SYS_get_mempolicy, B, NULL, 0, NULL, 0));
    FOR_BUFS("get_mempolicy", "nodemask", syscall(SYS_get_mempolicy, NULL, B, 64, NULL, 0));
    unsigned long nodes[2] = {1, 0};
    int mode;
    R("get_mempolicy flags=99", syscall(SYS_get_mempolicy, &mode, NULL, 0, NULL, 99));
    R("get_mempolicy flags=node", syscall(SYS_get_mempolicy, &mode, NULL, 0, NULL, 1));
    R("get_mempolicy flags=mems_allowed", syscall(SYS_get_mempolicy, &mode, nodes, 128, NULL, 4));
    R("get_mempolicy flags=mems_allowed_node", syscall(SYS_get_mempolicy, &mode, nodes, 128, NULL, 5));
    R("get_mempolicy maxnode=0", syscall(SYS_get_mempolicy, &mode, nodes, 0, NULL, 0));
    R("get_mempolicy maxnode=huge", syscall(SYS_get_mempolicy, &mode, nodes, 1UL << 20, NULL, 0));
    FOR_BUFS("set_mempolicy", "nodemask", syscall(SYS_set_mempolicy, 2, B, 64));
    R("set_mempolicy mode=99", syscall(SYS_set_mempolicy, 99, nodes, 64));
    R("set_mempolicy mode=bind_node0", syscall(SYS_set_mempolicy, 2, nodes, 64));
    R("set_mempolicy mode=default_node0", syscall(SYS_set_mempolicy, 0, nodes, 64));
    R("set_mempolicy mode=preferred_empty", syscall(SYS_set_mempolicy, 1, NULL, 0));
    R("set_mempolicy mode=local", syscall(SYS_set_mempolicy, 4, NULL, 0));
    R("set_mempolicy maxnode=huge", syscall(SYS_set_mempolicy, 2, nodes, 1UL << 20));
    unsigned long node1 = 2;
    R("set_mempolicy mode=interleave_node1", syscall(SYS_set_mempolicy, 3, &node1, 64));
    R("set_mempolicy mode=default", syscall(SYS_set_mempolicy, 0, NULL, 0));
    char *pg = page_full;
    R("mbind start=misaligned", syscall(SYS_mbind, pg + 1, PG, 2, nodes, 64, 0));
    R("mbind flags=99", syscall(SYS_mbind, pg, PG, 2, nodes, 64, 99));
    R("mbind mode=99", syscall(SYS_mbind, pg, PG, 99, nodes, 64, 0));
    R("mbind len=0", syscall(SYS_mbind, pg, 0, 2, NULL, 0, 0));
    R("mbind mode=bind_node0", syscall(SYS_mbind, pg, PG, 2, nodes, 64, 0));
    R("mbind mode=default", syscall(SYS_mbind, pg, PG, 0, NULL, 0, 0));
    FOR_BUFS("mbind", "nodemask", syscall(SYS_mbind, pg, PG, 2, B, 64, 0));
    R("munlock page", syscall(SYS_munlock, pg, PG));
    R("munlockall", syscall(SYS_munlockall));
    R("sync", syscall(SYS_sync));

    /* A task's stat: pids differ, so a match with the caller's own is 1. */
    pid_t self = getpid();
    R("getpgid pid=0_is_getpgrp", syscall(SYS_getpgid, 0) == getpgrp());
    R("getpgid pid=self_is_getpgrp", syscall(SYS_getpgid, self) == getpgrp());
    R("getpgid pid=high_bits_is_getpgrp", syscall(SYS_getpgid, HIGH_BITS) == getpgrp());
    R("getsid pid=0_is_self", syscall(SYS_getsid, 0) == syscall(SYS_getsid, self));
    long pids[] = {-1, 0x3fffff00, (long)(int)0x80000000};
    for (unsigned i = 0; i < sizeof pids / sizeof *pids; i++) {
        char nm[96];
        struct sched_param sp;
        snprintf(nm, sizeof nm, "getpgid pid=%ld", pids[i]);
        R(nm, syscall(SYS_getpgid, pids[i]));
        snprintf(nm, sizeof nm, "getsid pid=%ld", pids[i]);
        R(nm, syscall(SYS_getsid, pids[i]));
        snprintf(nm, sizeof nm, "sched_getscheduler pid=%ld", pids[i]);
        R(nm, syscall(SYS_sched_getscheduler, pids[i]));
        snprintf(nm, sizeof nm, "sched_getparam pid=%ld", pids[i]);
        R(nm, syscall(SYS_sched_getparam, pids[i], &sp));
    }
    R("sched_getscheduler pid=0", syscall(SYS_sched_getscheduler, 0));
    R("sched_getscheduler pid=self", syscall(SYS_sched_getscheduler, self));
    FOR_BUFS("sched_getparam", "param", syscall(SYS_sched_getparam, 0, B));
    FOR_BUFS("times", "buf", syscall(SYS_times, B) == -1 ? -1 : 0);

    /* ioctl requests off the allowlist: EBADF first, then ENOTTY. */
    FOR_FDS("ioctl request=unknown", syscall(SYS_ioctl, F, 0x7f00beefUL, 0));
    R("ioctl request=unknown fd=dir", syscall(SYS_ioctl, dir_fd, 0x7f00beefUL, 0));
    R("ioctl request=unknown_high_bits fd=dir",
      syscall(SYS_ioctl, dir_fd, HIGH_BITS | 0x7f00beefUL, 0));
}

#include "hostile_sockets.h"

#include "hostile_messages.h"

/* ---- two bad arguments: which one the kernel reports ------------------ */

static void t_order(void) {
    struct timespec ts[2] = {{1, 0}, {2, 0}};
    char buf[64];
    R("setxattr order path=missing name=null", syscall(SYS_setxattr, "nosuch", NULL, "v", 1, 0));
    R("setxattr order path=missing name=empty", syscall(SYS_setxattr, "nosuch", "", "v", 1, 0));
    R("setxattr order path=missing value=one", syscall(SYS_setxattr, "nosuch", "user.b", (void *)1, 16, 0));
    R("setxattr order path=missing size=huge", syscall(SYS_setxattr, "nosuch", "user.b", "v", SIZE_MAX, 0));
    R("setxattr order path=missing flags=all_bits", syscall(SYS_setxattr, "nosuch", "user.b", "v", 1, ALL_BITS));
    R("setxattr order path=null name=null", syscall(SYS_setxattr, NULL, NULL, "v", 1, 0));
    R("lsetxattr order path=missing name=null", syscall(SYS_lsetxattr, "nosuch", NULL, "v", 1, 0));
    R("lsetxattr order path=missing flags=all_bits", syscall(SYS_lsetxattr, "nosuch", "user.b", "v", 1, ALL_BITS));
    R("getxattr order path=missing name=null", syscall(SYS_getxattr, "nosuch", NULL, buf, 64));
    R("getxattr order path=missing name=empty", syscall(SYS_getxattr, "nosuch", "", buf, 64));
    R("getxattr order path=missing value=one", syscall(SYS_getxattr, "nosuch", "user.a", (void *)1, 64));
    R("lgetxattr order path=missing name=null", syscall(SYS_lgetxattr, "nosuch", NULL, buf, 64));
    R("listxattr order path=missing list=one", syscall(SYS_listxattr, "nosuch", (void *)1, 64));
    R("llistxattr order path=missing list=one", syscall(SYS_llistxattr, "nosuch", (void *)1, 64));
    R("removexattr order path=missing name=null", syscall(SYS_removexattr, "nosuch", NULL));
    R("removexattr order path=missing name=empty", syscall(SYS_removexattr, "nosuch", ""));
    R("lremovexattr order path=missing name=null", syscall(SYS_lremovexattr, "nosuch", NULL));
    R("link order old=missing new=null", syscall(SYS_link, "nosuch", NULL));
    R("link order old=null new=missing_dir", syscall(SYS_link, NULL, "nodir/x"));
    R("linkat order flags=all_bits old=null", syscall(SYS_linkat, AT_FDCWD, NULL, AT_FDCWD, "k", ALL_BITS));
    R("linkat order olddir=minus1 new=null", syscall(SYS_linkat, -1, "f", AT_FDCWD, NULL, 0));
    R("rename order old=missing new=null", syscall(SYS_rename, "nosuch", NULL));
    R("rename order old=null new=missing_dir", syscall(SYS_rename, NULL, "nodir/x"));
    R("renameat2 order flags=all_bits old=null", syscall(SYS_renameat2, AT_FDCWD, NULL, AT_FDCWD, "r", ALL_BITS));
    R("renameat order olddir=minus1 new=null", syscall(SYS_renameat, -1, "f", AT_FDCWD, NULL));
    R("symlink order target=null name=missing_dir", syscall(SYS_symlink, NULL, "nodir/x"));
    R("symlinkat order newdir=minus1 target=null", syscall(SYS_symlinkat, NULL, -1, "x"));
    R("mkdirat order dirfd=minus1 path=null", syscall(SYS_mkdirat, -1, NULL, 0755));
    R("mknod order mode=dir path=null", syscall(SYS_mknod, NULL, S_IFDIR | 0600, 0));
    R("mknodat order dirfd=minus1 mode=dir", syscall(SYS_mknodat, -1, "x", S_IFDIR | 0600, 0));
    R("faccessat order dirfd=minus1 path=null", syscall(SYS_faccessat, -1, NULL, R_OK));
    R("faccessat order mode=all_bits path=null", syscall(SYS_faccessat, AT_FDCWD, NULL, ALL_BITS));
    R("faccessat2 order flags=all_bits path=null", syscall(SYS_faccessat2, AT_FDCWD, NULL, R_OK, ALL_BITS));
    R("access order mode=all_bits path=missing", syscall(SYS_access, "nosuch", ALL_BITS));
    R("openat order dirfd=minus1 path=null", syscall(SYS_openat, -1, NULL, O_RDONLY));
    R("openat2 order how=one path=null", syscall(SYS_openat2, AT_FDCWD, NULL, (void *)1, 24));
    R("openat2 order size=short path=null", syscall(SYS_openat2, AT_FDCWD, NULL, ts, 8));
    R("readlink order size=0 path=null", syscall(SYS_readlink, NULL, buf, 0));
    R("readlinkat order dirfd=minus1 path=null", syscall(SYS_readlinkat, -1, NULL, buf, 64));
    R("readlinkat order size=0 dirfd=minus1", syscall(SYS_readlinkat, -1, "l", buf, 0));
    R("readlink order path=missing buf=one", syscall(SYS_readlink, "nosuch", (void *)1, 64));
    R("unlinkat order flags=all_bits path=null", syscall(SYS_unlinkat, AT_FDCWD, NULL, ALL_BITS));
    R("unlinkat order dirfd=minus1 path=null", syscall(SYS_unlinkat, -1, NULL, AT_REMOVEDIR));
    R("rmdir order path=missing_dir_component", syscall(SYS_rmdir, "nodir/x"));
    R("fchmodat2 order flags=all_bits path=null", syscall(SYS_fchmodat2, AT_FDCWD, NULL, 0644, ALL_BITS));
    R("fchownat order flags=all_bits path=null", syscall(SYS_fchownat, AT_FDCWD, NULL, -1, -1, ALL_BITS));
    R("fchownat order dirfd=minus1 path=null", syscall(SYS_fchownat, -1, NULL, -1, -1, 0));
    R("utimensat order flags=all_bits times=one", syscall(SYS_utimensat, AT_FDCWD, "f", (void *)1, ALL_BITS));
    R("utimensat order times=one path=missing", syscall(SYS_utimensat, AT_FDCWD, "nosuch", (void *)1, 0));
    R("utimensat order dirfd=minus1 times=one", syscall(SYS_utimensat, -1, "f", (void *)1, 0));
    R("utimes order times=one path=missing", syscall(SYS_utimes, "nosuch", (void *)1));
    R("utime order times=one path=missing", syscall(SYS_utime, "nosuch", (void *)1));
    R("futimesat order dirfd=minus1 times=one", syscall(SYS_futimesat, -1, "f", (void *)1));
    R("truncate order length=minus1 path=missing", syscall(SYS_truncate, "nosuch", -1L));
    R("truncate order length=minus1 path=null", syscall(SYS_truncate, NULL, -1L));
    R("statfs order path=missing buf=one", syscall(SYS_statfs, "nosuch", (void *)1));
    R("inotify_add_watch order fd=minus1 path=null", syscall(SYS_inotify_add_watch, -1, NULL, IN_MODIFY));
    R("inotify_add_watch order mask=0 fd=minus1", syscall(SYS_inotify_add_watch, -1, "f", 0));
    R("chmod order path=null mode=all_bits", syscall(SYS_chmod, NULL, ALL_BITS));
    R("chown order path=missing ids=minus1", syscall(SYS_chown, "nosuch", -1, -1));
    R("lchown order path=null ids=minus1", syscall(SYS_lchown, NULL, -1, -1));
    R("fchmodat order dirfd=pipe path=null", syscall(SYS_fchmodat, pipe_fd, NULL, 0644));
    R("mkdir order path=missing_dir_component", syscall(SYS_mkdir, "nodir/x", 0755));
    R("open order path=null flags=tmpfile", syscall(SYS_open, NULL, O_RDONLY | 0x400000, 0600));
}

#include "hostile_race.h"

int main(int argc, char **argv) {
    int racing = argc == 3 && strcmp(argv[1], "race") == 0;
    if (argc != 2 && !racing) {
        fprintf(stderr, "usage: hostile [race] DIR\n");
        return 2;
    }
    if (chdir(argv[argc - 1]) < 0)
        die("chdir");
    signal(SIGPIPE, SIG_IGN);
    umask(022);
    setup_memory();
    setup_files();
    if (racing) {
        race();
        return 0;
    }
    t_open();
    restore();
    t_openat();
    restore();
    t_openat2();
    restore();
    t_open_served();
    restore();
    t_access();
    restore();
    t_readlink();
    restore();
    t_mk();
    restore();
    t_rm();
    restore();
    t_rename();
    restore();
    t_link();
    restore();
    t_chmod();
    restore();
    t_chown();
    restore();
    t_times();
    restore();
    t_truncate_statfs();
    restore();
    t_inotify();
    restore();
    t_xattr();
    restore();
    t_misc();
    t_answered();
    restore();
    t_socket();
    restore();
    t_bind_connect();
    restore();
    t_names_opts();
    restore();
    t_accept_listen();
    restore();
    t_sendto_recvfrom();
    restore();
    t_msg();
    restore();
    t_mmsg();
    t_smmsg();
    restore();
    t_order();
    restore();
    printf("done\n");
    return 0;
}
