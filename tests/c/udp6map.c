#define _GNU_SOURCE
/* A UDP IPv6 socket talking to IPv4 (RFC 4038's v4-mapped addresses), as
 * Linux's ip6_datagram_connect and udpv6_sendmsg allow it: connect with an
 * AF_INET sockaddr or a v4-mapped AF_INET6 one, getsockname (the v4-mapped
 * source), getpeername, send, the AF_INET receiver's view of the sender,
 * the reply and its v4-mapped source; sendto without connect; what a
 * v4-mapped socket can still reach; disconnect (AF_UNSPEC) and reconnect
 * to the other family, as glibc's getaddrinfo does to sort its answers;
 * IPV6_V6ONLY's refusals; what a dual-stack receiver bound to `::` sees
 * of a sender bound to `::` (v4-mapped when the datagram went over IPv4);
 * what a disconnect (AF_UNSPEC) keeps of a socket's name (Linux's
 * __udp_disconnect releases a port and an address not bound explicitly)
 * and that anyone may send to it again. Printed without port numbers
 * (only whether a port is the one expected), so a native run and a
 * sandboxed one compare line by line. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"

/* An address as "family ip port-flag": the port printed as "port" when it
 * is `want`, "port0" when 0, "port?" otherwise. */
static void show(const char *what, const struct sockaddr_storage *ss, socklen_t len, int want) {
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = -1;
    const char *fam = "other";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        port = ntohs(a->sin_port);
        fam = "inet";
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        fam = "inet6";
    }
    const char *p = port == 0 ? "port0" : port == want ? "port" : "port?";
    printf("%s: %s %s %s len %d\n", what, fam, ip, p, (int)len);
}

static void name(const char *what, int fd, int peer, int want) {
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    memset(&ss, 0, sizeof ss);
    int r = peer ? getpeername(fd, (struct sockaddr *)&ss, &l)
                 : getsockname(fd, (struct sockaddr *)&ss, &l);
    if (r < 0)
        res(what, r);
    else
        show(what, &ss, l, want);
}

static struct sockaddr_in6 in6(const char *ip, int port) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    inet_pton(AF_INET6, ip, &a.sin6_addr);
    return a;
}

static int receiver(int domain) {
    int s = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (domain == AF_INET) {
        struct sockaddr_in a = loopback4(0);
        bind(s, (struct sockaddr *)&a, sizeof a);
    } else {
        int one = 1;
        setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        struct sockaddr_in6 a = in6("::1", 0);
        bind(s, (struct sockaddr *)&a, sizeof a);
    }
    return s;
}

static int udp6(int v6only) {
    int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    return s;
}

/* Receives one datagram on `fd`, showing its data and sender (whose port
 * should be `want`); replies to the sender with `reply` when not NULL. */
static void take(const char *what, int fd, int want, const char *reply) {
    char buf[64], label[128];
    struct sockaddr_storage ss;
    socklen_t l;
    if (received(what, fd, buf, sizeof buf, &ss, &l) < 0)
        return;
    snprintf(label, sizeof label, "%s %s from", what, buf);
    show(label, &ss, l, want);
    if (reply) {
        snprintf(label, sizeof label, "%s reply", what);
        res(label, sendto(fd, reply, strlen(reply), 0, (struct sockaddr *)&ss, l));
    }
}

/* `what` and `step` as one label (in a buffer of the caller's). */
#define LABEL(step) (snprintf(label, sizeof label, "%s %s", what, step), label)

/* After `u` sent "ping" to the IPv4 receiver `r4` on port `p4`: the names
 * of `u`, the ping as `r4` sees it, the pong back; then a datagram to an
 * IPv6 receiver on ::1. */
