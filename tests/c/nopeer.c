#define _GNU_SOURCE
/* Sends and receives on internet sockets that have no peer, as Linux
 * answers them (tests/net/udp.rs compares a native run and a sandboxed
 * one; the lines tests/net/udp.rs lists as known differences are calls
 * that run natively on the sandbox's host socket, see docs/network.md,
 * "UDP disconnect"):
 * - UDP, unbound, bound to port 0 and bound to a port of its own, each
 *   family: a send without an address is EDESTADDRREQ (sendto with a
 *   NULL address, send, write, sendmsg without a name, sendmmsg), after
 *   the autobind inet_send_prepare does first; a receive with
 *   MSG_DONTWAIT is EAGAIN; connect(AF_UNSPEC) of a socket never
 *   connected is 0 and releases a port the socket did not bind itself.
 * - TCP, never connected, bound, listening: a send is EPIPE (with
 *   SIGPIPE unless MSG_NOSIGNAL), a receive ENOTCONN, connect(AF_UNSPEC)
 *   0.
 * - UDP disconnect after an autobind: the port is released (another
 *   socket may bind it) and the next send autobinds a new one.
 * - What a connected UDP socket has queued stays through a disconnect
 *   and a connect elsewhere, and its peer is told nothing.
 * Printed without port numbers. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "guest.h"

static volatile sig_atomic_t pipes;

static void on_pipe(int sig) {
    (void)sig;
    pipes++;
}

/* The result of a send on a TCP socket, then how many SIGPIPEs it raised. */
static void sent(const char *what, long r) {
    char label[128];
    res(what, r);
    snprintf(label, sizeof label, "%s sigpipe", what);
    res(label, pipes);
    pipes = 0;
}

/* `what` and `step` as one label (in a buffer of the caller's). */
#define LABEL(step) (snprintf(label, sizeof label, "%s %s", what, step), label)

/* The wildcard address of `domain` and `port` (its length in `*len`). */
static struct sockaddr_storage any(int domain, int port, socklen_t *len) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_family = domain;
    if (domain == AF_INET) {
        ((struct sockaddr_in *)&ss)->sin_port = htons(port);
        *len = sizeof(struct sockaddr_in);
    } else {
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
        *len = sizeof(struct sockaddr_in6);
    }
    return ss;
}

