/* The open family as the fast-reads preload sees it
 * (sandbox/guest/fast_reads.c; tests/fs/fast_reads.rs runs this natively
 * and under the supervisor and compares the output line by line).
 *
 * fast_reads DIR: opens every way the C library offers (open, open64,
 * openat, openat64 with a directory descriptor and relative names, the
 * fortified __open_2 family), reads, and prints results and errno names;
 * then bad pointers, creating opens with a mode (the umask applies),
 * read opens of directories and of a FIFO with O_NONBLOCK; then fopen and
 * fopen64 in every read mode the preload makes itself (r with b, t, m,
 * e) and in the modes it leaves to the C library (r+, w, a, x, c, ccs).
 * fast_reads --abort DIR: the fortified open of a creating call without
 * a mode, which the C library ends with SIGABRT.
 * fast_reads --fopen-many FILE N: fopen and read FILE N times (the test
 * counts the opens the supervisor served).
 * fast_reads --fopen-first FILE: the first line fopen reads of FILE. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest.h"

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

/* Reads what `fd` holds (at most 63 bytes) as one line, and closes it. */
static void show(const char *what, int fd)
{
    char buf[64] = {0};
    if (fd < 0) {
        res(what, fd);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        printf("%s: read = -1 %s\n", what, strerrorname_np(errno));
    else
        printf("%s: \"%.*s\"\n", what, (int)strcspn(buf, "\n"), buf);
    close(fd);
}

/* Reads the first line (at most 63 bytes) of `file`, and closes it. */
static void fshow(const char *what, FILE *file)
{
    char buf[64] = {0};
    if (file == NULL) {
        res(what, -1);
        return;
    }
    if (fgets(buf, sizeof buf, file) == NULL)
        printf("%s: read nothing%s\n", what, ferror(file) ? " (error)" : "");
    else
        printf("%s: \"%.*s\"\n", what, (int)strcspn(buf, "\n"), buf);
    fclose(file);
}

/* Whether `file`'s descriptor is close-on-exec, then fshow. */
static void fshow_cloexec(const char *what, FILE *file)
{
    if (file != NULL)
        printf("%s: cloexec %d\n", what, (fcntl(fileno(file), F_GETFD) & FD_CLOEXEC) != 0);
    fshow(what, file);
}

static void fopen_family(const char *dir, const char *a, const char *missing, const char *made)
{
    fshow_cloexec("fopen r", fopen(a, "r"));
    fshow_cloexec("fopen rb", fopen(a, "rb"));
    fshow_cloexec("fopen re", fopen(a, "re"));
    fshow_cloexec("fopen rbe", fopen(a, "rbe"));
    fshow("fopen rt", fopen(a, "rt"));
    fshow("fopen rm", fopen(a, "rm"));
    fshow("fopen64 r", fopen64(a, "r"));
    fshow("fopen missing", fopen(missing, "r"));
    fshow("fopen dir", fopen(dir, "r"));
    fshow("fopen bad pointer", fopen((const char *)8, "r"));
    fshow("fopen empty", fopen("", "r"));
    fshow("fopen rc", fopen(a, "rc"));
    fshow("fopen r ccs", fopen(a, "r,ccs=UTF-8"));
    fshow("fopen r+", fopen(a, "r+"));
    FILE *w = fopen(made, "w");
    res("fopen w", w == NULL ? -1 : 0);
    if (w != NULL) {
        fputs("written\n", w);
        fclose(w);
    }
    fshow("fopen after w", fopen(made, "r"));
    w = fopen64(made, "a");
    res("fopen64 a", w == NULL ? -1 : 0);
    if (w != NULL)
        fclose(w);
    fshow("fopen wx existing", fopen(made, "wx"));
    unlink(made);
    fshow("fopen missing r+", fopen(missing, "r+"));
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--fopen-many") == 0) {
        for (int i = atoi(argv[3]); i > 0; i--) {
            FILE *f = fopen(argv[2], "r");
            if (f == NULL || fgetc(f) == EOF)
                return 1;
            fclose(f);
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--fopen-first") == 0) {
        fshow("first", fopen(argv[2], "re"));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--abort") == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/made", argv[2]);
        volatile int flags = O_WRONLY | O_CREAT;
        __open_2(path, flags);
        puts("not reached");
        return 0;
    }
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    char a[4096], missing[4096], made[4096], fifo[4096];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    snprintf(made, sizeof made, "%s/made", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    res("open dir", d < 0 ? -1 : 0);

    show("open", open(a, O_RDONLY));
    show("open64 cloexec", open64(a, O_RDONLY | O_CLOEXEC));
    show("openat abs", openat(AT_FDCWD, a, O_RDONLY));
    show("openat rel", openat(d, "a", O_RDONLY));
    show("openat64 rel", openat64(d, "sub/b", O_RDONLY));
    show("__open_2", __open_2(a, O_RDONLY));
    show("__open64_2", __open64_2(a, O_RDONLY | O_NOATIME));
    show("__openat_2", __openat_2(d, "a", O_RDONLY));
    show("__openat64_2", __openat64_2(d, "sub/b", O_RDONLY));
    show("missing", open(missing, O_RDONLY));
    show("through a file", open("/etc/hostname/x", O_RDONLY));
    show("empty", open("", O_RDONLY));
    show("dir read", open(dir, O_RDONLY));
    show("bad pointer", open((const char *)8, O_RDONLY));
    const char *volatile null = NULL;
    show("null", openat(AT_FDCWD, null, O_RDONLY));
    show("bad dirfd", openat(9999, "a", O_RDONLY));
    show("bad flags", open(a, O_RDONLY | O_PATH | O_TRUNC));

    umask(022);
    int fd = open(made, O_WRONLY | O_CREAT | O_EXCL, 0666);
    res("create", fd < 0 ? -1 : 0);
    if (write(fd, "made", 4) != 4)
        puts("short write");
    close(fd);
    struct stat st;
    stat(made, &st);
    printf("mode %o\n", st.st_mode & 07777);
    show("made", open64(made, O_RDONLY));
    show("exclusive again", open(made, O_WRONLY | O_CREAT | O_EXCL, 0600));
    show("truncating read", open(made, O_RDONLY | O_TRUNC));
    unlink(made);

    mkfifo(fifo, 0600);
    fd = open(fifo, O_RDONLY | O_NONBLOCK);
    res("fifo", fd < 0 ? -1 : 0);
    close(fd);
    unlink(fifo);
    close(d);

    fopen_family(dir, a, missing, made);
    return 0;
}
