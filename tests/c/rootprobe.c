/* A tiny guest for --rootfs trees, built static by tests/common/rootfs.rs
 * (and dynamic, like every tests/c program). Runs a list of operations
 * separated by ",", printing one line per result:
 *   ls DIR | cat FILE | write FILE TEXT | link A B | rename A B |
 *   symlink TARGET LINK | statfs PATH (total bytes) | stat PATH (type mode size)
 * Errors print "ERR <strerror>"; the exit status is the number of errors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

static int fails;

static void err(void) {
    printf("ERR %s\n", strerror(errno));
    fails++;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ls(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return err();
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (int i = 0; i < n; i++) printf("%s%s", i ? " " : "", names[i]);
    printf("\n");
}

static void cat(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return err();
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, n, stdout);
    if (n < 0) err();
    close(fd);
}

static void writef(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return err();
    if (write(fd, text, strlen(text)) < 0) err(); else printf("ok\n");
    close(fd);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int i = 1;
    while (i < argc) {
        const char *op = argv[i];
        const char *a = i + 1 < argc ? argv[i + 1] : "";
        const char *b = i + 2 < argc ? argv[i + 2] : "";
        if (!strcmp(op, "ls")) ls(a);
        else if (!strcmp(op, "cat")) cat(a);
        else if (!strcmp(op, "write")) writef(a, b);
        else if (!strcmp(op, "link")) link(a, b) ? err() : (void)printf("ok\n");
        else if (!strcmp(op, "rename")) rename(a, b) ? err() : (void)printf("ok\n");
        else if (!strcmp(op, "symlink")) symlink(a, b) ? err() : (void)printf("ok\n");
        else if (!strcmp(op, "statfs")) {
            struct statfs st;
            if (statfs(a, &st)) err();
            else printf("%llu\n", (unsigned long long)st.f_blocks * st.f_frsize);
        } else if (!strcmp(op, "stat")) {
            struct stat st;
            if (stat(a, &st)) err();
            else printf("%s %o %lld\n", S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file"
                        : S_ISCHR(st.st_mode) ? "chr" : "other",
                        st.st_mode & 07777, (long long)st.st_size);
        } else {
            fprintf(stderr, "rootprobe: unknown op %s\n", op);
            return 100;
        }
        while (i < argc && strcmp(argv[i], ",")) i++;
        i++;
    }
    return fails;
}
