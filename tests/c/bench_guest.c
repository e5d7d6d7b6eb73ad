/*
 * bench_guest: a long-lived guest for benches/syscalls.rs.
 *
 * It measures per-call cost INSIDE one process, so the cost of starting a
 * sandbox never enters a per-call figure. The bench starts one copy natively
 * and one under `supervisor run`, then drives both over stdin/stdout:
 *
 *   usage: bench_guest DIR
 *     DIR holds the bench tree: 98 regular files f000..f097 (f000 is 4096
 *     bytes), one symlink `link` -> f000 and one directory `sub` = 100 entries.
 *
 *   stdin, one command a line:   NAME N
 *   stdout, one answer a line:   <nanoseconds for N iterations>
 *                           or:  ERR <what went wrong>
 *
 * Commands (each iteration = the calls listed; time from CLOCK_MONOTONIC,
 * which is read through the vDSO and never reaches the kernel):
 *   openat_close  openat(AT_FDCWD, DIR/f001, O_RDONLY) + close, through the C
 *                 library's openat (the fast-reads preload's, supervised
 *                 and fenced)                        [fast read + pass]
 *   openat_trapped  the same open by syscall(2), unmarked: what every read
 *                 open cost before fast reads, and what a static program's
 *                 or the loader's costs                 [serviced + pass]
 *   openat_sparse openat_close after 100 us of computation (a clock-reading
 *                 loop, left out of the time): how real programs make their
 *                 serviced calls, each after the worker has gone to sleep and
 *                 the caches have cooled                      [fast read + pass]
 *   newfstatat    fstatat(AT_FDCWD, DIR/f001, &st, 0)                 [pass]
 *   stat_miss     fstatat(AT_FDCWD, DIR/missing, &st, 0) -> ENOENT    [pass]
 *   readlinkat    readlinkat(AT_FDCWD, DIR/link, buf, sizeof buf)     [pass]
 *   faccessat     faccessat(AT_FDCWD, DIR/f001, R_OK, 0)              [pass]
 *   getdents64    lseek(dirfd, 0) + getdents64 until all 102 records
 *                 (100 entries + . and ..) are read; one getdents64 call
 *                 with a 64 KiB buffer normally returns them all       [as the policy says]
 *   read4k        pread64(fd of DIR/f000, buf, 4096, 0)               [pass]
 *   mmap4k        mmap(4096, PROT_READ, MAP_PRIVATE, fd of DIR/f000) + a read
 *                 of its first byte (the page fault) + munmap           [pass]
 *   lseek_rewind  lseek(fd of DIR/f000, 0, SEEK_SET): a rewind of a plain
 *                 file                  [serviced: CONTINUE, once a file was served]
 *   lseek_cur     lseek(fd of DIR/f000, 0, SEEK_CUR)                  [pass]
 *   write4k       write(fd of /dev/null, buf, 4096)                   [pass]
 *   getpid        syscall(SYS_getpid)                                 [pass]
 *   getcwd        getcwd(buf, sizeof buf)                             [as the policy says]
 *   opendir_close openat(AT_FDCWD, DIR, O_RDONLY|O_DIRECTORY) + close (opendir) [pass]
 *   scratch_open  openat(AT_FDCWD, SCRATCH, O_RDONLY) + close: a directory of
 *                 the layer opened to fsync it, as sqlite does after each
 *                 journal (SCRATCH as in create_unlink)   [fast read + pass]
 *   usr_open      openat(AT_FDCWD, /usr/lib/os-release, O_RDONLY) + close: a
 *                 file of /usr, as Python's imports      [fast read + pass]
 *   proc_open     openat(AT_FDCWD, /proc/self/stat, O_RDONLY) + close: a
 *                 /proc file through /proc/self: the fast read is refused
 *                 (EACCES), then served         [pass + serviced + pass]
 *   proc_uptime   openat(AT_FDCWD, /proc/uptime, O_RDONLY) + read + close: a
 *                 global /proc file the sandbox makes from a census of its
 *                 tasks (refused, then served)      [pass + serviced + pass]
 *   create_unlink openat(AT_FDCWD, SCRATCH/cu, O_WRONLY|O_CREAT|O_TRUNC) + close
 *                 + unlink(SCRATCH/cu): SCRATCH is $BENCH_GUEST_SCRATCH, default
 *                 /tmp (the layer's, supervised)                  [pass]
 *   scratch_read  openat(AT_FDCWD, SCRATCH/cu.PID.rw, O_RDONLY) + close: a read
 *                 open in the layer's /tmp              [fast read + pass]
 *   scratch_rdwr  the same with O_RDWR  [serviced: CONTINUE, the root unchanged]
 *                 (the file is made at the first use of either)
 *   inotify_watch inotify_add_watch(inotify fd, DIR, IN_OPEN|IN_CREATE|IN_DELETE)
 *                 + inotify_rm_watch: a file watcher's per-directory call, on
 *                 a tree the host shares (a --ro bind)      [serviced + pass]
 *   roundtrip     syscall(SYS_acct, NULL): a DENIED call, which the supervisor
 *                 answers EPERM without doing any work — the bare
 *                 notification round trip. NEVER run natively (as root it
 *                 would really switch process accounting off); the guest
 *                 refuses it unless started with BENCH_GUEST_SUPERVISED=1.
 *   getsockname   getsockname(fd, &sin, &len) on a TCP socket bound to
 *                 127.0.0.1 once: a call the netstack answers from the
 *                 kernel's state of the socket             [serviced: a value]
 *   nodelay       setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, [1], 4) on an
 *                 unconnected TCP socket, as every HTTP client does  [serviced]
 *   ping 0        answers 0 (readiness check)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <unistd.h>

#define DIR_RECORDS 102 /* 100 entries + "." + ".." */

