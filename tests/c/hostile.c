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
 * (and the test runs both sides in a fresh network namespace anyway). */
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

/* ---- open, openat, openat2 ---------------------------------------------- */

static void t_open(void) {
    FOR_PATHS("open", syscall(SYS_open, P, O_RDONLY));
    RFD("open loop", syscall(SYS_open, "loop", O_RDONLY));
    RFD("open flags=unknown_bits", syscall(SYS_open, "f", O_RDONLY | 0x80000000));
    RFD("open flags=high_bits", syscall(SYS_open, "f", HIGH_BITS | O_RDONLY));
    RFD("open flags=all_but_write_path_dir",
        syscall(SYS_open, "new_all", (long)(unsigned)~(O_ACCMODE | O_PATH | O_DIRECTORY), 0644));
    RFD("open creat mode=all_bits", syscall(SYS_open, "new_mode", O_RDONLY | O_CREAT, ALL_BITS));
    RFD("open tmpfile_without_directory", syscall(SYS_open, "d", O_RDONLY | 0x400000, 0600));
}

static void t_openat(void) {
    FOR_PATHS("openat", syscall(SYS_openat, AT_FDCWD, P, O_RDONLY));
    for (int i = 0; i < NDIRFDS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "openat dirfd=%s", dirfds[i].label);
        RFD(nm, syscall(SYS_openat, dirfds[i].fd, "f", O_RDONLY));
    }
    RFD("openat flags=unknown_bits", syscall(SYS_openat, AT_FDCWD, "f", O_RDONLY | 0x80000000));
    RFD("openat flags=high_bits", syscall(SYS_openat, AT_FDCWD, "f", HIGH_BITS));
    RFD("openat empty_path_with_dirfd", syscall(SYS_openat, dir_fd, "", O_RDONLY));
}

static void t_openat2(void) {
    struct open_how how = {.flags = O_RDONLY};
    FOR_PATHS("openat2", syscall(SYS_openat2, AT_FDCWD, P, &how, sizeof how));
    FOR_BUFS("openat2", "how", syscall(SYS_openat2, AT_FDCWD, "f", B, sizeof how));
    RFD("openat2 size=0", syscall(SYS_openat2, AT_FDCWD, "f", &how, 0));
    RFD("openat2 size=short", syscall(SYS_openat2, AT_FDCWD, "f", &how, 8));
    RFD("openat2 size=huge", syscall(SYS_openat2, AT_FDCWD, "f", &how, SIZE_MAX));
    RFD("openat2 size=int_max", syscall(SYS_openat2, AT_FDCWD, "f", &how, (size_t)INT_MAX));
    char *big = calloc(1, 2 * PG);
    memcpy(big, &how, sizeof how);
    RFD("openat2 size=page_zero_tail", syscall(SYS_openat2, AT_FDCWD, "f", big, PG));
    big[100] = 1;
    RFD("openat2 size=page_nonzero_tail", syscall(SYS_openat2, AT_FDCWD, "f", big, PG));
    RFD("openat2 size=too_big", syscall(SYS_openat2, AT_FDCWD, "f", big, 2 * PG));
    char *mis = big + 1001;
    memcpy(mis, &how, sizeof how);
    RFD("openat2 how=misaligned", syscall(SYS_openat2, AT_FDCWD, "f", mis, sizeof how));
    free(big);
    struct open_how h2 = {.flags = ALL_BITS};
    RFD("openat2 flags=all_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h2, sizeof h2));
    struct open_how h3 = {.flags = O_RDONLY, .resolve = ALL_BITS};
    RFD("openat2 resolve=all_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h3, sizeof h3));
    struct open_how h4 = {.flags = O_RDONLY, .mode = 0644};
    RFD("openat2 mode_without_creat", syscall(SYS_openat2, AT_FDCWD, "f", &h4, sizeof h4));
    struct open_how h5 = {.flags = O_RDONLY | O_CREAT, .mode = ALL_BITS};
    RFD("openat2 mode=all_bits", syscall(SYS_openat2, AT_FDCWD, "n2", &h5, sizeof h5));
    struct open_how h6 = {.flags = HIGH_BITS};
    RFD("openat2 flags=high_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h6, sizeof h6));
    for (int i = 0; i < NDIRFDS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "openat2 dirfd=%s", dirfds[i].label);
        RFD(nm, syscall(SYS_openat2, dirfds[i].fd, "f", &how, sizeof how));
    }
}

/* Files the sandbox may serve itself (its /proc), opened for reading with
 * hostile flags and resolutions. */
static void t_open_served(void) {
    const char *files[] = {"/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/self/status",
                           "/proc/uptime", "/proc/loadavg"};
    long flags[] = {O_RDONLY | 0x80000000, HIGH_BITS, O_RDONLY | O_NOFOLLOW, O_RDONLY | O_DIRECT,
                    O_RDONLY | O_NOATIME, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT | O_EXCL};
    const char *fl[] = {"unknown_bits", "high_bits", "nofollow", "direct", "noatime", "trunc",
                        "creat_excl"};
    char nm[160];
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < 7; i++) {
            snprintf(nm, sizeof nm, "openat %s flags=%s", files[k], fl[i]);
            RFD(nm, syscall(SYS_openat, AT_FDCWD, files[k], flags[i], 0600));
        }
        unsigned long long res[] = {RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS,
                                    RESOLVE_NO_XDEV, RESOLVE_IN_ROOT, RESOLVE_CACHED};
        const char *rl[] = {"no_symlinks", "beneath", "no_magiclinks", "no_xdev", "in_root",
                            "cached"};
        for (int i = 0; i < 6; i++) {
            struct open_how how = {.flags = O_RDONLY, .resolve = res[i]};
            snprintf(nm, sizeof nm, "openat2 %s resolve=%s", files[k], rl[i]);
            RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], &how, sizeof how));
        }
        struct open_how bad = {.flags = O_RDONLY | O_CREAT, .mode = 07777 + 1};
        snprintf(nm, sizeof nm, "openat2 %s mode=out_of_range", files[k]);
        RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], &bad, sizeof bad));
        struct open_how big = {.flags = O_RDONLY};
        snprintf(nm, sizeof nm, "openat2 %s size=page_zero_tail", files[k]);
        char *pg = calloc(1, PG);
        memcpy(pg, &big, sizeof big);
        RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], pg, PG));
        free(pg);
        char sb[256], xb[64];
        snprintf(nm, sizeof nm, "statfs %s", files[k]);
        R(nm, syscall(SYS_statfs, files[k], sb));
        snprintf(nm, sizeof nm, "statfs %s buf=one", files[k]);
        R(nm, syscall(SYS_statfs, files[k], (void *)1));
        snprintf(nm, sizeof nm, "getxattr %s user", files[k]);
        R(nm, syscall(SYS_getxattr, files[k], "user.x", xb, sizeof xb));
        snprintf(nm, sizeof nm, "listxattr %s buf=one", files[k]);
        R(nm, syscall(SYS_listxattr, files[k], (void *)1, 64));
        snprintf(nm, sizeof nm, "faccessat2 %s mode=all_bits", files[k]);
        R(nm, syscall(SYS_faccessat2, AT_FDCWD, files[k], ALL_BITS, 0));
        snprintf(nm, sizeof nm, "faccessat2 %s eaccess_r", files[k]);
        R(nm, syscall(SYS_faccessat2, AT_FDCWD, files[k], R_OK, AT_EACCESS));
        int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        snprintf(nm, sizeof nm, "inotify_add_watch %s", files[k]);
        R(nm, syscall(SYS_inotify_add_watch, ino, files[k], IN_MODIFY));
        snprintf(nm, sizeof nm, "inotify_add_watch %s onlydir", files[k]);
        R(nm, syscall(SYS_inotify_add_watch, ino, files[k], IN_MODIFY | IN_ONLYDIR));
        close(ino);
        int fd = open(files[k], O_RDONLY);
        char b[64];
        snprintf(nm, sizeof nm, "lseek rewind %s after_read", files[k]);
        read(fd, b, sizeof b);
        R(nm, syscall(SYS_lseek, fd, 0, SEEK_SET));
        snprintf(nm, sizeof nm, "lseek rewind %s high_bits_whence", files[k]);
        R(nm, syscall(SYS_lseek, fd, 0, HIGH_BITS | SEEK_SET));
        close(fd);
    }
}

/* ---- access, readlink ------------------------------------------------- */

