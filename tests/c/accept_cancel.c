/* accept_cancel.c: a thread blocked in accept or accept4 on a TCP
 * listener is cancelled by pthread_cancel, as the C library's accept is
 * a cancellation point (under the sandbox the preload's accept, whose
 * call waits in the supervisor). Prints how each thread ended; the test
 * compares it with a native run (a thread not cancelled never ends: the
 * run's timeout). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

static int listener(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0) {
        perror("listener");
        return -1;
    }
    return fd;
}

static void *by_accept(void *arg)
{
    accept(*(int *)arg, NULL, NULL);
    return "accepted";
}

static void *by_accept4(void *arg)
{
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    accept4(*(int *)arg, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
    return "accepted";
}

static void cancel(const char *what, void *(*run)(void *))
{
    int fd = listener();
    pthread_t t;
    void *how;
    if (fd < 0 || pthread_create(&t, NULL, run, &fd) != 0)
        return;
    /* Cancelled before or while it blocks: either way it ends cancelled. */
    usleep(50000);
    pthread_cancel(t);
    pthread_join(t, &how);
    printf("%s %s\n", what, how == PTHREAD_CANCELED ? "cancelled" : (const char *)how);
    close(fd);
}

int main(void)
{
    cancel("accept", by_accept);
    cancel("accept4", by_accept4);
    return 0;
}
