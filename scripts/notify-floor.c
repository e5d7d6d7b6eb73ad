/* notify-floor: the kernel's floor for one seccomp user-notification round
 * trip on this machine, with nothing of the supervisor in it (PERFORMANCE.md,
 * branch roundtrip). A guest process loops on one trapped cheap call
 * (getppid); a supervisor process does RECV + SEND for each, and nothing
 * else.
 *
 *   cc -O2 -o /tmp/notify-floor scripts/notify-floor.c
 *   notify-floor [-n CALLS] [-r ROUNDS] [-s] [-p same|cross|free] [-a errno|continue|native] [-f FILTERS]
 *
 *   -n CALLS    calls a round (default 20000)
 *   -r ROUNDS   rounds; the median and the minimum are printed (default 9)
 *   -s          SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener
 *   -p          pin both processes on CPU 0 (same), the guest on 0 and the
 *               supervisor on 1 (cross), or neither (free, the default)
 *   -a          the answer: an errno (EPERM, as a denial), CONTINUE, or
 *               native: no filter at all, getppid as the kernel runs it
 *   -f FILTERS  stack that many allow-all filters on the supervisor, as the
 *               supervisor's own confinement puts two on itself: every host
 *               call it makes then takes seccomp's slow path
 *
 * Prints the wall time a call in the guest (median, minimum) and the CPU
 * time a call of guest and supervisor together and of each (from their
 * rusage). Needs
 * no privilege (no_new_privs is set). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

static long calls = 20000;
static int rounds = 9;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(125);
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity");
}

/* Traps getppid to the listener, allows everything else. */
static int trap_getppid(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        die("no_new_privs");
    int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0)
        die("seccomp");
    return fd;
}

/* `n` filters that allow every call, on this process. */
static void allow_all(int n)
{
    struct sock_filter code[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {.len = 1, .filter = code};
    if (n > 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        die("no_new_privs");
    for (int i = 0; i < n; i++)
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
            die("seccomp");
}

static void send_fd(int sock, int fd)
{
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(sock, &msg, 0) != 1)
        die("sendmsg");
}

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof u.buf};
    if (recvmsg(sock, &msg, 0) != 1)
        die("recvmsg");
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS)
        die("no fd");
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The guest: rounds of `calls` getppid, each round's ns a call to `out`. */
static void guest(int sock, int out, int filtered, int cpu)
{
    if (cpu >= 0)
        pin(cpu);
    if (filtered) {
        int fd = trap_getppid();
        send_fd(sock, fd);
        close(fd);
    }
    for (int r = 0; r < rounds + 1; r++) { /* round 0 warms up */
        uint64_t t0 = now_ns();
        for (long i = 0; i < calls; i++)
            syscall(SYS_getppid);
        uint64_t ns = now_ns() - t0;
        if (r > 0 && write(out, &ns, sizeof ns) != sizeof ns)
            die("write");
    }
    exit(0);
}

/* The supervisor: RECV + SEND until the guest is gone. */
static void supervise(int listener, int cont)
{
    struct seccomp_notif n;
    struct seccomp_notif_resp resp;
    for (;;) {
        memset(&n, 0, sizeof n);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOENT)
                return; /* the guest has exited (or the call vanished) */
            die("NOTIF_RECV");
        }
        memset(&resp, 0, sizeof resp);
        resp.id = n.id;
        if (cont)
            resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        else
            resp.error = -EPERM;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT)
            die("NOTIF_SEND");
    }
}

static double cpu_s(const struct rusage *u)
{
    return u->ru_utime.tv_sec + u->ru_stime.tv_sec + (u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    int sync = 0, gcpu = -1, scpu = -1, cont = 0, native = 0, filters = 0, opt;
    const char *placement = "free", *answer = "errno";
    while ((opt = getopt(argc, argv, "n:r:sp:a:f:")) != -1) {
        switch (opt) {
        case 'n': calls = atol(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 's': sync = 1; break;
        case 'p': placement = optarg; break;
        case 'a': answer = optarg; break;
        case 'f': filters = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: notify-floor [-n CALLS] [-r ROUNDS] [-s] [-p same|cross|free] "
                            "[-a errno|continue|native] [-f FILTERS]\n");
            return 125;
        }
    }
    if (strcmp(placement, "same") == 0)
        gcpu = scpu = 0;
    else if (strcmp(placement, "cross") == 0)
        gcpu = 0, scpu = 1;
    else if (strcmp(placement, "free") != 0)
        return fprintf(stderr, "notify-floor: -p same|cross|free\n"), 125;
    if (strcmp(answer, "continue") == 0)
        cont = 1;
    else if (strcmp(answer, "native") == 0)
        native = 1;
    else if (strcmp(answer, "errno") != 0)
        return fprintf(stderr, "notify-floor: -a errno|continue|native\n"), 125;
    if (calls <= 0 || rounds <= 0)
        return fprintf(stderr, "notify-floor: -n and -r must be positive\n"), 125;

    int sv[2], res[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe(res) != 0)
        die("socketpair/pipe");
    struct rusage self0, self1, kids;
    getrusage(RUSAGE_SELF, &self0);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(res[0]);
        guest(sv[1], res[1], !native, gcpu);
    }
    close(res[1]);
    if (!native) {
        int listener = recv_fd(sv[0]);
        if (sync && ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
            die("SYNC_WAKE_UP");
        if (scpu >= 0)
            pin(scpu);
        allow_all(filters);
        supervise(listener, cont);
    }
    uint64_t *ns = calloc(rounds, sizeof *ns);
    for (int r = 0; r < rounds; r++)
        if (read(res[0], &ns[r], sizeof ns[r]) != sizeof ns[r])
            return fprintf(stderr, "notify-floor: the guest failed\n"), 1;
    int status;
    waitpid(pid, &status, 0);
    getrusage(RUSAGE_SELF, &self1);
    getrusage(RUSAGE_CHILDREN, &kids);
    qsort(ns, rounds, sizeof *ns, cmp_u64);
    double total = (double)calls * (rounds + 1);
    double sup = cpu_s(&self1) - cpu_s(&self0), gst = cpu_s(&kids);
    printf("%-8s %-5s sync=%d f=%d  median %.2f us  min %.2f us  cpu %.2f us/call (guest %.2f, supervisor %.2f)\n",
           answer, placement, sync, filters, ns[rounds / 2] / 1e3 / calls, ns[0] / 1e3 / calls,
           (sup + gst) * 1e6 / total, gst * 1e6 / total, sup * 1e6 / total);
    return 0;
}