static void exchange(const char *what, int u, int r4, int p4) {
    char label[128];
    int mine = port_of(u);
    name(LABEL("getsockname"), u, 0, mine);
    name(LABEL("getpeername"), u, 1, p4);
    take(LABEL("ipv4 received"), r4, mine, "pong");
    take(LABEL("udp6 received"), u, p4, NULL);
    int r6 = receiver(AF_INET6), p6 = port_of(r6);
    struct sockaddr_in6 v6 = in6("::1", p6);
    res(LABEL("sendto ::1"), sendto(u, "six", 3, MSG_DONTWAIT, (struct sockaddr *)&v6, sizeof v6));
    close(r6);
}

/* A udp6 socket talking to the IPv4 receiver, addressed with an AF_INET
 * sockaddr or a v4-mapped one when `mapped`. Connected (`connects`): it
 * then reaches IPv4 only. Sending with sendto alone: it keeps the name
 * `::` (a port only). */
static void talk(const char *what, int mapped, int connects) {
    int r4 = receiver(AF_INET), p4 = port_of(r4);
    int u = udp6(0);
    char label[128];
    struct sockaddr_in a4 = loopback4(p4);
    struct sockaddr_in6 m6 = in6("::ffff:127.0.0.1", p4);
    struct sockaddr *to = mapped ? (struct sockaddr *)&m6 : (struct sockaddr *)&a4;
    socklen_t tolen = mapped ? sizeof m6 : sizeof a4;
    if (connects) {
        res(LABEL("connect"), connect(u, to, tolen));
        res(LABEL("send"), send(u, "ping", 4, 0));
    } else {
        name(LABEL("getsockname before"), u, 0, 0);
        res(LABEL("sendto"), sendto(u, "ping", 4, 0, to, tolen));
    }
    exchange(what, u, r4, p4);
    if (connects) {
        struct sockaddr_in6 v6 = in6("::1", p4);
        res(LABEL("connect ::1"), connect(u, (struct sockaddr *)&v6, sizeof v6));
        name(LABEL("getsockname after"), u, 0, port_of(u));
    }
    close(u), close(r4);
}

/* A dual-stack socket bound to `::` keeps that name; it reaches both. */
static void wildcard(void) {
    int r4 = receiver(AF_INET), p4 = port_of(r4);
    int u = udp6(0);
    struct sockaddr_in6 any = in6("::", 0);
    res("wildcard bind", bind(u, (struct sockaddr *)&any, sizeof any));
    int mine = port_of(u);
    name("wildcard getsockname", u, 0, mine);
    struct sockaddr_in6 m6 = in6("::ffff:127.0.0.1", p4);
    res("wildcard sendto", sendto(u, "ping", 4, 0, (struct sockaddr *)&m6, sizeof m6));
    name("wildcard getsockname after sendto", u, 0, mine);
    take("wildcard ipv4 received", r4, mine, "pong");
    take("wildcard udp6 received", u, p4, NULL);
    close(u), close(r4);
}

/* glibc's getaddrinfo: one udp6 socket connected to ::1, disconnected
 * (AF_UNSPEC), connected to 127.0.0.1 (AF_INET), its source read back. */
static void resorted(void) {
    int u = udp6(0);
    struct sockaddr_in6 v6 = in6("::1", 80);
    struct sockaddr_in a4 = loopback4(80);
    res("resort connect ::1", connect(u, (struct sockaddr *)&v6, sizeof v6));
    int mine = port_of(u);
    name("resort getsockname v6", u, 0, mine);
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res("resort disconnect", connect(u, &un, sizeof un));
    res("resort connect 127.0.0.1", connect(u, (struct sockaddr *)&a4, sizeof a4));
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    memset(&ss, 0, sizeof ss);
    getsockname(u, (struct sockaddr *)&ss, &l);
    printf("resort getsockname v4: family %d mapped %d len %d\n", ss.ss_family,
           IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr), (int)l);
    name("resort getpeername v4", u, 1, 80);
    close(u);
}

