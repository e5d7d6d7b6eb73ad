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
 *   udp_rr          64-byte datagram to an echo thread and back, sendto and
 *                   recvfrom with addresses on both sides           [serviced]
 *   udp_rr_ancil    the same with IP_PKTINFO and IP_RECVTTL on both sockets,
 *                   recvmsg with a control buffer, and an IP_TTL control
 *                   message on every send (ancillary data)          [serviced]
 *   udp_rr_msg      the same through sendmsg and recvmsg with names but no
 *                   control messages (what udp_rr_ancil adds)       [serviced]
 *   udp_rr_conn     connected UDP sockets, send and recv             [native data]
 *   relay_rr        tcp_rr against an echo server on the host's 127.0.0.1
 *                   (port argv[1]; sandboxed: egress, through the relay)
 *   relay_bulk      tcp_bulk against a draining server on the host's
 *                   127.0.0.1 (port argv[2]; the same protocol as drain)
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

#include "guest.h"

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

static int listener(int *port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback4(0);
    socklen_t l = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 128)) return -1;
    getsockname(s, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return s;
}

static int dial(int port) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback4(port);
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

/* `ancil`: PLAIN sendto/recvfrom; MSG sendmsg/recvmsg; ANCIL those with
 * control messages. */
enum { PLAIN, ANCIL, MSG };

/* A UDP socket bound to an ephemeral 127.0.0.1 port; ANCIL asks for
 * IP_PKTINFO and IP_RECVTTL. */
static int udp_bound(int ancil, struct sockaddr_in *a) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    *a = loopback4(0);
    socklen_t l = sizeof *a;
    if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) ||
        getsockname(fd, (struct sockaddr *)a, &l))
        return -1;
    int one = 1;
    if (ancil == ANCIL && (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) ||
                  setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one)))
        return -1;
    return fd;
}

/* One datagram with its sender's address (and control messages). */
static ssize_t udp_recv(int fd, int ancil, void *b, size_t n, struct sockaddr_in *from) {
    socklen_t l = sizeof *from;
    if (ancil == PLAIN) return recvfrom(fd, b, n, 0, (struct sockaddr *)from, &l);
    char control[256];
    struct iovec iov = {b, n};
    struct msghdr m = {from, sizeof *from, &iov, 1, control, sizeof control, 0};
    ssize_t r = recvmsg(fd, &m, 0);
    return r < 0 || (ancil == ANCIL && m.msg_controllen == 0) ? -1 : r;
}

static ssize_t udp_send(int fd, int ancil, const void *b, size_t n, struct sockaddr_in *to) {
    if (ancil == PLAIN) return sendto(fd, b, n, 0, (struct sockaddr *)to, sizeof *to);
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {(void *)b, n};
    struct msghdr m = {to, sizeof *to, &iov, 1, u.buf, sizeof u.buf, 0};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = IPPROTO_IP, c->cmsg_type = IP_TTL, c->cmsg_len = CMSG_LEN(sizeof(int));
    int ttl = 9;
    memcpy(CMSG_DATA(c), &ttl, sizeof ttl);
    if (ancil == MSG) m.msg_control = NULL, m.msg_controllen = 0;
    return sendmsg(fd, &m, 0);
}

struct udp_echo { int fd, ancil, connected; };

static void *udp_echo(void *arg) {
    struct udp_echo *e = arg;
    char b[64];
    struct sockaddr_in from;
    for (;;) {
        if (e->connected) {
            ssize_t r = recv(e->fd, b, sizeof b, 0);
            if (r < 0 || send(e->fd, b, r, 0) != r) return NULL;
            continue;
        }
        ssize_t r = udp_recv(e->fd, e->ancil, b, sizeof b, &from);
        if (r < 0 || udp_send(e->fd, e->ancil, b, r, &from) != r) return NULL;
    }
}

/* A client socket and the address of its echo thread's socket;
 * `connected`: both connected to each other. */
