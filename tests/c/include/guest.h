/* What the C guests of tests/c share (tests/common/cprogs.rs builds each
 * with `-I tests/c/include`): a call's result as one line, the loopback
 * address of a port, the port of an address or a socket, and a datagram
 * received with its sender. Guests print no
 * port numbers, so a native run and a sandboxed one compare line by line.
 * Define _GNU_SOURCE before any include (strerrorname_np). */
#ifndef GUEST_H
#define GUEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* "WHAT = R", or "WHAT = -1 ERRNONAME" when the call failed. */
static inline void res(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 %s\n", what, strerrorname_np(errno));
    else
        printf("%s = %ld\n", what, r);
}

/* 127.0.0.1 and `port`. */
static inline struct sockaddr_in loopback4(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* The port of an AF_INET or AF_INET6 address. */
static inline int port_in(const struct sockaddr_storage *ss) {
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* The port `fd` is bound to (AF_INET or AF_INET6); -1 when getsockname
 * fails. */
static inline int port_of(int fd) {
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
        return -1;
    return port_in(&ss);
}

/* Receives one datagram on `fd` into `buf` (NUL-terminated, so at most
 * `size - 1` bytes) and its sender into `from` (its length in `*len`).
 * A failure prints "WHAT = -1 ERRNONAME" and returns -1. */
static inline ssize_t received(const char *what, int fd, char *buf, size_t size,
                               struct sockaddr_storage *from, socklen_t *len) {
    *len = sizeof *from;
    memset(from, 0, sizeof *from);
    ssize_t n = recvfrom(fd, buf, size - 1, 0, (struct sockaddr *)from, len);
    if (n < 0)
        res(what, n);
    else
        buf[n] = 0;
    return n;
}

#endif
