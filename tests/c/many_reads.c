/* Plain read opens of many small files, in C that any C library builds
 * (tests/common/cprogs.rs builds it with cc, and with musl-gcc as
 * many_reads.musl): the fast-reads preload's work for a glibc or musl
 * program, in the host's directories or a --rootfs tree
 * (tests/fs/fast_reads_any_libc.rs compares runs with native ones and
 * counts the opens the supervisor served; scripts/compare times it).
 *
 * many_reads make DIR N: writes DIR/0 ... DIR/N-1 (fopen "w"), each
 * holding its number.
 * many_reads read DIR N: opens each with open and with fopen "r", reads
 * it, and prints the sums of the numbers read.
 * many_reads read DIR N cost: the same, then a line "CPU_MS WAIT_MS": the
 * process's CPU time (getrusage) and the time it waited on a run queue
 * (/proc/self/schedstat's second field; -1 where that file cannot be
 * read), what scripts/row-cpu sets against native and the floor.
 * many_reads check DIR: the answers the C library's own open and fopen
 * give (errno numbers, which are Linux's under every C library): a
 * missing file, the modes r+, a, x, w+, an invalid mode, /proc files the
 * sandbox serves, a directory opened for reading.
 * many_reads env NAME: the value of NAME in the environment, or
 * "(unset)".
 * many_reads mapped NAME: "mapped" when a line of /proc/self/maps names
 * NAME (a library the loader mapped), else "not mapped". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "read_all.h"

static int make(const char *dir, int n)
{
    char path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%d", dir, i);
        FILE *f = fopen(path, "w");
        if (f == NULL || fprintf(f, "%d\n", i) < 0 || fclose(f) != 0) {
            printf("make %s: errno %d\n", path, errno);
            return 1;
        }
    }
    printf("made %d\n", n);
    return 0;
}

/* "WHAT: the first line" of an open descriptor, or "WHAT: errno E". */
static void show_fd(const char *what, int fd)
{
    char buf[64] = {0};
    if (fd < 0) {
        printf("%s: errno %d\n", what, errno);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        printf("%s: read errno %d\n", what, errno);
    else
        printf("%s: \"%.*s\"\n", what, (int)strcspn(buf, "\n"), buf);
    close(fd);
}

static void show_file(const char *what, FILE *f)
{
    char buf[64] = {0};
    if (f == NULL) {
        printf("%s: errno %d\n", what, errno);
        return;
    }
    rewind(f);
    if (fgets(buf, sizeof buf, f) == NULL)
        printf("%s: read nothing\n", what);
    else
        printf("%s: \"%.*s\"\n", what, (int)strcspn(buf, "\n"), buf);
    fclose(f);
}

static int check(const char *dir)
{
    char path[4096], missing[4096];
    snprintf(path, sizeof path, "%s/checked", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    unlink(path);
    show_fd("open missing", open(missing, O_RDONLY));
    show_file("fopen missing", fopen(missing, "r"));
    FILE *w = fopen(path, "w+");
    if (w != NULL)
        fputs("written\n", w);
    show_file("fopen w+", w);
    FILE *a = fopen(path, "a");
    if (a != NULL) {
        fputs("appended\n", a);
        fclose(a);
    }
    show_file("fopen r+", fopen(path, "r+"));
    show_file("fopen x", fopen(path, "wx"));
    show_file("fopen re", fopen(path, "re"));
    show_file("fopen bad mode", fopen(path, "q"));
    show_fd("open proc status", open("/proc/self/status", O_RDONLY));
    show_file("fopen proc stat", fopen("/proc/self/comm", "r"));
    show_fd("open dir", open(dir, O_RDONLY));
    show_fd("openat proc comm", openat(AT_FDCWD, "/proc/self/comm", O_RDONLY));
    int lines = 0;
    FILE *f = fopen(path, "r");
    char buf[64];
    while (f != NULL && fgets(buf, sizeof buf, f) != NULL)
        lines++;
    if (f != NULL)
        fclose(f);
    printf("lines %d\n", lines);
    return 0;
}

/* Prints "CPU_MS WAIT_MS" of this process (see the head comment). */
static void print_cost(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    char text[128] = {0};
    unsigned long long ran, waited;
    double waited_ms = -1;
    int fd = open("/proc/self/schedstat", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0)
        close(fd);
    if (n > 0 && sscanf(text, "%llu %llu", &ran, &waited) == 2)
        waited_ms = waited / 1e6;
    printf("%.2f %.2f\n", cpu, waited_ms);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 4 && strcmp(argv[1], "make") == 0)
        return make(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "read") == 0)
        return read_all(argv[2], atoi(argv[3]));
    if (argc == 5 && strcmp(argv[1], "read") == 0 && strcmp(argv[4], "cost") == 0) {
        int failed = read_all(argv[2], atoi(argv[3]));
        if (!failed)
            print_cost();
        return failed;
    }
    if (argc == 3 && strcmp(argv[1], "check") == 0)
        return check(argv[2]);
    if (argc == 3 && strcmp(argv[1], "mapped") == 0) {
        FILE *maps = fopen("/proc/self/maps", "r");
        char line[4096];
        int found = 0;
        while (maps != NULL && fgets(line, sizeof line, maps) != NULL)
            found |= strstr(line, argv[2]) != NULL;
        printf("%s\n", found ? "mapped" : "not mapped");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "env") == 0) {
        const char *value = getenv(argv[2]);
        printf("%s\n", value != NULL ? value : "(unset)");
        return 0;
    }
    fprintf(stderr, "usage: many_reads make|read DIR N [cost] | check DIR | env NAME | mapped NAME\n");
    return 2;
}
