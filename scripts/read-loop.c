/* read-loop: the static and musl rows' program (tests/c/many_reads.c
 * `read`: each file opened with open and read, then with fopen and fgets,
 * the same seven calls a file) that reports what it cost itself, so that
 * a run under the sandbox, pooled or not, can be set against the same
 * program natively without counting the sandbox's start or the machine's
 * other work (scripts/row-cpu builds and runs it):
 *
 *   cc -O2 -static -o read-loop scripts/read-loop.c
 *   read-loop DIR N
 *
 * Prints "SUM CPU_MS WAIT_MS": the sum of the numbers read, the process's
 * CPU time (getrusage) and the time it waited on a run queue
 * (/proc/self/schedstat's second field; -1 where that file cannot be
 * read, as under sandbox-floor's Landlock domain). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static double waited_ms(void)
{
    char text[128] = {0};
    int fd = open("/proc/self/schedstat", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    unsigned long long ran, waited;
    if (n <= 0 || sscanf(text, "%llu %llu", &ran, &waited) != 2)
        return -1;
    return waited / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: read-loop DIR N\n");
        return 125;
    }
    long n = strtol(argv[2], NULL, 10), sum = 0;
    char path[4096], buf[64];
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%ld", argv[1], i);
        int fd = open(path, O_RDONLY);
        ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0)
            close(fd);
        FILE *f = fopen(path, "r");
        if (k <= 0 || f == NULL) {
            fprintf(stderr, "read-loop: %s unreadable\n", path);
            return 1;
        }
        buf[k] = 0;
        sum += atol(buf);
        if (fgets(buf, sizeof buf, f) != NULL)
            sum += atol(buf);
        fclose(f);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    printf("%ld %.2f %.2f\n", sum, cpu, waited_ms());
    return 0;
}
