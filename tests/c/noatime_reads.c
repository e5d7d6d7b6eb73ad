/* Read opens with O_NOATIME (tests/procfs/noatime.rs builds this with
 * `cc`, `cc -static` and `musl-gcc -static`, runs it natively and under
 * the supervisor, as root and as `tester`, and compares the output).
 * O_NOATIME is its file's owner's, or a holder of CAP_FOWNER over it:
 * the kernel answers anyone else EPERM, before any other check. Only
 * portable calls, errno printed as a number, so glibc and musl print
 * alike.
 *
 * noatime_reads PATH...: for each PATH, open(PATH, O_RDONLY|O_NOATIME)
 * and openat(AT_FDCWD, PATH, O_RDONLY|O_NOATIME|O_CLOEXEC), each
 * followed by one read: "PATH open: ok, read > 0: 1" or
 * "PATH open: errno 1". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static void show(const char *path, const char *how, int fd)
{
    if (fd < 0) {
        printf("%s %s: errno %d\n", path, how, errno);
        return;
    }
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf);
    printf("%s %s: ok, read > 0: %d\n", path, how, n > 0);
    close(fd);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        show(argv[i], "open", open(argv[i], O_RDONLY | O_NOATIME));
        show(argv[i], "openat", openat(AT_FDCWD, argv[i], O_RDONLY | O_NOATIME | O_CLOEXEC));
    }
    return 0;
}