/* IPV6_V6ONLY: no IPv4 at all. */
static void v6only(void) {
    int r4 = receiver(AF_INET), p4 = port_of(r4);
    struct sockaddr_in a4 = loopback4(p4);
    struct sockaddr_in6 m6 = in6("::ffff:127.0.0.1", p4);
    int u = udp6(1);
    res("v6only connect inet", connect(u, (struct sockaddr *)&a4, sizeof a4));
    res("v6only connect mapped", connect(u, (struct sockaddr *)&m6, sizeof m6));
    res("v6only sendto inet", sendto(u, "x", 1, 0, (struct sockaddr *)&a4, sizeof a4));
    res("v6only sendto mapped", sendto(u, "x", 1, 0, (struct sockaddr *)&m6, sizeof m6));
    name("v6only getsockname", u, 0, 0);
    close(u), close(r4);
}

/* The other way: an IPv4 socket's datagram to a dual-stack udp6 socket
 * bound to `::`, which sees it from ::ffff:127.0.0.1. */
static void toward_udp6(void) {
    int u = udp6(0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in6 any = in6("::", 0);
    bind(u, (struct sockaddr *)&any, sizeof any);
    int p6 = port_of(u);
    int s4 = receiver(AF_INET), p4 = port_of(s4);
    struct sockaddr_in a4 = loopback4(p6);
    res("from ipv4 sendto", sendto(s4, "hi", 2, 0, (struct sockaddr *)&a4, sizeof a4));
    take("from ipv4 udp6 received", u, p4, "back");
    take("from ipv4 ipv4 received", s4, p6, NULL);
    close(s4), close(u);
}

/* A dual-stack receiver bound to `::` (`r6`, port `p6`) and a udp6
 * socket bound to `::` that sends it "ping" to `to`: the sender as `r6`
 * sees it (peeked, then taken), and `r6`'s reply as the sender sees it. */
static void dual_one(const char *what, int u, int r6, int p6, const struct sockaddr *to,
                     socklen_t tolen) {
    char label[128];
    if (to)
        res(LABEL("sendto"), sendto(u, "ping", 4, 0, to, tolen));
    else
        res(LABEL("send"), send(u, "ping", 4, 0));
    int mine = port_of(u);
    char buf[8];
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    memset(&ss, 0, sizeof ss);
    ssize_t n = recvfrom(r6, buf, sizeof buf, MSG_PEEK, (struct sockaddr *)&ss, &l);
    if (n < 0)
        res(LABEL("peek"), n);
    else
        show(LABEL("peek from"), &ss, l, mine);
    take(LABEL("dual received"), r6, mine, "pong");
    take(LABEL("reply received"), u, p6, NULL);
}

/* What a dual-stack receiver sees of senders bound to `::`: over IPv4
 * (an AF_INET or v4-mapped destination, or connected to one) from
 * ::ffff:127.0.0.1, over IPv6 from ::1; an AF_INET receiver from
 * 127.0.0.1. */
static void dual_stack(void) {
    int r6 = udp6(0);
    struct sockaddr_in6 any = in6("::", 0);
    bind(r6, (struct sockaddr *)&any, sizeof any);
    int p6 = port_of(r6);
    struct sockaddr_in a4 = loopback4(p6);
    struct sockaddr_in6 m6 = in6("::ffff:127.0.0.1", p6), l6 = in6("::1", p6);
    int u = udp6(0);
    dual_one("dual inet", u, r6, p6, (struct sockaddr *)&a4, sizeof a4);
    dual_one("dual mapped", u, r6, p6, (struct sockaddr *)&m6, sizeof m6);
    dual_one("dual ::1", u, r6, p6, (struct sockaddr *)&l6, sizeof l6);
    int r4 = receiver(AF_INET);
    struct sockaddr_in to4 = loopback4(port_of(r4));
    res("dual to ipv4 sendto", sendto(u, "ping", 4, 0, (struct sockaddr *)&to4, sizeof to4));
    take("dual to ipv4 received", r4, port_of(u), NULL);
    close(u), close(r4);
    u = udp6(0);
    res("dual connected connect", connect(u, (struct sockaddr *)&a4, sizeof a4));
    dual_one("dual connected", u, r6, p6, NULL, 0);
    close(u), close(r6);
}

/* `ip` and `port` as an address of `domain` (its length in `*len`). */
static struct sockaddr_storage at(int domain, const char *ip, int port, socklen_t *len) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (domain == AF_INET) {
        struct sockaddr_in a = loopback4(port);
        inet_pton(AF_INET, ip, &a.sin_addr);
        memcpy(&ss, &a, *len = sizeof a);
    } else {
        struct sockaddr_in6 a = in6(ip, port);
        memcpy(&ss, &a, *len = sizeof a);
    }
    return ss;
}

