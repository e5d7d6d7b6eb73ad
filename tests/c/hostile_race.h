/*
 * The race mode of hostile.c (`hostile race DIR`; included by it, not a
 * separate program): threads change guest memory under serviced calls,
 * and every call must come back with success or an expected errno.
 */

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
