/* procloop: what one served /proc open costs a C program (issue 36: ps,
 * psutil). Opens FILE with open(O_RDONLY | O_CLOEXEC), reads up to 8 KiB
 * until end of file, closes it, N times; prints the wall time per
 * iteration of the loop alone in µs (CLOCK_MONOTONIC through the vDSO).
 * Built and run by scripts/procloop, natively and under each supervisor:
 *
 *   cc -O2 -o procloop scripts/procloop.c
 *   procloop FILE N
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: procloop FILE N\n");
        return 125;
    }
    long n = strtol(argv[2], NULL, 10);
    static char buf[8192];
    double t = now_us();
    for (long i = 0; i < n; i++) {
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            perror(argv[1]);
            return 1;
        }
        while (read(fd, buf, sizeof buf) > 0)
            ;
        close(fd);
    }
    printf("%.2f\n", n ? (now_us() - t) / n : 0.0);
    return 0;
}
