/* Reopens of a program's own stdio for writing by name, the first open
 * of each kind a write (no read before it rewrites a static program's
 * open site): open of /proc/self/fd/1, fopen of /dev/stdout, freopen of
 * stdout and of stderr (which truncates). tests/programs/stdio_files.rs
 * builds it with cc (dynamic and -static) and musl-gcc (dynamic and
 * -static) and runs it with its stdio redirected to host files,
 * natively and under the supervisor: the same files are left. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    int fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND);
    if (fd < 0) {
        perror("open /proc/self/fd/1");
        return 1;
    }
    static const char by_fd[] = "by fd\n";
    if (write(fd, by_fd, strlen(by_fd)) != (ssize_t)strlen(by_fd))
        return 1;
    close(fd);
    FILE *out = fopen("/dev/stdout", "a");
    if (out == NULL) {
        perror("fopen /dev/stdout");
        return 1;
    }
    fprintf(out, "by fopen\n");
    fclose(out);
    if (freopen("/dev/stdout", "a", stdout) == NULL) {
        perror("freopen /dev/stdout");
        return 1;
    }
    printf("by freopen, fd %d\n", fileno(stdout));
    fflush(stdout);
    if (freopen("/dev/stderr", "w", stderr) == NULL) {
        printf("freopen /dev/stderr failed\n");
        return 1;
    }
    fprintf(stderr, "stderr truncated, fd %d\n", fileno(stderr));
    return 0;
}