static void t_access(void) {
    FOR_PATHS("access", syscall(SYS_access, P, R_OK));
    R("access mode=all_bits", syscall(SYS_access, "f", ALL_BITS));
    R("access loop", syscall(SYS_access, "loop", F_OK));
    FOR_PATHS("faccessat", syscall(SYS_faccessat, AT_FDCWD, P, R_OK));
    FOR_DIRFDS("faccessat", syscall(SYS_faccessat, D, "f", R_OK));
    R("faccessat mode=all_bits", syscall(SYS_faccessat, AT_FDCWD, "f", ALL_BITS));
    FOR_PATHS("faccessat2", syscall(SYS_faccessat2, AT_FDCWD, P, R_OK, 0));
    FOR_DIRFDS("faccessat2", syscall(SYS_faccessat2, D, "f", R_OK, 0));
    R("faccessat2 flags=all_bits", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, ALL_BITS));
    R("faccessat2 flags=unknown", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, 0x80000));
    R("faccessat2 empty_path_flag", syscall(SYS_faccessat2, opath_fd, "", R_OK, AT_EMPTY_PATH));
    R("faccessat2 empty_path_flag_null",
      syscall(SYS_faccessat2, opath_fd, NULL, R_OK, AT_EMPTY_PATH));
    R("faccessat2 empty_path_no_flag", syscall(SYS_faccessat2, opath_fd, "", R_OK, 0));
}

static void t_readlink(void) {
    char buf[64];
    FOR_PATHS("readlink", syscall(SYS_readlink, P, buf, sizeof buf));
    FOR_BUFS("readlink", "buf", syscall(SYS_readlink, "l", B, 64));
    R("readlink size=0", syscall(SYS_readlink, "l", buf, 0));
    R("readlink size=minus1", syscall(SYS_readlink, "l", buf, -1));
    R("readlink size=int_max", syscall(SYS_readlink, "l", buf, INT_MAX));
    R("readlink size=huge", syscall(SYS_readlink, "l", buf, SIZE_MAX));
    R("readlink size=high_bits", syscall(SYS_readlink, "l", buf, HIGH_BITS | 64));
    R("readlink size=short", syscall(SYS_readlink, "l", buf, 0));
    R("readlink not_a_link", syscall(SYS_readlink, "f", buf, sizeof buf));
    FOR_PATHS("readlinkat", syscall(SYS_readlinkat, AT_FDCWD, P, buf, sizeof buf));
    FOR_DIRFDS("readlinkat", syscall(SYS_readlinkat, D, "l", buf, sizeof buf));
    FOR_BUFS("readlinkat", "buf", syscall(SYS_readlinkat, AT_FDCWD, "l", B, 64));
    R("readlinkat size=minus1", syscall(SYS_readlinkat, AT_FDCWD, "l", buf, -1));
    R("readlinkat size=huge", syscall(SYS_readlinkat, AT_FDCWD, "l", buf, SIZE_MAX));
    R("readlinkat empty_path_of_opath_link", syscall(SYS_readlinkat, opath_fd, "", buf, 64));
    /* Links the sandbox may answer itself (its /proc): only errors and
     * lengths that do not depend on the pid or the host are printed. */
    const char *proc_links[] = {"/proc/self", "/proc/self/exe", "/proc/self/cwd",
                                "/proc/thread-self", "/proc/self/fd/0"};
    /* /proc/self and /proc/thread-self name pids, whose length differs:
     * no buffer that fits some lengths and not others. */
    int pid_named[] = {1, 0, 0, 1, 0};
    for (int k = 0; k < 5; k++) {
        char nm[160];
        for (int i = 0; i < NBUFS - pid_named[k]; i++) {
            snprintf(nm, sizeof nm, "readlink %s buf=%s", proc_links[k], bufs[i].label);
            R(nm, syscall(SYS_readlink, proc_links[k], bufs[i].p, 64));
        }
        snprintf(nm, sizeof nm, "readlink %s size=0", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, 0));
        snprintf(nm, sizeof nm, "readlink %s size=minus1", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, -1));
        snprintf(nm, sizeof nm, "readlink %s size=1", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, 1));
        snprintf(nm, sizeof nm, "readlinkat %s dirfd=minus1 buf=one", proc_links[k]);
        R(nm, syscall(SYS_readlinkat, -1, proc_links[k], (void *)1, 64));
    }
}

/* ---- creating and removing names ---------------------------------------- */

static void t_mk(void) {
    FOR_PATHS("mkdir", syscall(SYS_mkdir, P, 0755));
    R("mkdir existing", syscall(SYS_mkdir, "f", 0755));
    R("mkdir mode=all_bits", syscall(SYS_mkdir, "m_all", ALL_BITS));
    FOR_PATHS("mkdirat", syscall(SYS_mkdirat, AT_FDCWD, P, 0755));
    FOR_DIRFDS("mkdirat", syscall(SYS_mkdirat, D, "f", 0755));
    R("mkdirat mode=all_bits", syscall(SYS_mkdirat, AT_FDCWD, "ma_all", ALL_BITS));
    FOR_PATHS("mknod", syscall(SYS_mknod, P, S_IFIFO | 0644, 0));
    R("mknod mode=all_bits", syscall(SYS_mknod, "n_all", ALL_BITS, 0));
    R("mknod fifo dev=huge", syscall(SYS_mknod, "n_fifo", S_IFIFO | 0600, ALL_BITS));
    R("mknod type=dir", syscall(SYS_mknod, "n_dir", S_IFDIR | 0600, 0));
    R("mknod type=unknown", syscall(SYS_mknod, "n_unk", 0150000 | 0600, 0));
    FOR_PATHS("mknodat", syscall(SYS_mknodat, AT_FDCWD, P, S_IFIFO | 0644, 0));
    FOR_DIRFDS("mknodat", syscall(SYS_mknodat, D, "f", S_IFIFO | 0644, 0));
    R("mknodat mode=all_bits", syscall(SYS_mknodat, AT_FDCWD, "na_all", ALL_BITS, 0));
    R("mknodat mode=high_bits", syscall(SYS_mknodat, AT_FDCWD, "na_hi", HIGH_BITS | S_IFIFO, 0));
    /* Device nodes (serviced): every case fails before the capability
     * check, natively as supervised, so root and tester agree. */
    FOR_PATHS("mknod chr", syscall(SYS_mknod, P, S_IFCHR | 0600, 0x103));
    R("mknod chr existing", syscall(SYS_mknod, "f", S_IFCHR | 0600, 0x103));
    R("mknod blk missing_parent", syscall(SYS_mknod, "nope/b", S_IFBLK | 0600, 0x700));
    R("mknod blk through_file", syscall(SYS_mknod, "f/b", S_IFBLK | 0600, 0x700));
    FOR_PATHS("mknodat blk", syscall(SYS_mknodat, AT_FDCWD, P, S_IFBLK | 0600, 0x700));
    FOR_DIRFDS("mknodat chr", syscall(SYS_mknodat, D, "f", S_IFCHR | 0600, 0x103));
    R("mknodat chr high_bits existing",
      syscall(SYS_mknodat, AT_FDCWD, "f", HIGH_BITS | S_IFCHR | 0600, ALL_BITS));
}

static void t_rm(void) {
    FOR_PATHS("unlinkat removedir", syscall(SYS_unlinkat, AT_FDCWD, P, AT_REMOVEDIR));
    FOR_DIRFDS("unlinkat removedir", syscall(SYS_unlinkat, D, "f", AT_REMOVEDIR));
    R("unlinkat flags=all_bits", syscall(SYS_unlinkat, AT_FDCWD, "d", ALL_BITS));
    R("unlinkat flags=removedir_unknown", syscall(SYS_unlinkat, AT_FDCWD, "d", AT_REMOVEDIR | 0x1));
    R("unlinkat removedir file", syscall(SYS_unlinkat, AT_FDCWD, "f", AT_REMOVEDIR));
    R("unlinkat removedir dot", syscall(SYS_unlinkat, AT_FDCWD, ".", AT_REMOVEDIR));
    R("unlinkat removedir symlink_to_dir", syscall(SYS_unlinkat, AT_FDCWD, "l", AT_REMOVEDIR));
    FOR_PATHS("rmdir", syscall(SYS_rmdir, P));
    R("rmdir file", syscall(SYS_rmdir, "f"));
    R("rmdir dot", syscall(SYS_rmdir, "."));
    R("rmdir dotdot", syscall(SYS_rmdir, "d/.."));
    R("rmdir loop", syscall(SYS_rmdir, "loop"));
}

