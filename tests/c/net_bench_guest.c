/*
 * net_bench_guest: a long-lived guest for benches/net.rs, with the protocol
 * of bench_guest.c: stdin "NAME N", stdout the nanoseconds N iterations took.
 *
 * Commands (loopback TCP; listeners and server threads in this process):
 *   connect_accept  socket + connect + accept + close both        [serviced]
 *   getsockname     getsockname of a connected socket             [serviced]
 *   tcp_rr          64-byte request, 64-byte response (echo thread) [native data]
 *   tcp_bulk        64 KiB written to a draining thread, per iteration;
 *                   the thread acknowledges the whole batch         [native data]
 *   ping 0          answers 0
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
static char chunk[CHUNK];

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static int full(int fd, void *b, size_t n, int writing) {
    char *p = b;
    while (n) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0) return -1;
        p += r, n -= r;
    }
    return 0;
}

static struct sockaddr_in addr_of(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int listener(int *port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = addr_of(0);
    socklen_t l = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 128)) return -1;
    getsockname(s, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return s;
}

static int dial(int port) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = addr_of(port);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) return -1;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return c;
}

static void *echo(void *arg) {
    int fd = (int)(intptr_t)arg;
    char b[64];
    while (full(fd, b, sizeof b, 0) == 0 && full(fd, b, sizeof b, 1) == 0) {}
    return NULL;
}

static void *drain(void *arg) {
    int fd = (int)(intptr_t)arg;
    static char b[CHUNK];
    uint64_t n;
    while (full(fd, &n, sizeof n, 0) == 0) {
        for (uint64_t i = 0; i < n; i++)
            if (full(fd, b, CHUNK, 0)) return NULL;
        if (full(fd, "k", 1, 1)) return NULL;
    }
    return NULL;
}

/* A connected client whose server end runs `fn` in a thread. */
static int pair_with(void *(*fn)(void *)) {
    int port, l = listener(&port);
    if (l < 0) return -1;
    int c = dial(port);
    int s = accept(l, NULL, NULL);
    close(l);
    if (c < 0 || s < 0) return -1;
    pthread_t t;
    pthread_create(&t, NULL, fn, (void *)(intptr_t)s);
    pthread_detach(t);
    return c;
}

static int rr_fd = -1, bulk_fd = -1, acc_l = -1, acc_port;

static int run(const char *name, long n, uint64_t *ns) {
    uint64_t t0 = now_ns();
    if (!strcmp(name, "ping")) {
    } else if (!strcmp(name, "connect_accept")) {
        for (long i = 0; i < n; i++) {
            int c = dial(acc_port);
            int a = accept(acc_l, NULL, NULL);
            if (c < 0 || a < 0) return -1;
            close(c), close(a);
        }
    } else if (!strcmp(name, "getsockname")) {
        struct sockaddr_in a;
        for (long i = 0; i < n; i++) {
            socklen_t l = sizeof a;
            if (getsockname(rr_fd, (struct sockaddr *)&a, &l)) return -1;
        }
    } else if (!strcmp(name, "tcp_rr")) {
        char b[64] = {0};
        for (long i = 0; i < n; i++)
            if (full(rr_fd, b, sizeof b, 1) || full(rr_fd, b, sizeof b, 0)) return -1;
    } else if (!strcmp(name, "tcp_bulk")) {
        uint64_t count = n;
        char k;
        if (full(bulk_fd, &count, sizeof count, 1)) return -1;
        for (long i = 0; i < n; i++)
            if (full(bulk_fd, chunk, CHUNK, 1)) return -1;
        if (full(bulk_fd, &k, 1, 0)) return -1;
    } else {
        return -2;
    }
    *ns = now_ns() - t0;
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    rr_fd = pair_with(echo);
    bulk_fd = pair_with(drain);
    acc_l = listener(&acc_port);
    if (rr_fd < 0 || bulk_fd < 0 || acc_l < 0) {
        printf("ERR setup\n");
        return 1;
    }
    char name[64];
    long n;
    while (scanf("%63s %ld", name, &n) == 2) {
        uint64_t ns = 0;
        int r = run(name, n, &ns);
        if (r == 0) printf("%llu\n", (unsigned long long)ns);
        else printf("ERR %s %s\n", name, r == -2 ? "unknown" : "failed");
    }
    return 0;
}
