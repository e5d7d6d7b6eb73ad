/* The open family as the fast-reads preload sees it
 * (supervisor/guest/fast_reads.c; tests/fast_reads.rs runs this natively
 * and under the supervisor and compares the output line by line).
 *
 * fast_reads DIR: opens every way the C library offers (open, open64,
 * openat, openat64 with a directory descriptor and relative names, the
 * fortified __open_2 family), reads, and prints results and errno names;
 * then bad pointers, creating opens with a mode (the umask applies),
 * read opens of directories and of a FIFO with O_NONBLOCK.
 * fast_reads --abort DIR: the fortified open of a creating call without
 * a mode, which the C library ends with SIGABRT. */
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

int main(int argc, char **argv)
{
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
    return 0;
}