static void t_rename(void) {
    FOR_PATHS("rename old", syscall(SYS_rename, P, "r1"));
    FOR_PATHS("rename new", syscall(SYS_rename, "nonexistent", P));
    R("rename dir_into_itself", syscall(SYS_rename, "d", "d/sub"));
    FOR_PATHS("renameat old", syscall(SYS_renameat, AT_FDCWD, P, AT_FDCWD, "r1"));
    FOR_PATHS("renameat new", syscall(SYS_renameat, AT_FDCWD, "nonexistent", AT_FDCWD, P));
    FOR_DIRFDS("renameat olddir", syscall(SYS_renameat, D, "f", AT_FDCWD, "r1"));
    FOR_DIRFDS("renameat newdir", syscall(SYS_renameat, AT_FDCWD, "nonexistent", D, "r1"));
    FOR_PATHS("renameat2 old", syscall(SYS_renameat2, AT_FDCWD, P, AT_FDCWD, "r1", 0));
    FOR_DIRFDS("renameat2 newdir", syscall(SYS_renameat2, AT_FDCWD, "nonexistent", D, "r1", 0));
    R("renameat2 flags=all_bits", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", ALL_BITS));
    R("renameat2 flags=unknown", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", 0x100));
    R("renameat2 exchange_noreplace",
      syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", RENAME_EXCHANGE | RENAME_NOREPLACE));
    R("renameat2 exchange_missing", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", RENAME_EXCHANGE));
}

static void t_link(void) {
    FOR_PATHS("link old", syscall(SYS_link, P, "k1"));
    FOR_PATHS("link new", syscall(SYS_link, "f", P));
    R("link dir", syscall(SYS_link, "d", "k_dir"));
    FOR_PATHS("linkat old", syscall(SYS_linkat, AT_FDCWD, P, AT_FDCWD, "k1", 0));
    FOR_DIRFDS("linkat olddir", syscall(SYS_linkat, D, "f", AT_FDCWD, "k1", 0));
    FOR_DIRFDS("linkat newdir", syscall(SYS_linkat, AT_FDCWD, "f", D, "k1", 0));
    R("linkat flags=all_bits", syscall(SYS_linkat, AT_FDCWD, "f", AT_FDCWD, "k1", ALL_BITS));
    R("linkat flags=unknown", syscall(SYS_linkat, AT_FDCWD, "f", AT_FDCWD, "k1", 0x1));
    R("linkat empty_path_no_flag", syscall(SYS_linkat, opath_fd, "", AT_FDCWD, "k1", 0));
    R("linkat empty_path_flag_null", syscall(SYS_linkat, opath_fd, NULL, AT_FDCWD, "k2", AT_EMPTY_PATH));
    FOR_PATHS("symlink target", syscall(SYS_symlink, P, "s1"));
    FOR_PATHS("symlink name", syscall(SYS_symlink, "f", P));
    R("symlink existing", syscall(SYS_symlink, "f", "l"));
    static char longest[PATH_MAX];
    memset(longest, 't', PATH_MAX - 1);
    R("symlink target=path_max_minus_1", syscall(SYS_symlink, longest, "s_long"));
    static char lbuf[PATH_MAX + 16];
    R("readlink target=path_max_minus_1", syscall(SYS_readlink, "s_long", lbuf, sizeof lbuf));
    R("readlink target=path_max_minus_1 size=10", syscall(SYS_readlink, "s_long", lbuf, 10));
    R("readlink target=path_max_minus_1 buf=no_room", syscall(SYS_readlink, "s_long", edge, 4096));
    R("open through_long_symlink", syscall(SYS_open, "s_long", O_RDONLY));
    unlink("s_long");
    FOR_PATHS("symlinkat target", syscall(SYS_symlinkat, P, AT_FDCWD, "s1"));
    FOR_DIRFDS("symlinkat newdir", syscall(SYS_symlinkat, "x", D, "f"));
}

/* ---- attributes ---------------------------------------------------------- */

static void t_chmod(void) {
    FOR_PATHS("chmod", syscall(SYS_chmod, P, 0644));
    R("chmod mode=all_bits", syscall(SYS_chmod, "f", ALL_BITS));
    R("chmod loop", syscall(SYS_chmod, "loop", 0644));
    FOR_PATHS("fchmodat", syscall(SYS_fchmodat, AT_FDCWD, P, 0644));
    FOR_DIRFDS("fchmodat", syscall(SYS_fchmodat, D, "f", 0644));
    R("fchmodat mode=high_bits", syscall(SYS_fchmodat, AT_FDCWD, "f", HIGH_BITS | 0644));
    FOR_PATHS("fchmodat2", syscall(SYS_fchmodat2, AT_FDCWD, P, 0644, 0));
    FOR_DIRFDS("fchmodat2", syscall(SYS_fchmodat2, D, "f", 0644, 0));
    R("fchmodat2 flags=all_bits", syscall(SYS_fchmodat2, AT_FDCWD, "f", 0644, ALL_BITS));
    R("fchmodat2 flags=unknown", syscall(SYS_fchmodat2, AT_FDCWD, "f", 0644, 0x2));
    R("fchmodat2 nofollow_symlink", syscall(SYS_fchmodat2, AT_FDCWD, "l", 0644, AT_SYMLINK_NOFOLLOW));
    R("fchmodat2 empty_path_flag", syscall(SYS_fchmodat2, opath_fd, "", 0644, AT_EMPTY_PATH));
    R("fchmodat2 empty_path_flag_null", syscall(SYS_fchmodat2, opath_fd, NULL, 0644, AT_EMPTY_PATH));
    R("fchmodat2 empty_path_no_flag", syscall(SYS_fchmodat2, opath_fd, "", 0644, 0));
    /* fchmod is serviced whatever the mode (no procfs mode changes). */
    FOR_FDS("fchmod", syscall(SYS_fchmod, F, 0644));
    int ffd = open("f", O_RDONLY);
    R("fchmod mode=all_bits", syscall(SYS_fchmod, ffd, ALL_BITS));
    R("fchmod mode=high_bits", syscall(SYS_fchmod, ffd, HIGH_BITS | 0644));
    R("fchmod mode=0600", syscall(SYS_fchmod, ffd, 0600));
    R("fchmod opath", syscall(SYS_fchmod, opath_fd, 0644));
    R("fchmod mode=0644", syscall(SYS_fchmod, ffd, 0644));
    close(ffd);
}

static void t_chown(void) {
    FOR_PATHS("chown", syscall(SYS_chown, P, -1, -1));
    R("chown ids=minus1", syscall(SYS_chown, "f", -1, -1));
    R("chown ids=high_bits_minus1", syscall(SYS_chown, "f", HIGH_BITS | 0xffffffffUL, HIGH_BITS | 0xffffffffUL));
    FOR_PATHS("lchown", syscall(SYS_lchown, P, -1, -1));
    R("lchown ids=minus1", syscall(SYS_lchown, "l", -1, -1));
    FOR_PATHS("fchownat", syscall(SYS_fchownat, AT_FDCWD, P, -1, -1, 0));
    FOR_DIRFDS("fchownat", syscall(SYS_fchownat, D, "f", -1, -1, 0));
    R("fchownat flags=all_bits", syscall(SYS_fchownat, AT_FDCWD, "f", -1, -1, ALL_BITS));
    R("fchownat flags=unknown", syscall(SYS_fchownat, AT_FDCWD, "f", -1, -1, 0x2));
    R("fchownat empty_path_flag", syscall(SYS_fchownat, opath_fd, "", -1, -1, AT_EMPTY_PATH));
    R("fchownat empty_path_flag_null", syscall(SYS_fchownat, opath_fd, NULL, -1, -1, AT_EMPTY_PATH));
    R("fchownat empty_path_no_flag", syscall(SYS_fchownat, opath_fd, "", -1, -1, 0));
}

static void t_times(void) {
    struct timeval tv[2] = {{1, 0}, {2, 0}};
    struct timespec ts[2] = {{1, 0}, {2, 0}};
    FOR_PATHS("utime", syscall(SYS_utime, P, NULL));
    FOR_BUFS("utime", "times", syscall(SYS_utime, "f", B));
    FOR_PATHS("utimes", syscall(SYS_utimes, P, tv));
    FOR_BUFS("utimes", "times", syscall(SYS_utimes, "f", B));
    struct timeval badtv[2] = {{1, 2000000}, {2, -1}};
    R("utimes usec=out_of_range", syscall(SYS_utimes, "f", badtv));
    FOR_PATHS("futimesat", syscall(SYS_futimesat, AT_FDCWD, P, tv));
    FOR_DIRFDS("futimesat", syscall(SYS_futimesat, D, "f", tv));
    FOR_BUFS("futimesat", "times", syscall(SYS_futimesat, AT_FDCWD, "f", B));
    FOR_PATHS("utimensat", syscall(SYS_utimensat, AT_FDCWD, P, ts, 0));
    FOR_DIRFDS("utimensat", syscall(SYS_utimensat, D, "f", ts, 0));
    /* NULL passes to the kernel (futimens): only non-NULL bad pointers here. */
    for (int i = 1; i < NBUFS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "utimensat times=%s", bufs[i].label);
        R(nm, syscall(SYS_utimensat, AT_FDCWD, "f", bufs[i].p, 0));
    }
    struct timespec badts[2] = {{1, 1000000000}, {2, -5}};
    R("utimensat nsec=out_of_range", syscall(SYS_utimensat, AT_FDCWD, "f", badts, 0));
    R("utimensat flags=all_bits", syscall(SYS_utimensat, AT_FDCWD, "f", ts, ALL_BITS));
    R("utimensat flags=unknown", syscall(SYS_utimensat, AT_FDCWD, "f", ts, 0x1));
    R("utimensat empty_path_flag", syscall(SYS_utimensat, opath_fd, "", ts, AT_EMPTY_PATH));
    R("utimensat empty_path_no_flag", syscall(SYS_utimensat, opath_fd, "", ts, 0));
    R("utimensat nofollow_link", syscall(SYS_utimensat, AT_FDCWD, "l", ts, AT_SYMLINK_NOFOLLOW));
}

static void t_truncate_statfs(void) {
    FOR_PATHS("truncate", syscall(SYS_truncate, P, 0));
    R("truncate length=minus1", syscall(SYS_truncate, "f", -1L));
    R("truncate length=huge", syscall(SYS_truncate, "f", LONG_MAX));
    R("truncate dir", syscall(SYS_truncate, "d", 0));
    R("truncate loop", syscall(SYS_truncate, "loop", 0));
    R("truncate length=6", syscall(SYS_truncate, "f", 6));
    struct statfs_buf { char b[256]; } sb;
    FOR_PATHS("statfs", syscall(SYS_statfs, P, &sb));
    FOR_BUFS("statfs", "buf", syscall(SYS_statfs, "f", B));
    char *mis = malloc(512);
    R("statfs buf=misaligned", syscall(SYS_statfs, "f", mis + 3));
    free(mis);
}

static void t_inotify(void) {
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    FOR_PATHS("inotify_add_watch", syscall(SYS_inotify_add_watch, in, P, IN_MODIFY));
    FOR_FDS("inotify_add_watch", syscall(SYS_inotify_add_watch, F, "f", IN_MODIFY));
    R("inotify_add_watch mask=0", syscall(SYS_inotify_add_watch, in, "f", 0));
    R("inotify_add_watch mask=all_bits", syscall(SYS_inotify_add_watch, in, "f", ALL_BITS));
    R("inotify_add_watch mask=mask_add_create", syscall(SYS_inotify_add_watch, in, "f", IN_MASK_ADD | IN_MASK_CREATE | IN_MODIFY));
    R("inotify_add_watch fd=dir", syscall(SYS_inotify_add_watch, dir_fd, "f", IN_MODIFY));
    R("inotify_add_watch onlydir_on_file", syscall(SYS_inotify_add_watch, in, "f", IN_ONLYDIR | IN_MODIFY));
    close(in);
}

/* ---- extended attributes ------------------------------------------------ */

static struct ptr names[8];
#define NNAMES 8

static void xattr_set(const char *call, long nr, const char *file) {
    char nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.b", "v", 1, 0));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p, "v", 1, 0));
    }
    for (int i = 1; i < NBUFS; i++) {
        snprintf(nm, sizeof nm, "%s value=%s", call, bufs[i].label);
        R(nm, syscall(nr, file, "user.b", bufs[i].p, 16, 0));
    }
    snprintf(nm, sizeof nm, "%s value=null_size_16", call);
    R(nm, syscall(nr, file, "user.b", NULL, 16, 0));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, "user.b", "v", SIZE_MAX, 0));
    snprintf(nm, sizeof nm, "%s size=over_xattr_size_max", call);
    R(nm, syscall(nr, file, "user.b", "v", 65537, 0));
    snprintf(nm, sizeof nm, "%s flags=all_bits", call);
    R(nm, syscall(nr, file, "user.b", "v", 1, ALL_BITS));
    snprintf(nm, sizeof nm, "%s flags=create_replace", call);
    R(nm, syscall(nr, file, "user.b", "v", 1, 3));
}