static int udp_pair(int ancil, int connected, struct sockaddr_in *server) {
    static struct udp_echo echoes[4];
    static int used;
    struct sockaddr_in ca;
    int s = udp_bound(ancil, server), c = udp_bound(ancil, &ca);
    if (s < 0 || c < 0 || used == 4) return -1;
    if (connected && (connect(c, (struct sockaddr *)server, sizeof *server) ||
                      connect(s, (struct sockaddr *)&ca, sizeof ca)))
        return -1;
    echoes[used] = (struct udp_echo){s, ancil, connected};
    pthread_t t;
    pthread_create(&t, NULL, udp_echo, &echoes[used++]);
    pthread_detach(t);
    return c;
}

static int udp_rr(int fd, int ancil, struct sockaddr_in *to, long n) {
    char b[64] = {0};
    struct sockaddr_in from;
    for (long i = 0; i < n; i++)
        if (udp_send(fd, ancil, b, sizeof b, to) != sizeof b ||
            udp_recv(fd, ancil, b, sizeof b, &from) != sizeof b)
            return -1;
    return 0;
}

static int rr_fd = -1, bulk_fd = -1, acc_l = -1, acc_port;
static int relay_rr_fd = -1, relay_bulk_fd = -1;
static int udp_fd = -1, udp_ancil_fd = -1, udp_msg_fd = -1, udp_conn_fd = -1;
static struct sockaddr_in udp_to, udp_ancil_to, udp_msg_to, udp_conn_to;

/* n 64-byte requests on `fd`, each answered by 64 bytes. */
static int rr(int fd, long n) {
    char b[64] = {0};
    for (long i = 0; i < n; i++)
        if (full(fd, b, sizeof b, 1) || full(fd, b, sizeof b, 0)) return -1;
    return 0;
}

/* n chunks to a draining peer (drain's protocol), acknowledged once. */
static int bulk(int fd, long n) {
    uint64_t count = n;
    char k;
    if (fd < 0 || full(fd, &count, sizeof count, 1)) return -1;
    for (long i = 0; i < n; i++)
        if (full(fd, chunk, CHUNK, 1)) return -1;
    return full(fd, &k, 1, 0);
}

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
        if (rr(rr_fd, n)) return -1;
    } else if (!strcmp(name, "relay_rr")) {
        if (relay_rr_fd < 0 || rr(relay_rr_fd, n)) return -1;
    } else if (!strcmp(name, "relay_bulk")) {
        if (bulk(relay_bulk_fd, n)) return -1;
    } else if (!strcmp(name, "udp_rr")) {
        if (udp_rr(udp_fd, PLAIN, &udp_to, n)) return -1;
    } else if (!strcmp(name, "udp_rr_ancil")) {
        if (udp_rr(udp_ancil_fd, ANCIL, &udp_ancil_to, n)) return -1;
    } else if (!strcmp(name, "udp_rr_msg")) {
        if (udp_rr(udp_msg_fd, MSG, &udp_msg_to, n)) return -1;
    } else if (!strcmp(name, "udp_rr_conn")) {
        char b[64] = {0};
        for (long i = 0; i < n; i++)
            if (send(udp_conn_fd, b, sizeof b, 0) != sizeof b ||
                recv(udp_conn_fd, b, sizeof b, 0) != sizeof b)
                return -1;
    } else if (!strcmp(name, "tcp_bulk")) {
        if (bulk(bulk_fd, n)) return -1;
    } else {
        return -2;
    }
    *ns = now_ns() - t0;
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3) {
        relay_rr_fd = dial(atoi(argv[1]));
        relay_bulk_fd = dial(atoi(argv[2]));
        if (relay_rr_fd < 0 || relay_bulk_fd < 0) {
            printf("ERR setup relay\n");
            return 1;
        }
    }
    rr_fd = pair_with(echo);
    bulk_fd = pair_with(drain);
    acc_l = listener(&acc_port);
    udp_fd = udp_pair(PLAIN, 0, &udp_to);
    udp_ancil_fd = udp_pair(ANCIL, 0, &udp_ancil_to);
    udp_msg_fd = udp_pair(MSG, 0, &udp_msg_to);
    udp_conn_fd = udp_pair(PLAIN, 1, &udp_conn_to);
    if (rr_fd < 0 || bulk_fd < 0 || acc_l < 0 || udp_fd < 0 || udp_ancil_fd < 0 ||
        udp_msg_fd < 0 || udp_conn_fd < 0) {
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
