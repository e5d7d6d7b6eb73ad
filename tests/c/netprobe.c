#define _GNU_SOURCE
/* Socket semantics a C program sees on loopback TCP/UDP, printed without
 * port numbers so a native run and a sandboxed one compare line by line:
 * SO_TYPE/SO_DOMAIN/SO_PROTOCOL, TCP_NODELAY round trip, non-blocking
 * connect + poll + SO_ERROR, accept4 flags, shutdown half-close, MSG_PEEK,
 * MSG_DONTWAIT, UDP sendto/recvfrom/connect, getsockname of an unbound
 * socket, EADDRINUSE, bad arguments. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"

static int opt(int fd, int level, int name) {
    int v = -1;
    socklen_t l = sizeof v;
    if (getsockopt(fd, level, name, &v, &l) < 0)
        return -errno;
    return v;
}

static int listener(void) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback4(0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    listen(s, 16);
    return s;
}

static void tcp(void) {
    int s = listener();
    int port = port_of(s);
    printf("type %d domain %d protocol %d\n", opt(s, SOL_SOCKET, SO_TYPE),
           opt(s, SOL_SOCKET, SO_DOMAIN), opt(s, SOL_SOCKET, SO_PROTOCOL));
    printf("acceptconn %d\n", opt(s, SOL_SOCKET, SO_ACCEPTCONN));
    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP);
    int one = 1;
    res("setsockopt nodelay", setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    printf("nodelay %d\n", opt(c, IPPROTO_TCP, TCP_NODELAY));
    res("setsockopt nodelay short", setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, 2));
    struct sockaddr_in a = loopback4(port);
    int r = connect(c, (struct sockaddr *)&a, sizeof a);
    printf("nonblocking connect %s\n", r == 0 ? "0" : strerrorname_np(errno));
    struct pollfd p = {.fd = c, .events = POLLOUT};
    res("poll writable", poll(&p, 1, 5000));
    printf("so_error %d\n", opt(c, SOL_SOCKET, SO_ERROR));
    res("connect again", connect(c, (struct sockaddr *)&a, sizeof a));
    struct sockaddr_in peer;
    socklen_t pl = 4; /* too short: truncated, full length reported */
    int conn = accept4(s, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK);
    printf("accept4 ok %d addrlen %u nonblock %d\n", conn >= 0, pl,
           (fcntl(conn, F_GETFL) & O_NONBLOCK) != 0);
    char buf[64];
    res("recv dontwait empty", recv(conn, buf, sizeof buf, MSG_DONTWAIT));
    res("send", send(c, "hello", 5, 0));
    p = (struct pollfd){.fd = conn, .events = POLLIN};
    res("poll readable", poll(&p, 1, 5000));
    res("peek", recv(conn, buf, sizeof buf, MSG_PEEK));
    res("recv", recv(conn, buf, sizeof buf, 0));
    res("shutdown wr", shutdown(c, SHUT_WR));
    p = (struct pollfd){.fd = conn, .events = POLLIN};
    poll(&p, 1, 5000);
    res("recv eof", recv(conn, buf, sizeof buf, 0));
    res("send back", send(conn, "bye", 3, 0));
    p = (struct pollfd){.fd = c, .events = POLLIN};
    poll(&p, 1, 5000);
    res("recv back", recv(c, buf, sizeof buf, 0));
    struct sockaddr_in b = loopback4(port);
    int d = socket(AF_INET, SOCK_STREAM, 0);
    res("bind in use", bind(d, (struct sockaddr *)&b, sizeof b));
    res("bind short", bind(d, (struct sockaddr *)&b, 8));
    struct sockaddr_in6 six = {.sin6_family = AF_INET6};
    res("bind wrong family", bind(d, (struct sockaddr *)&six, sizeof six));
    res("connect bad pointer", connect(d, (struct sockaddr *)8, sizeof b));
    res("getsockopt unknown ip", opt(d, IPPROTO_IP, 4242) == -ENOPROTOOPT ? -1 : 0);
    res("accept on udp", accept(socket(AF_INET, SOCK_DGRAM, 0), NULL, NULL));
    res("socket sctp", socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP));
    close(c), close(conn), close(s), close(d);
}

static void udp(void) {
    int r = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = loopback4(0);
    res("udp bind", bind(r, (struct sockaddr *)&a, sizeof a));
    int port = port_of(r);
    printf("udp type %d protocol %d\n", opt(r, SOL_SOCKET, SO_TYPE), opt(r, SOL_SOCKET, SO_PROTOCOL));
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = loopback4(port);
    res("sendto", sendto(s, "datagram", 8, 0, (struct sockaddr *)&to, sizeof to));
    char buf[64];
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    res("recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("from loopback %d same port %d len %u\n", from.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
           ntohs(from.sin_port) == port_of(s), fl);
    res("recvfrom dontwait", recvfrom(r, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl));
    res("sendto truncating", sendto(s, "0123456789", 10, 0, (struct sockaddr *)&to, sizeof to));
    res("recvfrom 4 trunc", recvfrom(r, buf, 4, MSG_TRUNC, (struct sockaddr *)&from, &fl));
    res("connect udp", connect(s, (struct sockaddr *)&to, sizeof to));
    res("send connected", send(s, "c", 1, 0));
    res("recv", recv(r, buf, sizeof buf, 0));
    struct sockaddr_in nobody = loopback4(9);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    res("sendto nobody", sendto(u, "x", 1, 0, (struct sockaddr *)&nobody, sizeof nobody));
    close(r), close(s), close(u);
}

/* Hostile arguments: bad pointers, lengths and flags. */
static void hostile(void) {
    int s = listener();
    int port = port_of(s);
    struct sockaddr_in a = loopback4(port);
    socklen_t l = sizeof a;
    int v = 1;
    socklen_t vl = 4, neg = (socklen_t)-1;
    res("getsockname bad len ptr", getsockname(s, (struct sockaddr *)&a, (socklen_t *)8));
    res("getsockname bad addr", getsockname(s, (struct sockaddr *)8, &l));
    l = (socklen_t)-5;
    res("getsockname negative len", getsockname(s, (struct sockaddr *)&a, &l));
    res("getsockopt bad len ptr", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, (socklen_t *)8));
    res("getsockopt negative len", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &neg));
    res("getsockopt bad value", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, (void *)8, &vl));
    res("setsockopt bad value", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (void *)8, 4));
    res("bind huge len", bind(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&a, 1000));
    res("connect zero len", connect(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&a, 0));
    res("accept4 bad flags", accept4(s, (struct sockaddr *)&a, &l, 0x40));
    res("socket bad flags", socket(AF_INET, SOCK_STREAM | 0x100, 0));
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = loopback4(port);
    res("sendto bad buffer", sendto(u, (void *)8, 10, 0, (struct sockaddr *)&to, sizeof to));
    res("sendto huge length", sendto(u, "x", 1u << 30, 0, (struct sockaddr *)&to, sizeof to));
    res("sendto bad addr", sendto(u, "x", 1, 0, (struct sockaddr *)8, sizeof to));
    char buf[16];
    struct sockaddr_in from;
    res("recvfrom empty bad len ptr",
        recvfrom(u, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, (socklen_t *)8));
    close(s), close(u);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int u = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    res("getsockname unbound", getsockname(u, (struct sockaddr *)&a, &l));
    printf("unbound port %d addr %u len %u\n", ntohs(a.sin_port), a.sin_addr.s_addr, l);
    res("getpeername unconnected", getpeername(u, (struct sockaddr *)&a, &l));
    tcp();
    udp();
    hostile();
    return 0;
}
