/* Reopens of a static program's own stdio by name, which no preload
 * serves (tests/programs/stdio_files.rs builds this with `cc -static`
 * and `musl-gcc -static` and runs it with its stdio redirected to host
 * files, natively and under the supervisor). Its first open reads stdin
 * by name, which traps to the static loader and rewrites the C
 * library's open site (docs/fast-reads.md, "Rewritten sites"); the
 * reopens for writing then go through that site: freopen of stdout,
 * fopen of stderr for appending, open of /proc/self/fd/1 for writing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char line[64] = "";
    FILE *in = fopen("/dev/stdin", "r");
    if (in == NULL || fgets(line, sizeof line, in) == NULL) {
        perror("stdin");
        return 1;
    }
    if (freopen("/dev/stdout", "a", stdout) == NULL) {
        perror("freopen /dev/stdout");
        return 1;
    }
    printf("first: %s", line);
    fflush(stdout);
    FILE *err = fopen("/dev/stderr", "a");
    if (err == NULL) {
        perror("fopen /dev/stderr");
        return 1;
    }
    fprintf(err, "to stderr\n");
    fclose(err);
    int fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND);
    if (fd < 0) {
        perror("open /proc/self/fd/1");
        return 1;
    }
    static const char by_fd[] = "by fd\n";
    if (write(fd, by_fd, strlen(by_fd)) != (ssize_t)strlen(by_fd))
        return 1;
    close(fd);
    return 0;
}