static void xattr_get(const char *call, long nr, const char *file) {
    char buf[64], nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.a", buf, sizeof buf));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p, buf, sizeof buf));
    }
    FOR_BUFS(call, "value", syscall(nr, file, "user.a", B, 64));
    snprintf(nm, sizeof nm, "%s size=0", call);
    R(nm, syscall(nr, file, "user.a", NULL, 0));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, "user.a", buf, SIZE_MAX));
    snprintf(nm, sizeof nm, "%s size=high_bits", call);
    R(nm, syscall(nr, file, "user.a", buf, HIGH_BITS | 64));
}

static void xattr_list(const char *call, long nr, const char *file) {
    char buf[64], nm[160];
    FOR_PATHS(call, syscall(nr, P, buf, sizeof buf));
    FOR_BUFS(call, "list", syscall(nr, file, B, 64));
    snprintf(nm, sizeof nm, "%s size=0", call);
    R(nm, syscall(nr, file, NULL, 0));
    snprintf(nm, sizeof nm, "%s size=1", call);
    R(nm, syscall(nr, file, buf, 1));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, buf, SIZE_MAX));
}

static void xattr_remove(const char *call, long nr, const char *file) {
    char nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.a"));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p));
    }
}

static void t_xattr(void) {
    static char long_xname[300];
    memcpy(long_xname, "user.", 5);
    memset(long_xname + 5, 'n', 260);
    struct ptr n[NNAMES] = {
        {"null", NULL}, {"one", (void *)1}, {"prot_none", none_page},
        {"no_nul_to_unmapped", edge}, {"kernel", KERNEL}, {"empty", ""},
        {"too_long", long_xname}, {"unknown_namespace", "nosuch.x"},
    };
    memcpy(names, n, sizeof n);
    xattr_set("setxattr", SYS_setxattr, "f");
    xattr_set("lsetxattr", SYS_lsetxattr, "l");
    /* fsetxattr: the hostile descriptors, then hostile names, values and
     * flags on an open file. */
    FOR_FDS("fsetxattr", syscall(SYS_fsetxattr, F, "user.b", "v", 1, 0));
    {
        char nm[160];
        int fd = open("f", O_RDWR | O_CLOEXEC);
        for (int i = 0; i < NNAMES; i++) {
            snprintf(nm, sizeof nm, "fsetxattr name=%s", names[i].label);
            R(nm, syscall(SYS_fsetxattr, fd, names[i].p, "v", 1, 0));
        }
        R("fsetxattr value=null_size_16", syscall(SYS_fsetxattr, fd, "user.b", NULL, 16, 0));
        R("fsetxattr size=huge", syscall(SYS_fsetxattr, fd, "user.b", "v", SIZE_MAX, 0));
        R("fsetxattr flags=all_bits", syscall(SYS_fsetxattr, fd, "user.b", "v", 1, ALL_BITS));
        R("fsetxattr fd=opath_flags=all_bits",
          syscall(SYS_fsetxattr, opath_fd, "user.b", "v", 1, ALL_BITS));
        close(fd);
    }
    xattr_get("getxattr", SYS_getxattr, "f");
    xattr_get("lgetxattr", SYS_lgetxattr, "l");
    xattr_list("listxattr", SYS_listxattr, "f");
    xattr_list("llistxattr", SYS_llistxattr, "l");
    xattr_remove("removexattr", SYS_removexattr, "f");
    xattr_remove("lremovexattr", SYS_lremovexattr, "l");
}

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

/* ---- sockets ------------------------------------------------------------- */

/* The address-length cases shared by bind and connect. */
/* The address cases shared by bind and connect: A (ALEN bytes) is a good
 * address for DOMAIN; OTHER (OLEN bytes) one of the other family. */