static char path_file[4096], path_big[4096], path_miss[4096], path_link[4096];
static char path_dir[4096], path_scratch[4096], path_scratch_dir[2048];
static int dir_fd = -1, big_fd = -1, null_fd = -1;
static char buf[65536] __attribute__((aligned(4096)));
static int supervised;
/* Time a bench body spent outside the calls it measures (openat_sparse's
 * computation); the answer leaves it out. */
static uint64_t excluded_ns;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Each bench body returns 0, or -1 with errno set for the first failure. */
static int b_openat_close(long n) {
    for (long i = 0; i < n; i++) {
        int fd = openat(AT_FDCWD, path_file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

/* Computation between calls: reads the clock until 100 us have passed. */
#define SPARSE_GAP_NS 100000ull

static int b_openat_trapped(long n) {
    for (long i = 0; i < n; i++) {
        long fd = syscall(SYS_openat, AT_FDCWD, path_file, O_RDONLY | O_CLOEXEC, 0, 0, 0);
        if (fd < 0) return -1;
        close((int)fd);
    }
    return 0;
}

static int b_openat_sparse(long n) {
    for (long i = 0; i < n; i++) {
        uint64_t start = now_ns(), t;
        while ((t = now_ns()) - start < SPARSE_GAP_NS) {
        }
        excluded_ns += t - start;
        int fd = openat(AT_FDCWD, path_file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

static int b_newfstatat(long n) {
    struct stat st;
    for (long i = 0; i < n; i++)
        if (fstatat(AT_FDCWD, path_file, &st, 0) != 0) return -1;
    return 0;
}

static int b_stat_miss(long n) {
    struct stat st;
    for (long i = 0; i < n; i++) {
        if (fstatat(AT_FDCWD, path_miss, &st, 0) == 0) { errno = EEXIST; return -1; }
        if (errno != ENOENT) return -1;
    }
    return 0;
}

static int b_readlinkat(long n) {
    for (long i = 0; i < n; i++)
        if (readlinkat(AT_FDCWD, path_link, buf, sizeof buf) != 4) return -1;
    return 0;
}

static int b_faccessat(long n) {
    for (long i = 0; i < n; i++)
        if (faccessat(AT_FDCWD, path_file, R_OK, 0) != 0) return -1;
    return 0;
}

static int count_records(long len) {
    int count = 0;
    for (long off = 0; off < len;) {
        unsigned short reclen;
        memcpy(&reclen, buf + off + 16, sizeof reclen); /* d_reclen after d_ino, d_off */
        if (reclen == 0) break;
        off += reclen;
        count++;
    }
    return count;
}

static int b_getdents64(long n) {
    for (long i = 0; i < n; i++) {
        if (lseek(dir_fd, 0, SEEK_SET) != 0) return -1;
        int seen = 0;
        while (seen < DIR_RECORDS) {
            long got = syscall(SYS_getdents64, dir_fd, buf, sizeof buf);
            if (got < 0) return -1;
            if (got == 0) { errno = ENODATA; return -1; }
            seen += count_records(got);
        }
    }
    return 0;
}

static int b_read4k(long n) {
    for (long i = 0; i < n; i++)
        if (pread(big_fd, buf, 4096, 0) != 4096) return -1;
    return 0;
}

static int b_mmap4k(long n) {
    volatile char sink = 0;
    for (long i = 0; i < n; i++) {
        char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, big_fd, 0);
        if (p == MAP_FAILED) return -1;
        sink += p[0];
        if (munmap(p, 4096) != 0) return -1;
    }
    (void)sink;
    return 0;
}

static int b_lseek_rewind(long n) {
    for (long i = 0; i < n; i++)
        if (lseek(big_fd, 0, SEEK_SET) != 0) return -1;
    return 0;
}

static int b_lseek_cur(long n) {
    for (long i = 0; i < n; i++)
        if (lseek(big_fd, 0, SEEK_CUR) < 0) return -1;
    return 0;
}

static int b_write4k(long n) {
    for (long i = 0; i < n; i++)
        if (write(null_fd, buf, 4096) != 4096) return -1;
    return 0;
}

static int b_getpid(long n) {
    for (long i = 0; i < n; i++) syscall(SYS_getpid);
    return 0;
}

static int b_getcwd(long n) {
    for (long i = 0; i < n; i++)
        if (getcwd(buf, sizeof buf) == NULL) return -1;
    return 0;
}

static int b_roundtrip(long n) {
    if (!supervised) { errno = EPERM; return -1; }
    for (long i = 0; i < n; i++) {
        if (syscall(SYS_acct, NULL) == 0) { errno = EEXIST; return -1; }
        if (errno != EPERM) return -1;
    }
    return 0;
}

static int b_opendir_close(long n) {
    for (long i = 0; i < n; i++) {
        int fd = openat(AT_FDCWD, path_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

static int open_close(const char *path, long n) {
    for (long i = 0; i < n; i++) {
        int fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

static int b_scratch_open(long n) { return open_close(path_scratch_dir, n); }
static int b_usr_open(long n) { return open_close("/usr/lib/os-release", n); }
static int b_proc_open(long n) { return open_close("/proc/self/stat", n); }

static int b_proc_uptime(long n) {
    char buf[256];
    for (long i = 0; i < n; i++) {
        int fd = openat(AT_FDCWD, "/proc/uptime", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        ssize_t r = read(fd, buf, sizeof buf);
        close(fd);
        if (r <= 0) return -1;
    }
    return 0;
}

static int b_create_unlink(long n) {
    for (long i = 0; i < n; i++) {
        int fd = openat(AT_FDCWD, path_scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return -1;
        close(fd);
        if (unlink(path_scratch) != 0) return -1;
    }
    return 0;
}

/* SCRATCH/rw, made once, opened with `flags` n times. */
static int scratch_file_open(long n, int flags) {
    char path[4200];
    snprintf(path, sizeof path, "%s.rw", path_scratch);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    close(fd);
    for (long i = 0; i < n; i++) {
        fd = openat(AT_FDCWD, path, flags | O_CLOEXEC);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

static int b_scratch_read(long n) { return scratch_file_open(n, O_RDONLY); }
static int b_scratch_rdwr(long n) { return scratch_file_open(n, O_RDWR); }

static int b_inotify_watch(long n) {
    static int in_fd = -1;
    if (in_fd < 0 && (in_fd = inotify_init1(IN_CLOEXEC)) < 0) return -1;
    for (long i = 0; i < n; i++) {
        int wd = inotify_add_watch(in_fd, path_dir, IN_OPEN | IN_CREATE | IN_DELETE);
        if (wd < 0 || inotify_rm_watch(in_fd, wd) != 0) return -1;
    }
    return 0;
}

/* One TCP socket, made (and bound to 127.0.0.1, port 0) at first use. */
static int tcp_socket(void) {
    static int fd = -1;
    if (fd >= 0) return fd;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        close(fd);
        return fd = -1;
    }
    return fd;
}

static int b_getsockname(long n) {
    int fd = tcp_socket();
    if (fd < 0) return -1;
    for (long i = 0; i < n; i++) {
        struct sockaddr_in sin;
        socklen_t len = sizeof sin;
        if (getsockname(fd, (struct sockaddr *)&sin, &len) != 0) return -1;
        if (sin.sin_family != AF_INET || sin.sin_port == 0) { errno = EPROTO; return -1; }
    }
    return 0;
}

static int b_nodelay(long n) {
    int fd = tcp_socket(), one = 1;
    if (fd < 0) return -1;
    for (long i = 0; i < n; i++)
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) return -1;
    return 0;
}

static int b_ping(long n) { (void)n; return 0; }

static const struct { const char *name; int (*fn)(long); } benches[] = {
    {"openat_close", b_openat_close}, {"newfstatat", b_newfstatat},
    {"stat_miss", b_stat_miss},       {"readlinkat", b_readlinkat},
    {"faccessat", b_faccessat},       {"getdents64", b_getdents64},
    {"read4k", b_read4k},             {"write4k", b_write4k},
    {"getpid", b_getpid},             {"getcwd", b_getcwd},
    {"roundtrip", b_roundtrip},       {"ping", b_ping},
    {"lseek_rewind", b_lseek_rewind}, {"lseek_cur", b_lseek_cur},
    {"opendir_close", b_opendir_close}, {"create_unlink", b_create_unlink},
    {"openat_sparse", b_openat_sparse}, {"scratch_open", b_scratch_open},
    {"usr_open", b_usr_open},         {"proc_open", b_proc_open},
    {"proc_uptime", b_proc_uptime},
    {"scratch_read", b_scratch_read}, {"scratch_rdwr", b_scratch_rdwr},
    {"mmap4k", b_mmap4k},             {"inotify_watch", b_inotify_watch},
    {"openat_trapped", b_openat_trapped},
    {"getsockname", b_getsockname},   {"nodelay", b_nodelay},
};

static void join(char *out, const char *dir, const char *name) {
    snprintf(out, 4096, "%s/%s", dir, name);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: bench_guest DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    const char *sv = getenv("BENCH_GUEST_SUPERVISED");
    supervised = sv && strcmp(sv, "1") == 0;
    join(path_file, dir, "f001");
    join(path_big, dir, "f000");
    join(path_miss, dir, "missing");
    join(path_link, dir, "link");
    snprintf(path_dir, sizeof path_dir, "%s", dir);
    const char *scratch = getenv("BENCH_GUEST_SCRATCH");
    snprintf(path_scratch_dir, sizeof path_scratch_dir, "%s", scratch && *scratch ? scratch : "/tmp");
    snprintf(path_scratch, sizeof path_scratch, "%s/cu.%d", path_scratch_dir, (int)getpid());
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    big_fd = open(path_big, O_RDONLY | O_CLOEXEC);
    null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (dir_fd < 0 || big_fd < 0 || null_fd < 0) {
        fprintf(stderr, "bench_guest: cannot open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    memset(buf, 'x', sizeof buf);

    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        char name[64];
        long n = 0;
        if (sscanf(line, "%63s %ld", name, &n) != 2 || n < 0) {
            printf("ERR bad command\n");
            fflush(stdout);
            continue;
        }
        int (*fn)(long) = NULL;
        for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
            if (strcmp(benches[i].name, name) == 0) fn = benches[i].fn;
        if (!fn) {
            printf("ERR unknown bench %s\n", name);
        } else {
            excluded_ns = 0;
            uint64_t t0 = now_ns();
            int rc = fn(n);
            uint64_t t1 = now_ns() - excluded_ns;
            if (rc != 0)
                printf("ERR %s: %s\n", name, strerror(errno));
            else
                printf("%llu\n", (unsigned long long)(t1 - t0));
        }
        fflush(stdout);
    }
    return 0;
}
