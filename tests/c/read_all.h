/* read_all.h: the loop of plain read opens that tests/c/many_reads.c's
 * `read` and tests/c/musl_family.c's library part both make: DIR/0 ...
 * DIR/N-1 each opened with open and with fopen, the number each holds
 * read, and the two sums printed. READ_ALL_SCOPE is `static` unless the
 * includer defines it (the library exports read_all for dlsym). Needs
 * errno.h, fcntl.h, stdio.h, stdlib.h and unistd.h. */
#ifndef READ_ALL_SCOPE
#define READ_ALL_SCOPE static
#endif

static long number_in(int fd)
{
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    return n > 0 ? atol(buf) : -1;
}

READ_ALL_SCOPE int read_all(const char *dir, int n)
{
    char path[4096];
    long sum = 0, fsum = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%d", dir, i);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            printf("open %s: errno %d\n", path, errno);
            return 1;
        }
        sum += number_in(fd);
        close(fd);
        FILE *f = fopen(path, "r");
        long v = -1;
        if (f == NULL || fscanf(f, "%ld", &v) != 1) {
            printf("fopen %s: errno %d\n", path, errno);
            return 1;
        }
        fsum += v;
        fclose(f);
    }
    printf("sum %ld fsum %ld\n", sum, fsum);
    return 0;
}