static void addr_cases(const char *call, long nr, int domain, int type, const void *a,
                       socklen_t alen, const void *other, socklen_t olen) {
    char nm[160];
    FOR_FDS(call, syscall(nr, F, a, alen));
    long lens[] = {0, 1, 2, -1L, 1000, 1L << 30, HIGH_BITS | alen, alen - 1, alen + 1};
    const char *ll[] = {"0", "1", "2", "minus1", "1000", "huge", "high_bits_len", "short", "long"};
    for (int i = 0; i < 9; i++) {
        int s = socket(domain, type | SOCK_NONBLOCK, 0);
        snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
        R(nm, syscall(nr, s, a, lens[i]));
        close(s);
    }
    for (int i = 0; i < NBUFS; i++) {
        int s = socket(domain, type | SOCK_NONBLOCK, 0);
        snprintf(nm, sizeof nm, "%s addr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, bufs[i].p, alen));
        close(s);
    }
    int s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s family=other", call);
    R(nm, syscall(nr, s, other, olen));
    close(s);
    char *mis = malloc(64);
    memcpy(mis + 3, a, alen);
    ((struct sockaddr *)(mis + 3))->sa_family = 0x7777;
    s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s family=unknown", call);
    R(nm, syscall(nr, s, mis + 3, alen));
    close(s);
    memcpy(mis + 3, a, alen);
    s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s addr=misaligned", call);
    R(nm, syscall(nr, s, mis + 3, alen));
    free(mis);
    close(s);
}

static void sockname_cases(const char *call, long nr, int s) {
    struct sockaddr_storage a;
    socklen_t l;
    char nm[160];
    FOR_FDS(call, syscall(nr, F, &a, &l));
    for (int i = 0; i < NBUFS; i++) {
        l = sizeof a;
        snprintf(nm, sizeof nm, "%s addr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, bufs[i].p, &l));
        snprintf(nm, sizeof nm, "%s lenptr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, &a, bufs[i].p));
    }
    int lens[] = {0, 1, -1, INT_MAX};
    const char *ll[] = {"0", "1", "minus1", "int_max"};
    for (int i = 0; i < 4; i++) {
        l = lens[i];
        snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
        R(nm, syscall(nr, s, &a, &l));
        printf("%s len=%s out_len: %d\n", call, ll[i], (int)l);
    }
    l = 64;
    snprintf(nm, sizeof nm, "%s addr=straddling_unmapped", call);
    R(nm, syscall(nr, s, edge, &l));
}

static void sockopt_cases(const char *call, long nr, int s, int level, int opt) {
    char nm[160];
    int v = 1;
    socklen_t vl = sizeof v;
    int get = nr == SYS_getsockopt;
    FOR_FDS(call, syscall(nr, F, level, opt, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s level=all_bits", call);
    R(nm, syscall(nr, s, ALL_BITS, opt, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s opt=all_bits", call);
    R(nm, syscall(nr, s, level, ALL_BITS, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s level_high_bits", call);
    vl = sizeof v;
    R(nm, syscall(nr, s, HIGH_BITS | (unsigned)level, opt, &v, get ? (long)&vl : (long)sizeof v));
    for (int i = 0; i < NBUFS; i++) {
        vl = sizeof v;
        snprintf(nm, sizeof nm, "%s val=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, level, opt, bufs[i].p, get ? (long)&vl : (long)sizeof v));
    }
    if (get) {
        for (int i = 0; i < NBUFS; i++) {
            snprintf(nm, sizeof nm, "%s lenptr=%s", call, bufs[i].label);
            R(nm, syscall(nr, s, level, opt, &v, bufs[i].p));
        }
        int lens[] = {0, 1, -1, INT_MAX};
        const char *ll[] = {"0", "1", "minus1", "int_max"};
        for (int i = 0; i < 4; i++) {
            vl = lens[i];
            snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
            R(nm, syscall(nr, s, level, opt, &v, &vl));
            printf("%s len=%s out_len: %d\n", call, ll[i], (int)vl);
        }
    } else {
        long lens[] = {0, 1, -1L, INT_MAX, HIGH_BITS | 4};
        const char *ll[] = {"0", "1", "minus1", "int_max", "high_bits_4"};
        for (int i = 0; i < 5; i++) {
            snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
            R(nm, syscall(nr, s, level, opt, &v, lens[i]));
        }
    }
}

static void t_socket(void) {
    RFD("socket domain=all_bits", syscall(SYS_socket, ALL_BITS, SOCK_STREAM, 0));
    RFD("socket domain=high_bits_inet", syscall(SYS_socket, HIGH_BITS | AF_INET, SOCK_STREAM, 0));
    RFD("socket type=all_bits", syscall(SYS_socket, AF_INET, ALL_BITS, 0));
    RFD("socket type=unknown", syscall(SYS_socket, AF_INET, 0xe, 0));
    RFD("socket type=unknown_flag", syscall(SYS_socket, AF_INET, SOCK_STREAM | 0x100, 0));
    RFD("socket protocol=all_bits", syscall(SYS_socket, AF_INET, SOCK_STREAM, ALL_BITS));
    RFD("socket protocol=udp_on_stream", syscall(SYS_socket, AF_INET, SOCK_STREAM, IPPROTO_UDP));
    RFD("socket protocol=255", syscall(SYS_socket, AF_INET, SOCK_DGRAM, 255));
    RFD("socket inet6 type=unknown", syscall(SYS_socket, AF_INET6, 0xe, 0));
    RFD("socket unix type=unknown", syscall(SYS_socket, AF_UNIX, 0xe, 0));
    RFD("socket unix type=raw", syscall(SYS_socket, AF_UNIX, SOCK_RAW, 0));
    RFD("socket domain=unknown", syscall(SYS_socket, 4242, SOCK_STREAM, 0));
}

static void t_bind_connect(void) {
    struct sockaddr_in a = loopback4(0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    addr_cases("bind tcp", SYS_bind, AF_INET, SOCK_STREAM, &a, sizeof a, &a6, sizeof a6);
    addr_cases("bind udp", SYS_bind, AF_INET, SOCK_DGRAM, &a, sizeof a, &a6, sizeof a6);
    addr_cases("bind tcp6", SYS_bind, AF_INET6, SOCK_STREAM, &a6, sizeof a6, &a, sizeof a);
    addr_cases("bind udp6", SYS_bind, AF_INET6, SOCK_DGRAM, &a6, sizeof a6, &a, sizeof a);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, sizeof a);
    int closed_port = port_of(l);
    close(l);
    struct sockaddr_in c = loopback4(closed_port);
    struct sockaddr_in6 c6 = a6;
    c6.sin6_port = c.sin_port;
    addr_cases("connect tcp", SYS_connect, AF_INET, SOCK_STREAM, &c, sizeof c, &c6, sizeof c6);
    addr_cases("connect udp", SYS_connect, AF_INET, SOCK_DGRAM, &c, sizeof c, &c6, sizeof c6);
    addr_cases("connect tcp6", SYS_connect, AF_INET6, SOCK_STREAM, &c6, sizeof c6, &c, sizeof c);
    addr_cases("connect udp6", SYS_connect, AF_INET6, SOCK_DGRAM, &c6, sizeof c6, &c, sizeof c);
    /* An IPv4 address on a UDP IPv6 socket: connected (v4-mapped). */
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    bind(rx, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in rxa = loopback4(port_of(rx));
    int u6 = socket(AF_INET6, SOCK_DGRAM, 0);
    R("connect udp6 v4_address", syscall(SYS_connect, u6, &rxa, sizeof rxa));
    R("connect udp6 v4_address send", send(u6, "xy", 2, 0));
    char got[8];
    R("connect udp6 v4_address received", recv(rx, got, sizeof got, 0));
    struct sockaddr_in6 pa;
    memset(&pa, 0, sizeof pa);
    socklen_t pl = sizeof pa;
    R("connect udp6 v4_address getpeername", syscall(SYS_getpeername, u6, &pa, &pl));
    printf("connect udp6 v4_address peer: family %d mapped %d len %d\n", pa.sin6_family,
           IN6_IS_ADDR_V4MAPPED(&pa.sin6_addr), (int)pl);
    int one = 1;
    int v6o = socket(AF_INET6, SOCK_DGRAM, 0);
    setsockopt(v6o, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    R("connect udp6 v6only v4_address", syscall(SYS_connect, v6o, &rxa, sizeof rxa));
    close(v6o), close(u6), close(rx);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    R("bind twice", syscall(SYS_bind, s, &a, sizeof a));
    close(s);
    /* Unix names: bind is serviced for them too. */
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    memset(u.sun_path, 'u', sizeof u.sun_path); /* no NUL */
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("bind unix path=no_nul", syscall(SYS_bind, s, &u, sizeof u));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("bind unix len=too_big", syscall(SYS_bind, s, &u, sizeof u + 1));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    strcpy(u.sun_path, "nosuchdir/sock");
    R("bind unix path=missing_dir", syscall(SYS_bind, s, &u, sizeof u));
    R("connect unix path=missing", syscall(SYS_connect, s, &u, sizeof u));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("connect unix len=family_only", syscall(SYS_connect, s, &u, 2));
    R("bind unix len=family_only_autobind", syscall(SYS_bind, s, &u, 2));
    close(s);
}

static void t_names_opts(void) {
    struct sockaddr_in a = loopback4(0);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    bind(t, (struct sockaddr *)&a, sizeof a);
    sockname_cases("getsockname", SYS_getsockname, t);
    sockname_cases("getpeername", SYS_getpeername, t);
    int lst = socket(AF_INET, SOCK_STREAM, 0);
    bind(lst, (struct sockaddr *)&a, sizeof a);
    listen(lst, 4);
    struct sockaddr_in to = loopback4(port_of(lst));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&to, sizeof to);
    sockname_cases("getpeername connected", SYS_getpeername, c);
    sockopt_cases("setsockopt tcp_nodelay", SYS_setsockopt, t, IPPROTO_TCP, TCP_NODELAY);
    sockopt_cases("setsockopt so_rcvbuf", SYS_setsockopt, t, SOL_SOCKET, SO_RCVBUF);
    sockopt_cases("setsockopt ip_ttl", SYS_setsockopt, t, IPPROTO_IP, IP_TTL);
    sockopt_cases("getsockopt tcp_nodelay", SYS_getsockopt, t, IPPROTO_TCP, TCP_NODELAY);
    sockopt_cases("getsockopt so_type", SYS_getsockopt, t, SOL_SOCKET, SO_TYPE);
    sockopt_cases("getsockopt so_error", SYS_getsockopt, t, SOL_SOCKET, SO_ERROR);
    sockopt_cases("getsockopt ip_ttl", SYS_getsockopt, t, IPPROTO_IP, IP_TTL);
    int t6 = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    sockopt_cases("setsockopt ipv6_v6only", SYS_setsockopt, t6, IPPROTO_IPV6, IPV6_V6ONLY);
    sockopt_cases("getsockopt ipv6_v6only", SYS_getsockopt, t6, IPPROTO_IPV6, IPV6_V6ONLY);
    sockopt_cases("setsockopt ipv6_unicast_hops", SYS_setsockopt, t6, IPPROTO_IPV6, IPV6_UNICAST_HOPS);
    sockopt_cases("getsockopt ipv6_unicast_hops", SYS_getsockopt, t6, IPPROTO_IPV6, IPV6_UNICAST_HOPS);
    sockopt_cases("getsockopt udp6 ip_ttl", SYS_getsockopt, t6, IPPROTO_IP, IP_TTL);
    bind(t6, (struct sockaddr *)&a6, sizeof a6);
    sockname_cases("getsockname udp6", SYS_getsockname, t6);
    sockname_cases("getpeername udp6", SYS_getpeername, t6);
    close(t6);
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    sockopt_cases("setsockopt unix so_rcvbuf", SYS_setsockopt, u, SOL_SOCKET, SO_RCVBUF);
    sockopt_cases("getsockopt unix so_type", SYS_getsockopt, u, SOL_SOCKET, SO_TYPE);
    char big[64];
    socklen_t bl = sizeof big;
    R("getsockopt tcp_congestion", syscall(SYS_getsockopt, t, IPPROTO_TCP, TCP_CONGESTION, big, &bl));
    R("setsockopt tcp_congestion name=no_nul_to_unmapped",
      syscall(SYS_setsockopt, t, IPPROTO_TCP, TCP_CONGESTION, edge, 64));
    R("setsockopt so_bindtodevice name=no_nul_to_unmapped",
      syscall(SYS_setsockopt, t, SOL_SOCKET, SO_BINDTODEVICE, edge, 64));
    R("setsockopt ip_add_membership val=short",
      syscall(SYS_setsockopt, t, IPPROTO_IP, IP_ADD_MEMBERSHIP, big, 2));
    close(u), close(t), close(c), close(lst);
}

static void t_accept_listen(void) {
    struct sockaddr_in a = loopback4(0), peer;
    socklen_t l;
    char nm[160];
    int lst = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    bind(lst, (struct sockaddr *)&a, sizeof a);
    listen(lst, 8);
    struct sockaddr_in to = loopback4(port_of(lst));
    l = sizeof peer;
    FOR_FDS("accept", syscall(SYS_accept, F, &peer, &l));
    FOR_FDS("accept4", syscall(SYS_accept4, F, &peer, &l, 0));
    l = sizeof peer;
    RFD("accept nothing_pending", syscall(SYS_accept, lst, &peer, &l));
    for (int i = 0; i < NBUFS; i++) {
        snprintf(nm, sizeof nm, "accept nothing_pending lenptr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, &peer, bufs[i].p));
        snprintf(nm, sizeof nm, "accept4 nothing_pending addr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept4, lst, bufs[i].p, &l, SOCK_CLOEXEC));
    }
    int notl = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    RFD("accept not_listening", syscall(SYS_accept, notl, &peer, &l));
    close(notl);
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    RFD("accept udp", syscall(SYS_accept, udp, &peer, &l));
    RFD("accept4 flags=all_bits", syscall(SYS_accept4, lst, &peer, &l, ALL_BITS));
    RFD("accept4 flags=unknown", syscall(SYS_accept4, lst, &peer, &l, 0x40));
    /* With a connection pending: hostile address buffers. */
    for (int i = 1; i < NBUFS; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        connect(c, (struct sockaddr *)&to, sizeof to);
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending addr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, bufs[i].p, &l));
        snprintf(nm, sizeof nm, "accept4 pending lenptr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept4, lst, &peer, bufs[i].p, SOCK_CLOEXEC));
        /* Whatever is still queued is drained by the next case. */
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending drain_after %s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        close(c);
    }
    int lens[] = {0, -1, INT_MAX};
    const char *ll[] = {"0", "minus1", "int_max"};
    for (int i = 0; i < 3; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        connect(c, (struct sockaddr *)&to, sizeof to);
        l = lens[i];
        snprintf(nm, sizeof nm, "accept pending len=%s", ll[i]);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending len=%s drain", ll[i]);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        close(c);
    }
    FOR_FDS("listen", syscall(SYS_listen, F, 4));
    R("listen udp", syscall(SYS_listen, udp, 4));
    int t = socket(AF_INET, SOCK_STREAM, 0);
    R("listen backlog=minus1", syscall(SYS_listen, t, -1));
    R("listen backlog=huge", syscall(SYS_listen, t, ALL_BITS >> 1));
    R("listen again", syscall(SYS_listen, t, 4));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&to, sizeof to);
    R("listen connected", syscall(SYS_listen, c, 4));
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    R("listen unix unbound", syscall(SYS_listen, u, 4));
    int ud = socket(AF_UNIX, SOCK_DGRAM, 0);
    R("listen unix dgram", syscall(SYS_listen, ud, 4));
    l = sizeof peer;
    RFD("accept drain_last", syscall(SYS_accept, lst, &peer, &l));
    close(u), close(ud), close(c), close(t), close(udp), close(lst);
}

static void t_sendto_recvfrom(void) {
    struct sockaddr_in a = loopback4(0), from;
    socklen_t fl;
    /* Static, not on the stack: "len=huge" is clamped to MAX_RW_COUNT (2 GiB)
     * and checked against the end of user space, which a randomised stack
     * may or may not lie within 2 GiB of. */
    static char buf[64];
    char nm[160];
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    bind(rx, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in to = loopback4(port_of(rx));
    int tx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    FOR_FDS("sendto", syscall(SYS_sendto, F, "x", 1, 0, &to, sizeof to));
    FOR_BUFS("sendto", "addr", syscall(SYS_sendto, tx, "x", 1, 0, B, sizeof to));
    for (int i = 1; i < NBUFS; i++) {
        snprintf(nm, sizeof nm, "sendto buf=%s", bufs[i].label);
        R(nm, syscall(SYS_sendto, tx, bufs[i].p, 16, 0, &to, sizeof to));
    }
    long lens[] = {-1L, INT_MAX, 1L << 40, HIGH_BITS | 1};
    const char *ll[] = {"minus1", "int_max", "huge", "high_bits_1"};
    for (int i = 0; i < 4; i++) {
        snprintf(nm, sizeof nm, "sendto len=%s", ll[i]);
        R(nm, syscall(SYS_sendto, tx, "x", lens[i], 0, &to, sizeof to));
        snprintf(nm, sizeof nm, "sendto addrlen=%s", ll[i]);
        R(nm, syscall(SYS_sendto, tx, "x", 1, 0, &to, lens[i]));
    }
    /* Family cases, each datagram drained at once. */
    struct sockaddr_in6 to6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    to6.sin6_port = to.sin_port;
    int tx6 = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    R("sendto udp6 v4_address", syscall(SYS_sendto, tx6, "x", 1, 0, &to, sizeof to));
    R("sendto udp6 v4_address drain", recv(rx, buf, sizeof buf, 0));
    struct iovec v6iov = {"xyz", 3};
    struct msghdr v6m = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &v6iov, .msg_iovlen = 1};
    R("sendmsg udp6 v4_address", syscall(SYS_sendmsg, tx6, &v6m, 0));
    R("sendmsg udp6 v4_address drain", recv(rx, buf, sizeof buf, 0));
    R("sendto udp6 v6_address_to_v4_receiver", syscall(SYS_sendto, tx6, "x", 1, 0, &to6, sizeof to6));
    R("sendto udp inet6_address", syscall(SYS_sendto, tx, "x", 1, 0, &to6, sizeof to6));
    struct sockaddr_in6 odd6 = to6;
    odd6.sin6_family = 0x7777;
    R("sendto udp6 family=unknown", syscall(SYS_sendto, tx6, "x", 1, 0, &odd6, sizeof odd6));
    R("sendto udp6 addrlen=short", syscall(SYS_sendto, tx6, "x", 1, 0, &to6, 20));
    R("sendto udp6 addrlen=1", syscall(SYS_sendto, tx6, "x", 1, 0, &to6, 1));
    int one6 = 1;
    setsockopt(tx6, IPPROTO_IPV6, IPV6_V6ONLY, &one6, sizeof one6);
    R("sendto udp6 v6only v4_address", syscall(SYS_sendto, tx6, "x", 1, 0, &to, sizeof to));
    close(tx6);
    R("sendto addrlen=0", syscall(SYS_sendto, tx, "x", 1, 0, &to, 0));
    R("sendto addrlen=short", syscall(SYS_sendto, tx, "x", 1, 0, &to, 4));
    R("sendto flags=all_bits", syscall(SYS_sendto, tx, "x", 1, ALL_BITS, &to, sizeof to));
    R("sendto flags=oob", syscall(SYS_sendto, tx, "x", 1, MSG_OOB, &to, sizeof to));
    R("sendto flags=unknown", syscall(SYS_sendto, tx, "x", 1, 0x80000000UL, &to, sizeof to));
    int t = socket(AF_INET, SOCK_STREAM, 0);
    R("sendto tcp unconnected empty", syscall(SYS_sendto, t, "", 0, MSG_NOSIGNAL, NULL, 0));
    R("sendto tcp unconnected addr", syscall(SYS_sendto, t, "x", 1, MSG_NOSIGNAL, &to, sizeof to));
    R("sendto pipe empty", syscall(SYS_sendto, pipe_fd, "", 0, 0, NULL, 0));
    /* One datagram queued, then hostile receive buffers. */
    fl = sizeof from;
    FOR_FDS("recvfrom", syscall(SYS_recvfrom, F, buf, sizeof buf, MSG_DONTWAIT, &from, &fl));
    R("recvfrom nothing_queued", syscall(SYS_recvfrom, rx, buf, sizeof buf, 0, &from, &fl));
    for (int i = 1; i < NBUFS; i++) {
        syscall(SYS_sendto, tx, "datagram", 8, 0, &to, sizeof to);
        fl = sizeof from;
        snprintf(nm, sizeof nm, "recvfrom buf=%s", bufs[i].label);
        R(nm, syscall(SYS_recvfrom, rx, bufs[i].p, 8, 0, &from, &fl));
        snprintf(nm, sizeof nm, "recvfrom addr=%s", bufs[i].label);
        R(nm, syscall(SYS_recvfrom, rx, buf, sizeof buf, MSG_PEEK, bufs[i].p, &fl));
        snprintf(nm, sizeof nm, "recvfrom lenptr=%s", bufs[i].label);
        R(nm, syscall(SYS_recvfrom, rx, buf, sizeof buf, MSG_PEEK, &from, bufs[i].p));
        snprintf(nm, sizeof nm, "recvfrom drain_after %s", bufs[i].label);
        fl = sizeof from;
        R(nm, syscall(SYS_recvfrom, rx, buf, sizeof buf, 0, &from, &fl));
    }
    int rl[] = {0, -1, INT_MAX};
    const char *rll[] = {"0", "minus1", "int_max"};
    for (int i = 0; i < 3; i++) {
        syscall(SYS_sendto, tx, "datagram", 8, 0, &to, sizeof to);
        fl = rl[i];
        snprintf(nm, sizeof nm, "recvfrom addrlen=%s", rll[i]);
        R(nm, syscall(SYS_recvfrom, rx, buf, sizeof buf, 0, &from, &fl));
        snprintf(nm, sizeof nm, "recvfrom addrlen=%s drain", rll[i]);
        fl = sizeof from;
        R(nm, syscall(SYS_recvfrom, rx, buf, sizeof buf, 0, &from, &fl));
    }
    syscall(SYS_sendto, tx, "datagram", 8, 0, &to, sizeof to);
    fl = sizeof from;
    R("recvfrom len=huge", syscall(SYS_recvfrom, rx, buf, SIZE_MAX, MSG_PEEK, &from, &fl));
    R("recvfrom len=high_bits", syscall(SYS_recvfrom, rx, buf, HIGH_BITS | 64, MSG_PEEK, &from, &fl));
    R("recvfrom flags=all_bits", syscall(SYS_recvfrom, rx, buf, sizeof buf, ALL_BITS, &from, &fl));
    R("recvfrom flags=errqueue", syscall(SYS_recvfrom, rx, buf, sizeof buf, MSG_ERRQUEUE, &from, &fl));
    R("recvfrom trunc len=1", syscall(SYS_recvfrom, rx, buf, 1, MSG_TRUNC, &from, &fl));
    R("recvfrom tcp unconnected", syscall(SYS_recvfrom, t, buf, sizeof buf, MSG_DONTWAIT, &from, &fl));
    close(t), close(tx), close(rx);
}

static void msg_cases(const char *call, long nr, int s, long flags) {
    char nm[160], data[16] = "payload", ctl[64];
    struct sockaddr_in to = loopback4(port_of(s));
    struct iovec iov = {data, 8};
    struct msghdr good = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov, .msg_iovlen = 1};
    FOR_FDS(call, syscall(nr, F, &good, flags | MSG_DONTWAIT));
    FOR_BUFS(call, "msg", syscall(nr, s, B, flags | MSG_DONTWAIT));
    int send = nr == SYS_sendmsg;
#define M(label, field, value)                                                 \
    do {                                                                       \
        struct msghdr m_ = good;                                               \
        struct iovec iv_ = iov;                                                \
        m_.msg_iov = &iv_;                                                     \
        field = value;                                                         \
        if (!send) /* something to receive */                                  \
            sendto(s, "datagram", 8, 0, (struct sockaddr *)&to, sizeof to);    \
        snprintf(nm, sizeof nm, "%s %s", call, label);                         \
        R(nm, syscall(nr, s, &m_, flags | MSG_DONTWAIT));                      \
        if (!send) {                                                           \
            char d_[64];                                                       \
            snprintf(nm, sizeof nm, "%s %s drain", call, label);               \
            R(nm, recv(s, d_, sizeof d_, MSG_DONTWAIT));                       \
        }                                                                      \
    } while (0)
    for (int i = 1; i < NBUFS; i++) {
        char lb[64];
        snprintf(lb, sizeof lb, "name=%s", bufs[i].label);
        M(lb, m_.msg_name, (void *)bufs[i].p);
        snprintf(lb, sizeof lb, "iov=%s", bufs[i].label);
        M(lb, m_.msg_iov, (void *)bufs[i].p);
        snprintf(lb, sizeof lb, "iov_base=%s", bufs[i].label);
        M(lb, iv_.iov_base, (void *)bufs[i].p);
        snprintf(lb, sizeof lb, "control=%s", bufs[i].label);
        struct msghdr *mm = &good;
        (void)mm;
        M(lb, m_.msg_control = (void *)bufs[i].p; m_.msg_controllen, 32);
    }
    M("namelen=minus1", m_.msg_namelen, -1);
    M("namelen=huge", m_.msg_namelen, 1u << 30);
    M("namelen=short", m_.msg_namelen, 3);
    M("iovlen=huge", m_.msg_iovlen, 1UL << 40);
    M("iovlen=over_uio_maxiov", m_.msg_iovlen, 1025);
    M("iovlen=0", m_.msg_iovlen, 0);
    M("iov_len=huge", iv_.iov_len, SIZE_MAX);
    M("iov_len=high_bits", iv_.iov_len, HIGH_BITS | 8);
    M("controllen=huge", m_.msg_control = ctl; m_.msg_controllen, SIZE_MAX);
    memset(ctl, 0xff, sizeof ctl);
    M("control=garbage", m_.msg_control = ctl; m_.msg_controllen, sizeof ctl);
    struct cmsghdr *cm = (struct cmsghdr *)ctl;
    cm->cmsg_len = 1000;
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    M("cmsg_len=over_controllen", m_.msg_control = ctl; m_.msg_controllen, sizeof ctl);
    M("flags_field=all_bits", m_.msg_flags, -1);
    char *mis = malloc(sizeof good + 8);
    memcpy(mis + 1, &good, sizeof good);
    if (!send)
        sendto(s, "datagram", 8, 0, (struct sockaddr *)&to, sizeof to);
    snprintf(nm, sizeof nm, "%s msg=misaligned", call);
    R(nm, syscall(nr, s, mis + 1, flags | MSG_DONTWAIT));
    free(mis);
    snprintf(nm, sizeof nm, "%s msg=last_bytes_unmapped", call);
    R(nm, syscall(nr, s, edge + 8 - sizeof good + 4, flags | MSG_DONTWAIT));
    snprintf(nm, sizeof nm, "%s flags=all_bits_but_pass", call);
    R(nm, syscall(nr, s, &good, send ? ~(long)MSG_NOSIGNAL : ~(long)MSG_CMSG_CLOEXEC));
    char d[64];
    while (recv(s, d, sizeof d, MSG_DONTWAIT) >= 0)
        ;
}

static void t_msg(void) {
    struct sockaddr_in a = loopback4(0);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    msg_cases("sendmsg udp", SYS_sendmsg, s, 0);
    msg_cases("recvmsg udp", SYS_recvmsg, s, 0);
    close(s);
    /* TCP sockets never connected, a listener, a connection. */
    char data_rx[16];
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in tname = loopback4(9);
    struct iovec tiov = {"x", 1};
    struct msghdr tm = {.msg_name = &tname, .msg_namelen = sizeof tname, .msg_iov = &tiov,
                        .msg_iovlen = 1};
    R("sendmsg tcp unconnected", syscall(SYS_sendmsg, tcp, &tm, 0));
    R("recvmsg tcp unconnected", syscall(SYS_recvmsg, tcp, &tm, 0));
    tm.msg_name = NULL, tm.msg_namelen = 0;
    R("sendmsg tcp unconnected no_name", syscall(SYS_sendmsg, tcp, &tm, 0));
    bind(tcp, (struct sockaddr *)&a, sizeof a);
    listen(tcp, 1);
    tm.msg_name = &tname, tm.msg_namelen = sizeof tname;
    R("sendmsg tcp listening", syscall(SYS_sendmsg, tcp, &tm, 0));
    R("recvmsg tcp listening", syscall(SYS_recvmsg, tcp, &tm, 0));
    R("sendto tcp listening", syscall(SYS_sendto, tcp, "x", 1, 0, &tname, sizeof tname));
    R("recvfrom tcp listening", syscall(SYS_recvfrom, tcp, tm.msg_iov, 1, 0, &tname, &tm.msg_namelen));
    int peer = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = loopback4(port_of(tcp));
    connect(peer, (struct sockaddr *)&at, sizeof at);
    int conn = accept(tcp, NULL, NULL);
    tm.msg_name = &tname, tm.msg_namelen = sizeof tname;
    R("sendmsg tcp connected with_name", syscall(SYS_sendmsg, peer, &tm, 0));
    R("sendmsg tcp connected with_name received", recv(conn, data_rx, sizeof data_rx, MSG_DONTWAIT));
    tm.msg_name = NULL, tm.msg_namelen = 0;
    R("sendmsg tcp connected no_name", syscall(SYS_sendmsg, peer, &tm, 0));
    tm.msg_name = &tname, tm.msg_namelen = sizeof tname;
    tiov.iov_base = (void *)1;
    R("sendmsg tcp connected with_name iov_base=one", syscall(SYS_sendmsg, peer, &tm, 0));
    tiov.iov_len = SIZE_MAX;
    R("sendmsg tcp connected with_name iov_len=huge", syscall(SYS_sendmsg, peer, &tm, 0));
    close(conn), close(peer), close(tcp);
    /* Control messages asked for: recvmsg is serviced even without a name. */
    s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    int on = 1;
    setsockopt(s, IPPROTO_IP, IP_PKTINFO, &on, sizeof on);
    setsockopt(s, IPPROTO_IP, IP_RECVTTL, &on, sizeof on);
    struct sockaddr_in self = loopback4(port_of(s));
    char data[16], cbuf[256], nm[160];
    for (int i = 0; i < NBUFS + 3; i++) {
        struct iovec iov = {data, sizeof data};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                           .msg_controllen = sizeof cbuf};
        const char *label;
        if (i < NBUFS) {
            m.msg_control = (void *)bufs[i].p;
            label = bufs[i].label;
        } else if (i == NBUFS) {
            m.msg_controllen = SIZE_MAX, label = "controllen_huge";
        } else if (i == NBUFS + 1) {
            m.msg_controllen = 20, label = "controllen_one_cmsg_short";
        } else {
            m.msg_controllen = 1, label = "controllen_1";
        }
        sendto(s, "datagram", 8, 0, (struct sockaddr *)&self, sizeof self);
        snprintf(nm, sizeof nm, "recvmsg pktinfo control=%s", label);
        R(nm, syscall(SYS_recvmsg, s, &m, MSG_DONTWAIT));
        printf("recvmsg pktinfo control=%s flags: %d controllen: %d\n", label,
               m.msg_flags & (MSG_CTRUNC | MSG_TRUNC), (int)m.msg_controllen);
        snprintf(nm, sizeof nm, "recvmsg pktinfo control=%s drain", label);
        R(nm, recv(s, data, sizeof data, MSG_DONTWAIT));
    }
    close(s);
    int sp[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sp);
    struct msghdr m = {0};
    char ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {"x", 1};
    m.msg_iov = &iov, m.msg_iovlen = 1, m.msg_control = ctl, m.msg_controllen = sizeof ctl;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN(sizeof(int));
    int bad = 1000000;
    memcpy(CMSG_DATA(cm), &bad, sizeof bad);
    R("sendmsg unix scm_rights fd=huge", syscall(SYS_sendmsg, sp[0], &m, 0));
    memcpy(CMSG_DATA(cm), &closed_fd, sizeof closed_fd);
    R("sendmsg unix scm_rights fd=closed", syscall(SYS_sendmsg, sp[0], &m, 0));
    cm->cmsg_type = 0x7777;
    R("sendmsg unix cmsg_type=unknown", syscall(SYS_sendmsg, sp[0], &m, 0));
    struct msghdr r = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = (void *)1, .msg_controllen = 64};
    char one;
    iov.iov_base = &one;
    R("recvmsg unix nothing_queued", syscall(SYS_recvmsg, sp[1], &r, MSG_DONTWAIT));
    close(sp[0]), close(sp[1]);
}

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

/* ---- races: guest memory changing under a serviced call ------------------ */

static volatile int stop;
static char *race_page;

static void *flipper(void *arg) {
    (void)arg;
    while (!stop) {
        mprotect(race_page, PG, PROT_NONE);
        mprotect(race_page, PG, PROT_READ | PROT_WRITE);
        munmap(race_page, PG);
        mmap(race_page, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        /* A fresh page is zeroed: the callers rewrite what they need. */
    }
    return NULL;
}

/* Each race call returns its result; ok lists acceptable errnos. */
static int ok_errno(int e, const int *ok) {
    for (; *ok; ok++)
        if (e == *ok)
            return 1;
    return 0;
}

static void race(void) {
    race_page = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_t th;
    pthread_create(&th, NULL, flipper, NULL);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = loopback4(0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in to = loopback4(port_of(s));
    const char *names[] = {"openat", "faccessat", "readlink", "chmod", "getxattr", "setxattr",
                           "sysinfo", "sched_getaffinity", "getsockname", "getsockopt",
                           "setsockopt", "connect", "sendto", "sendmsg", "openat2", "rmdir",
                           "recvfrom", "recvmsg", "bind", "rename", "inotify_add_watch",
                           "symlink"};
    /* Paths read from the racing page are only ever this name or empty:
     * whatever an earlier call left there is overwritten by the kernel
     * (pread: EFAULT, never a crash, when the page is gone). */
    int namefd = open("racename", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(namefd, "race_dir", 9);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    /* Any of these may come back; a page that vanished gives EFAULT or, for
     * a path that read as zeroes, ENOENT. */
    static const int ok[] = {EFAULT, ENOENT, ENODATA, EINVAL, EEXIST, ERANGE, EAGAIN,
                             ENOTDIR, EAFNOSUPPORT, ECONNREFUSED, EOPNOTSUPP, E2BIG,
                             EDESTADDRREQ, EMSGSIZE, 0};
    /* The race's UDP socket is bound: bind is EINVAL whatever it reads. */
    for (unsigned k = 0; k < sizeof names / sizeof *names; k++) {
        int bad = 0, n = 1000;
        for (int i = 0; i < n; i++) {
            char *p = race_page;
            long r;
            errno = 0;
            pread(namefd, p, 9, 0);
            switch (k) {
            case 0: r = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY); break;
            case 1: r = syscall(SYS_faccessat, AT_FDCWD, p, F_OK); break;
            case 2: r = syscall(SYS_readlink, "l", p, 64); break;
            case 3: r = syscall(SYS_chmod, p, 0755); break;
            case 4: r = syscall(SYS_getxattr, "f", "user.a", p, 64); break;
            case 5: r = syscall(SYS_setxattr, "f", "user.r", p, 64, 0); break;
            case 6: r = syscall(SYS_sysinfo, p); break;
            case 7: r = syscall(SYS_sched_getaffinity, 0, 8, p); break;
            case 8: { socklen_t l = 16; r = syscall(SYS_getsockname, s, p, &l); break; }
            case 9: { socklen_t l = 4; r = syscall(SYS_getsockopt, s, SOL_SOCKET, SO_TYPE, p, &l); break; }
            case 10: r = syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUF, p, 4); break;
            case 11: r = syscall(SYS_connect, s, p, sizeof to); break;
            case 12: r = syscall(SYS_sendto, s, "x", 1, 0, p, sizeof to); break;
            case 13: r = syscall(SYS_sendmsg, s, p, MSG_DONTWAIT); break;
            case 14: r = syscall(SYS_openat2, AT_FDCWD, "f", p, 24); break;
            case 15: r = syscall(SYS_rmdir, p); break;
            case 16:
                sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof to);
                r = syscall(SYS_recvfrom, s, p, 64, MSG_DONTWAIT, p + 64, p + 128);
                break;
            case 17:
                sendto(s, "x", 1, 0, (struct sockaddr *)&to, sizeof to);
                r = syscall(SYS_recvmsg, s, p, MSG_DONTWAIT);
                break;
            case 18: r = syscall(SYS_bind, s, p, sizeof to); break;
            case 19: r = syscall(SYS_rename, p, p); break;
            case 20: r = syscall(SYS_inotify_add_watch, in, p, IN_MODIFY); break;
            default: r = syscall(SYS_symlink, p, "race_link"); break;
            }
            if (r >= 0 && (k == 0 || k == 14))
                close((int)r);
            if (r < 0 && !ok_errno(errno, ok)) {
                if (!bad)
                    printf("race %s: unexpected %s\n", names[k], strerrorname_np(errno));
                bad++;
            }
        }
        if (!bad)
            printf("race %s: answered\n", names[k]);
        fflush(stdout);
    }
    stop = 1;
    pthread_join(th, NULL);
    close(in), close(namefd);
    char d[64];
    while (recv(s, d, sizeof d, MSG_DONTWAIT) >= 0)
        ;
    close(s);
}

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
    t_order();
    restore();
    printf("done\n");
    return 0;
}