/* A socket of `domain` bound as `how` says ("none"; "port0": the
 * wildcard and port 0; "addr0": loopback and port 0; "port": the
 * wildcard and a port of its choosing), connected to the receiver `r`
 * or having sent to it, then disconnected: its names, a send that
 * autobinds again, the reply, and a datagram from another socket. */
static void disconnected(int domain, const char *how, int connects) {
    int v4 = domain == AF_INET;
    const char *lo = v4 ? "127.0.0.1" : "::1", *any = v4 ? "0.0.0.0" : "::";
    int r = receiver(domain), pr = port_of(r), fixed = 0;
    int u = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    socklen_t blen, dlen;
    struct sockaddr_storage b = at(domain, strcmp(how, "addr0") ? any : lo, 0, &blen);
    if (strcmp(how, "port") == 0) {
        int t = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        bind(t, (struct sockaddr *)&b, blen);
        fixed = port_of(t);
        close(t);
        b = at(domain, any, fixed, &blen);
    }
    if (strcmp(how, "none") != 0)
        bind(u, (struct sockaddr *)&b, blen);
    struct sockaddr_storage d = at(domain, lo, pr, &dlen);
    char label[128], what[64];
    snprintf(what, sizeof what, "disconnect %s %s %s", v4 ? "inet" : "inet6", how,
             connects ? "connected" : "sent");
    if (connects)
        res(LABEL("connect"), connect(u, (struct sockaddr *)&d, dlen));
    else
        res(LABEL("sendto"), sendto(u, "x", 1, 0, (struct sockaddr *)&d, dlen));
    int mine = port_of(u);
    name(LABEL("getsockname"), u, 0, mine);
    struct sockaddr un = {.sa_family = AF_UNSPEC};
    res(LABEL("disconnect"), connect(u, &un, sizeof un));
    name(LABEL("getsockname after"), u, 0, mine);
    name(LABEL("getpeername after"), u, 1, pr);
    res(LABEL("disconnect again"), connect(u, &un, sizeof un));
    if (!connects)
        take(LABEL("first"), r, mine, NULL);
    res(LABEL("sendto after"), sendto(u, "y", 1, 0, (struct sockaddr *)&d, dlen));
    int again = port_of(u);
    name(LABEL("getsockname resent"), u, 0, again);
    take(LABEL("resent"), r, again, "z");
    take(LABEL("reply"), u, pr, NULL);
    int o = receiver(domain);
    socklen_t ulen;
    struct sockaddr_storage to_u = at(domain, lo, again, &ulen);
    res(LABEL("other sendto"), sendto(o, "o", 1, 0, (struct sockaddr *)&to_u, ulen));
    take(LABEL("other received"), u, port_of(o), NULL);
    close(o), close(u), close(r);
}

/* Every disconnect case, each family. */
static void disconnects(void) {
    const char *hows[] = {"none", "port0", "addr0", "port"};
    for (int d = 0; d < 2; d++)
        for (int h = 0; h < 4; h++)
            for (int c = 0; c < 2; c++)
                disconnected(d ? AF_INET6 : AF_INET, hows[h], c);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    talk("inet", 0, 1);
    talk("mapped", 1, 1);
    talk("sendto inet", 0, 0);
    talk("sendto mapped", 1, 0);
    wildcard();
    resorted();
    v6only();
    toward_udp6();
    dual_stack();
    disconnects();
    return 0;
}
