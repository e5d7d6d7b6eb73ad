/*
 * cancel_reads.c: a static program that links pthread_cancel, whose
 * musl build makes every cancellable call through `__syscall_cp_asm`,
 * the site the static loader leaves on the signal by rule
 * (docs/fast-reads.md, "Rewritten sites"): tests/fs/static_reads.rs
 * builds it with `musl-gcc -static` and compares its output natively and
 * under the supervisor.
 *
 * cancel_reads DIR (DIR holds `a`): 2,000 opens and reads, a thread
 * cancelled while blocked in a read of a pipe, 2,000 opens again, and
 * its text against a copy taken at its start: unchanged.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char __executable_start[], etext[];

static char path_a[600];

static int opens_right(int n)
{
    for (int i = 0; i < n; i++) {
        char buf[32] = {0};
        int fd = open(path_a, O_RDONLY);
        if (fd < 0 || read(fd, buf, sizeof buf - 1) != 10 || strcmp(buf, "text of a\n"))
            return 0;
        close(fd);
    }
    return 1;
}

static int pipe_fds[2];

static void *blocked_read(void *arg)
{
    char c;
    (void)arg;
    read(pipe_fds[0], &c, 1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cancel_reads DIR\n");
        return 2;
    }
    setvbuf(stdout, 0, _IONBF, 0);
    snprintf(path_a, sizeof path_a, "%s/a", argv[1]);
    size_t len = (size_t)(etext - __executable_start);
    unsigned char *was = malloc(len);
    if (!was)
        return 1;
    memcpy(was, __executable_start, len);
    printf("2000 opens: %d\n", opens_right(2000));
    pthread_t t;
    void *ret = 0;
    int ok = pipe(pipe_fds) == 0 && pthread_create(&t, 0, blocked_read, 0) == 0;
    if (ok) {
        usleep(100000); /* let it block first (the result does not depend on it) */
        ok = pthread_cancel(t) == 0 && pthread_join(t, &ret) == 0;
    }
    printf("cancelled in a blocked read: %d\n", ok && ret == PTHREAD_CANCELED);
    printf("2000 opens after: %d\n", opens_right(2000));
    printf("text unchanged: %d\n", !memcmp(was, __executable_start, len));
    return 0;
}
