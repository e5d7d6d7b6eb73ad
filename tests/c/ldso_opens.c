/* The dynamic loader's and the C library's own opens (glibc's
 * __open_nocancel, which the preload rewrites into its marked open:
 * tests/fs/ldso_opens.rs). Each mode prints what a native run prints too.
 *
 *   ldso_opens dlopen N NAME...  dlopen N missing names (each searched in
 *                                every directory of LD_LIBRARY_PATH and the
 *                                system's), then each NAME: found or not,
 *                                and the file it was found in
 *   ldso_opens locale            setlocale(LC_ALL, "") from the environment,
 *                                its codeset, a date in its format, and
 *                                the local zone (/etc/localtime)
 *   ldso_opens proc PATH...      the first line of each PATH opened by the
 *                                C library's own fopen with 'c' (its
 *                                non-cancellable open); sysconf's
 *                                ngroups_max (/proc/sys/kernel/ngroups_max)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int dlopens(int argc, char **argv)
{
    int missing = argc > 2 ? atoi(argv[2]) : 0;
    int failed = 0;
    for (int i = 0; i < missing; i++) {
        char name[64];
        snprintf(name, sizeof name, "libldso-opens-missing-%d.so", i);
        if (dlopen(name, RTLD_NOW) == NULL)
            failed++;
    }
    printf("missing: %d of %d not found\n", failed, missing);
    for (int i = 3; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW);
        if (h == NULL) {
            printf("%s: %s\n", argv[i], dlerror());
            continue;
        }
        struct link_map *map = NULL;
        dlinfo(h, RTLD_DI_LINKMAP, &map);
        printf("%s: found in %s\n", argv[i], map ? map->l_name : "?");
    }
    return 0;
}

static int locale(void)
{
    const char *l = setlocale(LC_ALL, "");
    printf("setlocale: %s\n", l ? l : "(null)");
    printf("codeset: %s\n", nl_langinfo(CODESET));
    time_t t = 86400 * 365;
    struct tm tm;
    char buf[128];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%c | %A %B", &tm);
    printf("date: %s\n", buf);
    localtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Z %z", &tm);
    printf("zone: %s\n", buf);
    return 0;
}

static int proc(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        FILE *f = fopen(argv[i], "rce");
        char line[256] = "";
        if (f == NULL) {
            printf("%s: cannot open\n", argv[i]);
            continue;
        }
        if (fgets(line, sizeof line, f) == NULL)
            strcpy(line, "(empty)\n");
        fclose(f);
        printf("%s: %s", argv[i], line);
    }
    printf("ngroups_max: %ld\n", sysconf(_SC_NGROUPS_MAX));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "dlopen") == 0)
        return dlopens(argc, argv);
    if (argc > 1 && strcmp(argv[1], "locale") == 0)
        return locale();
    if (argc > 1 && strcmp(argv[1], "proc") == 0)
        return proc(argc, argv);
    fprintf(stderr, "usage: ldso_opens dlopen N NAME... | locale | proc PATH...\n");
    return 2;
}