/* The loopback address of `domain` and `port` (its length in `*len`). */
static struct sockaddr_storage loopback(int domain, int port, socklen_t *len) {
    struct sockaddr_storage ss = any(domain, port, len);
    if (domain == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else
        ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
    return ss;
}

/* A port free at the time (bound by a socket that then closed). */
static int free_port(int domain) {
    socklen_t len;
    struct sockaddr_storage a = any(domain, 0, &len);
    int t = socket(domain, SOCK_DGRAM, 0);
    bind(t, (struct sockaddr *)&a, len);
    int p = port_of(t);
    close(t);
    return p;
}

/* A UDP socket of `domain` bound as `how` says ("none", "port0": the
 * wildcard and port 0, "port": the wildcard and a port of its own). */
static int udp(int domain, const char *how) {
    int s = socket(domain, SOCK_DGRAM, 0);
    socklen_t len;
    struct sockaddr_storage a = any(domain, strcmp(how, "port") ? 0 : free_port(domain), &len);
    if (strcmp(how, "none") != 0)
        bind(s, (struct sockaddr *)&a, len);
    return s;
}

/* Each way to send without an address on a fresh UDP socket bound as
 * `how`, whether it had a port after, and the disconnect. */
static void udp_sends(int domain, const char *how) {
    char what[64], label[160], buf[8];
    snprintf(what, sizeof what, "udp %s %s", domain == AF_INET ? "inet" : "inet6", how);
    struct iovec iov = {.iov_base = "x", .iov_len = 1}, none = {.iov_base = "x", .iov_len = 0};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    struct msghdr m0 = {.msg_iov = &none, .msg_iovlen = 1};
    struct mmsghdr mm = {.msg_hdr = m};
    int s = udp(domain, how);
    res(LABEL("sendto NULL empty"), sendto(s, "x", 0, 0, NULL, 0));
    res(LABEL("sendto NULL empty bound"), port_of(s) != 0);
    close(s), s = udp(domain, how);
    res(LABEL("sendmsg"), sendmsg(s, &m, 0));
    res(LABEL("sendmsg bound"), port_of(s) != 0);
    res(LABEL("sendmsg empty"), sendmsg(s, &m0, 0));
    res(LABEL("sendmsg nosignal"), sendmsg(s, &m, MSG_NOSIGNAL));
    res(LABEL("sendto NULL"), sendto(s, "x", 1, 0, NULL, 0));
    res(LABEL("send"), send(s, "x", 1, 0));
    res(LABEL("write"), write(s, "x", 1));
    res(LABEL("write empty"), write(s, "x", 0));
    res(LABEL("sendmmsg"), sendmmsg(s, &mm, 1, 0));
    res(LABEL("recv dontwait"), recv(s, buf, sizeof buf, MSG_DONTWAIT));
    struct msghdr r = {.msg_iov = &(struct iovec){.iov_base = buf, .iov_len = sizeof buf},
                       .msg_iovlen = 1};
    res(LABEL("recvmsg dontwait"), recvmsg(s, &r, MSG_DONTWAIT));
    struct sockaddr_storage from;
    socklen_t flen = sizeof from;
    res(LABEL("recvfrom dontwait"),
        recvfrom(s, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &flen));
    int mine = port_of(s);
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res(LABEL("disconnect"), connect(s, &un, sizeof un));
    res(LABEL("port kept"), port_of(s) == mine);
    res(LABEL("disconnect short"), connect(s, &un, sizeof un.sa_family));
    close(s);
}

/* Sends and receives on a TCP socket of `domain` as `state` ("fresh",
 * "bound", "listening") left it. */
static void tcp(int domain, const char *state) {
    char what[64], label[160], buf[8];
    snprintf(what, sizeof what, "tcp %s %s", domain == AF_INET ? "inet" : "inet6", state);
    int s = socket(domain, SOCK_STREAM, 0);
    socklen_t len;
    struct sockaddr_storage a = any(domain, 0, &len);
    if (strcmp(state, "fresh") != 0)
        bind(s, (struct sockaddr *)&a, len);
    if (strcmp(state, "listening") == 0)
        listen(s, 1);
    struct iovec iov = {.iov_base = "x", .iov_len = 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    sent(LABEL("send empty"), send(s, "x", 0, 0));
    sent(LABEL("sendmsg"), sendmsg(s, &m, 0));
    sent(LABEL("sendmsg nosignal"), sendmsg(s, &m, MSG_NOSIGNAL));
    sent(LABEL("send nosignal"), send(s, "x", 1, MSG_NOSIGNAL));
    sent(LABEL("send"), send(s, "x", 1, 0));
    sent(LABEL("write"), write(s, "x", 1));
    socklen_t dlen;
    struct sockaddr_storage d = loopback(domain, 9, &dlen);
    sent(LABEL("sendto address"), sendto(s, "x", 1, 0, (struct sockaddr *)&d, dlen));
    struct msghdr r = {.msg_iov = &(struct iovec){.iov_base = buf, .iov_len = sizeof buf},
                       .msg_iovlen = 1};
    res(LABEL("recvmsg"), recvmsg(s, &r, 0));
    res(LABEL("recvmsg dontwait"), recvmsg(s, &r, MSG_DONTWAIT));
    struct sockaddr_storage from;
    socklen_t flen = sizeof from;
    res(LABEL("recvfrom address"), recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen));
    res(LABEL("recv"), recv(s, buf, sizeof buf, MSG_DONTWAIT));
    res(LABEL("read"), read(s, buf, sizeof buf));
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res(LABEL("disconnect"), connect(s, &un, sizeof un));
    close(s);
}

/* A UDP socket of `domain` that autobound by connecting to a receiver
 * (`connects`) or sending to it, then disconnected: its port is
 * released, another socket may bind it, and its next send autobinds a
 * new one. */
static void released(int domain, int connects) {
    char what[64], label[160];
    snprintf(what, sizeof what, "release %s %s", domain == AF_INET ? "inet" : "inet6",
             connects ? "connected" : "sent");
    socklen_t len;
    struct sockaddr_storage d = loopback(domain, 0, &len);
    int r = socket(domain, SOCK_DGRAM, 0);
    bind(r, (struct sockaddr *)&d, len);
    d = loopback(domain, port_of(r), &len);
    int u = socket(domain, SOCK_DGRAM, 0);
    if (connects)
        res(LABEL("connect"), connect(u, (struct sockaddr *)&d, len));
    else
        res(LABEL("sendto"), sendto(u, "x", 1, 0, (struct sockaddr *)&d, len));
    int old = port_of(u);
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res(LABEL("disconnect"), connect(u, &un, sizeof un));
    res(LABEL("port 0"), port_of(u) == 0);
    int o = socket(domain, SOCK_DGRAM, 0);
    struct sockaddr_storage b = any(domain, old, &len);
    res(LABEL("other binds the old port"), bind(o, (struct sockaddr *)&b, len));
    res(LABEL("sendto again"), sendto(u, "y", 1, 0, (struct sockaddr *)&d, len));
    res(LABEL("a new port"), port_of(u) != old && port_of(u) != 0);
    close(o), close(u), close(r);
}

/* Takes one datagram off `u` (waiting at most 5 s): its data, and
 * which of the ports `p1`, `p2` it came from. */
static void take(const char *what, int u, int p1, int p2) {
    char buf[8], label[256];
    struct sockaddr_storage from;
    socklen_t flen;
    if (received(what, u, buf, sizeof buf, &from, &flen) < 0)
        return;
    int port = port_in(&from);
    snprintf(label, sizeof label, "%s %s from", what, buf);
    res(label, port == p1 ? 1 : port == p2 ? 2 : 0);
}

/* A UDP socket of `domain` bound to a port of its own, connected to `r1`
 * which is connected back to it, with a datagram from `r1` queued: a
 * disconnect and a connect to `r2` keep what is queued (from the same
 * sender), and `r1` is told nothing. */
static void kept(int domain) {
    char what[64], label[160];
    snprintf(what, sizeof what, "kept %s", domain == AF_INET ? "inet" : "inet6");
    socklen_t len;
    struct sockaddr_storage a = loopback(domain, 0, &len);
    int r1 = socket(domain, SOCK_DGRAM, 0), r2 = socket(domain, SOCK_DGRAM, 0);
    bind(r1, (struct sockaddr *)&a, len);
    bind(r2, (struct sockaddr *)&a, len);
    int p1 = port_of(r1), p2 = port_of(r2);
    int u = socket(domain, SOCK_DGRAM, 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_storage b = any(domain, free_port(domain), &len);
    res(LABEL("bind"), bind(u, (struct sockaddr *)&b, len));
    struct sockaddr_storage to1 = loopback(domain, p1, &len), to2 = loopback(domain, p2, &len);
    struct sockaddr_storage back = loopback(domain, port_of(u), &len);
    res(LABEL("connect"), connect(u, (struct sockaddr *)&to1, len));
    res(LABEL("peer connects back"), connect(r1, (struct sockaddr *)&back, len));
    res(LABEL("peer sends"), send(r1, "a", 1, 0));
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res(LABEL("disconnect"), connect(u, &un, sizeof un));
    res(LABEL("peer sends again"), send(r1, "b", 1, 0));
    res(LABEL("connect elsewhere"), connect(u, (struct sockaddr *)&to2, len));
    res(LABEL("other peer sends"), sendto(r2, "c", 1, 0, (struct sockaddr *)&back, len));
    for (int i = 0; i < 3; i++)
        take(LABEL("received"), u, p1, p2);
    close(u), close(r1), close(r2);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, on_pipe);
    const char *hows[] = {"none", "port0", "port"};
    const char *states[] = {"fresh", "bound", "listening"};
    for (int f = 0; f < 2; f++) {
        int domain = f ? AF_INET6 : AF_INET;
        for (int h = 0; h < 3; h++)
            udp_sends(domain, hows[h]);
        for (int t = 0; t < 3; t++)
            tcp(domain, states[t]);
        released(domain, 1);
        released(domain, 0);
        kept(domain);
    }
    return 0;
}
