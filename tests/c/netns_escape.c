/* netns_escape NAME [PORT]: try to reach the abstract unix name NAME, which
 * a host process bound in the host's network namespace, through the
 * sandbox's TCP/UDP sockets by every call that takes an AF_UNIX address
 * (sendmsg with MSG_NOSIGNAL, sendmmsg, sendto, connect; all serviced,
 * each answered as Linux's TCP and UDP answer); with PORT, also through a UDP socket connected to
 * 127.0.0.1:PORT (an egress relay's socket when --allow-net names it).
 * Last, a plain AF_UNIX socket of the program's own: natively it reaches
 * NAME (the control), sandboxed it lives in the sandbox's namespace; and
 * that socket sends to the unix name of one of the program's UDP sockets,
 * found in /proc/net/unix, else learned from a datagram the UDP socket
 * sends to a unix socket of ours, else (the sandbox hides the netstack's
 * names and refuses that datagram) asked of whoever runs the program:
 * it prints "ask PORT" and reads the name (or an empty line: "none
 * listed") from stdin, as the driver reads it in the sandbox's network
 * namespace from outside.
 * Prints one line per try: the errno name, or "reached". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un addr;
static socklen_t addr_len;

static void res(const char *what, long r) {
    printf("%s %s\n", what, r < 0 ? strerrorname_np(errno) : "reached");
}

/* The passing calls, then the serviced ones, on datagram socket u. */
static void datagram_tries(const char *kind, int u) {
    char what[64];
    struct iovec iov = {.iov_base = "x", .iov_len = 1};
    struct msghdr m = {.msg_name = &addr, .msg_namelen = addr_len, .msg_iov = &iov, .msg_iovlen = 1};
    snprintf(what, sizeof what, "%s sendmsg nosignal", kind);
    res(what, sendmsg(u, &m, MSG_NOSIGNAL | MSG_DONTWAIT));
    struct mmsghdr mm = {.msg_hdr = m};
    snprintf(what, sizeof what, "%s sendmmsg", kind);
    res(what, sendmmsg(u, &mm, 1, MSG_DONTWAIT));
    snprintf(what, sizeof what, "%s sendto", kind);
    res(what, sendto(u, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&addr, addr_len));
}

/* The unix name of netstack socket b, as a datagram from it shows it to
 * a unix socket of ours; -1 when b cannot send to one (natively). */
static int learn_name(int b, struct sockaddr_un *from, socklen_t *len) {
    int probe = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un pa = {.sun_family = AF_UNIX};
    int n = snprintf(pa.sun_path + 1, sizeof pa.sun_path - 1, "netns-escape-%d", (int)getpid());
    socklen_t pl = offsetof(struct sockaddr_un, sun_path) + 1 + n;
    struct iovec iov = {.iov_base = "x", .iov_len = 1};
    struct msghdr m = {.msg_name = &pa, .msg_namelen = pl, .msg_iov = &iov, .msg_iovlen = 1};
    char c;
    int ok = probe >= 0 && bind(probe, (struct sockaddr *)&pa, pl) == 0 &&
             sendmsg(b, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 &&
             recvfrom(probe, &c, 1, MSG_DONTWAIT, (struct sockaddr *)from, len) == 1 &&
             *len > offsetof(struct sockaddr_un, sun_path) + 1 && from->sun_path[0] == 0;
    if (probe >= 0) close(probe);
    return ok ? 0 : -1;
}

/* Our own unix socket to the unix name behind a bound UDP socket that
 * the supervisor made (a raw call: the preload's socket() would make it
 * in the guest, inside its own Landlock domain, as any socket of its
 * own; docs/network.md, "Sockets the guest makes"). */
static void own_to_netstack_name(int own) {
    int b = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    socklen_t len = sizeof me;
    if (bind(b, (struct sockaddr *)&me, sizeof me) || getsockname(b, (struct sockaddr *)&me, &len)) {
        res("own unix to a netstack name: bind", -1);
        return;
    }
    char suffix[64], line[512];
    snprintf(suffix, sizeof suffix, "/udp/127.0.0.1/%d\n", ntohs(me.sin_port));
    FILE *f = fopen("/proc/net/unix", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *at = strchr(line, '@');
        size_t ls = strlen(line), ss = strlen(suffix);
        if (!at || ls < ss || strcmp(line + ls - ss, suffix)) continue;
        struct sockaddr_un to = {.sun_family = AF_UNIX};
        size_t n = ls - 1 - (size_t)(at + 1 - line);
        if (n + 1 > sizeof to.sun_path) break;
        memcpy(to.sun_path + 1, at + 1, n);
        socklen_t tl = offsetof(struct sockaddr_un, sun_path) + 1 + n;
        res("own unix to a netstack name", sendto(own, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&to, tl));
        fclose(f);
        return;
    }
    if (f) fclose(f);
    /* The served /proc/net/unix hides the netstack's names: try to learn
     * b's from a datagram b sends to a unix socket of our own. */
    struct sockaddr_un to;
    socklen_t tl = sizeof to;
    if (learn_name(b, &to, &tl) == 0) {
        res("own unix to a netstack name", sendto(own, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&to, tl));
        return;
    }
    /* Asked of the driver, which can read the sandbox's /proc/net/unix. */
    printf("own unix to a netstack name: ask %d\n", ntohs(me.sin_port));
    char asked[sizeof to.sun_path];
    size_t an;
    if (!fgets(asked, sizeof asked, stdin) || (an = strcspn(asked, "\n")) == 0) {
        printf("own unix to a netstack name: none listed\n");
        return;
    }
    memset(&to, 0, sizeof to);
    to.sun_family = AF_UNIX;
    memcpy(to.sun_path + 1, asked, an);
    tl = offsetof(struct sockaddr_un, sun_path) + 1 + an;
    res("own unix to a netstack name", sendto(own, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&to, tl));
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    setvbuf(stdout, NULL, _IONBF, 0);
    addr.sun_family = AF_UNIX;
    size_t n = strlen(argv[1]);
    if (n + 1 > sizeof addr.sun_path) return 2;
    memcpy(addr.sun_path + 1, argv[1], n);
    addr_len = offsetof(struct sockaddr_un, sun_path) + 1 + n;

    int u = socket(AF_INET, SOCK_DGRAM, 0);
    datagram_tries("udp", u);
    res("udp connect", connect(u, (struct sockaddr *)&addr, addr_len));
    int u6 = socket(AF_INET6, SOCK_DGRAM, 0);
    datagram_tries("udp6", u6);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    res("tcp connect", connect(t, (struct sockaddr *)&addr, addr_len));

    if (argc > 2) {
        int e = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
        res("egress udp connect", connect(e, (struct sockaddr *)&dst, sizeof dst));
        datagram_tries("egress udp", e);
    }

    int own = socket(AF_UNIX, SOCK_DGRAM, 0);
    res("own unix sendto", sendto(own, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&addr, addr_len));
    own_to_netstack_name(own);
    return 0;
}
