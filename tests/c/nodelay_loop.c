/*
 * nodelay_loop: connects to its own loopback listener N times (argv[1],
 * default 20), sets TCP_NODELAY on each client and reads it back, reads
 * the accepted connection's (0: a listener's is inherited, and this one
 * is never set), and prints the sums. Built with cc (glibc) and with
 * musl-gcc: under the sandbox both preloads answer these options of a
 * sandbox-local connection without a round trip (tests/net/nodelay.rs).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int nodelay_of(int fd)
{
    int v = -1;
    socklen_t len = sizeof v;
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) != 0 || len != sizeof v)
        return -100;
    return v;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 8) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) != 0) {
        perror("listener");
        return 1;
    }
    int clients = 0, accepted = 0;
    for (int i = 0; i < n; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            return 1;
        }
        int one = 1;
        if (setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
            perror("setsockopt");
            return 1;
        }
        clients += nodelay_of(c);
        int x = accept(l, NULL, NULL);
        if (x < 0) {
            perror("accept");
            return 1;
        }
        accepted += nodelay_of(x);
        close(x);
        close(c);
    }
    printf("nodelay on %d of %d clients, %d accepted\n", clients, n, accepted);
    return 0;
}
