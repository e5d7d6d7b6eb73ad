/* sandbox-floor: runs a program natively with the sandbox's per-call
 * costs stacked on it and nothing else, so that a row of scripts/compare
 * can be set against its floor (PERFORMANCE.md, branch filerows).
 *
 *   cc -O2 -o /tmp/sandbox-floor scripts/sandbox-floor.c
 *   sandbox-floor [-f FILTERS] [-L DIR]... -- PROGRAM ARGS...
 *
 *   -f FILTERS  stack that many seccomp filters that read the arguments
 *               of open, openat, openat2, lseek and fcntl (the calls the
 *               supervisor's filter inspects in the file rows) and allow
 *               everything: `run` stacks one, the static loader a second
 *   -L DIR      a Landlock domain handling READ_FILE, with rules on the
 *               host's top-level directories but /proc (as the fence
 *               grants the view's) and on DIR (repeatable): the rule walk
 *               from a file beneath DIR then ends there
 *
 * Then execs PROGRAM. Needs no privilege (no_new_privs is set). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void rule(int ruleset, const char *path)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        exit(125);
    }
    struct landlock_path_beneath_attr a = {.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE,
                                           .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &a, 0) != 0) {
        perror("landlock_add_rule");
        exit(125);
    }
    close(fd);
}

static void fence(const char **dirs, int n)
{
    struct landlock_ruleset_attr attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE};
    int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0) {
        perror("landlock_create_ruleset");
        exit(125);
    }
    DIR *root = opendir("/");
    struct dirent *e;
    char path[512];
    while (root != NULL && (e = readdir(root)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.' || strcmp(e->d_name, "proc") == 0)
            continue;
        snprintf(path, sizeof path, "/%s", e->d_name);
        rule(ruleset, path);
    }
    if (root != NULL)
        closedir(root);
    for (int i = 0; i < n; i++)
        rule(ruleset, dirs[i]);
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        perror("landlock_restrict_self");
        exit(125);
    }
}

static void filter(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_lseek, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fcntl, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        perror("seccomp");
        exit(125);
    }
}

int main(int argc, char **argv)
{
    int filters = 0, n = 0, opt;
    const char *dirs[16];
    while ((opt = getopt(argc, argv, "+f:L:")) != -1) {
        if (opt == 'f')
            filters = atoi(optarg);
        else if (opt == 'L' && n < 16)
            dirs[n++] = optarg;
        else {
            fprintf(stderr, "usage: sandbox-floor [-f FILTERS] [-L DIR]... -- PROGRAM ARGS...\n");
            return 125;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "usage: sandbox-floor [-f FILTERS] [-L DIR]... -- PROGRAM ARGS...\n");
        return 125;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("no_new_privs");
        return 125;
    }
    if (n > 0)
        fence(dirs, n);
    for (int i = 0; i < filters; i++)
        filter();
    execvp(argv[optind], argv + optind);
    perror(argv[optind]);
    return 127;
}
