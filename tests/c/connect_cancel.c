/* connect_cancel.c: a thread blocked in a TCP connect (its listener's
 * backlog full) is cancelled by pthread_cancel, as the C library's
 * connect is a cancellation point (under the sandbox the preload's
 * connect, whose call waits in the supervisor; with musl a raw call).
 * Prints how the thread ended; the test compares it with a native run
 * (a thread not cancelled blocks until the run's timeout). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in server = {.sin_family = AF_INET};

static void *by_connect(void *arg)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    (void)arg;
    connect(fd, (struct sockaddr *)&server, sizeof server);
    return "connected";
}

int main(void)
{
    socklen_t len = sizeof server;
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    if (srv < 0 || bind(srv, (struct sockaddr *)&server, sizeof server) != 0 || listen(srv, 0) != 0 ||
        getsockname(srv, (struct sockaddr *)&server, &len) != 0) {
        perror("listener");
        return 1;
    }
    /* Fill the backlog: later connects wait for room. */
    for (int i = 0; i < 4; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(c, (struct sockaddr *)&server, sizeof server);
    }
    pthread_t t;
    void *how;
    if (pthread_create(&t, NULL, by_connect, NULL) != 0)
        return 1;
    /* Cancelled before or while it blocks: either way it ends cancelled. */
    usleep(50000);
    pthread_cancel(t);
    pthread_join(t, &how);
    printf("connect %s\n", how == PTHREAD_CANCELED ? "cancelled" : (const char *)how);
    return 0;
}
