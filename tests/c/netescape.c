/* netescape NAME: from a netstack socket (a host AF_UNIX socket in the
 * sandbox's own network namespace), try to reach the abstract unix name
 * NAME that a host process bound outside the sandbox, every way the
 * policy lets an AF_UNIX address through. Prints one errno per try. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void res(const char *what, long r) {
    printf("%s %s\n", what, r < 0 ? strerrorname_np(errno) : "reached");
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(argv[1]);
    memcpy(a.sun_path + 1, argv[1], n);
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + n;
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct iovec iov = {.iov_base = "x", .iov_len = 1};
    struct msghdr m = {.msg_name = &a, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1};
    res("sendmsg", sendmsg(u, &m, 0));
    res("sendmsg nosignal", sendmsg(u, &m, MSG_NOSIGNAL));
    struct mmsghdr mm = {.msg_hdr = m};
    res("sendmmsg", sendmmsg(u, &mm, 1, 0));
    res("sendto", sendto(u, "x", 1, 0, (struct sockaddr *)&a, len));
    res("connect dgram", connect(u, (struct sockaddr *)&a, len));
    int t = socket(AF_INET, SOCK_STREAM, 0);
    res("connect stream", connect(t, (struct sockaddr *)&a, len));
    return 0;
}
