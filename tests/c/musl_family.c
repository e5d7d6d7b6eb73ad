/* A musl program's family under the fast-reads preload, as an Alpine
 * image's programs make one (tests/fs/fast_reads_any_libc.rs compares
 * its output with the same program run natively and counts the opens
 * the supervisor served). Built with musl-gcc (dynamic: the preload
 * comes from LD_PRELOAD, which musl's loader reads), and again with
 * -shared -fPIC -DFAMILY_LIB as the library it loads.
 *
 * musl_family dlopen LIB DIR N: dlopen()s LIB (this file's library part)
 * after the start and calls its read_all(DIR, N), which opens DIR/0 ...
 * DIR/N-1 each with open and with fopen, reads the number each holds and
 * prints the two sums, as tests/c/many_reads.c's read does: its calls of
 * open and fopen are the library's own, bound when it is loaded.
 * musl_family spawn PROG DIR N: forks, and the child execs
 * PROG read DIR N (another musl program, tests/c/many_reads.c), which
 * inherits the environment; the parent prints the child's status when
 * it is not a plain exit 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef FAMILY_LIB
#define READ_ALL_SCOPE
#include "read_all.h"
#else

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 5 && strcmp(argv[1], "dlopen") == 0) {
        void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            printf("dlopen %s: %s\n", argv[2], dlerror());
            return 1;
        }
        int (*read_all)(const char *, int) = (int (*)(const char *, int))dlsym(lib, "read_all");
        if (read_all == NULL) {
            printf("dlsym read_all: %s\n", dlerror());
            return 1;
        }
        return read_all(argv[3], atoi(argv[4]));
    }
    if (argc == 5 && strcmp(argv[1], "spawn") == 0) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            char *args[] = {argv[2], "read", argv[3], argv[4], NULL};
            execv(argv[2], args);
            printf("exec %s failed\n", argv[2]);
            _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            printf("child status %#x\n", status);
        return 0;
    }
    fprintf(stderr, "usage: musl_family dlopen LIB DIR N | spawn PROG DIR N\n");
    return 2;
}
#endif
