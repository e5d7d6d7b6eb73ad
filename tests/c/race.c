/*
 * race: symlink-swap races against the supervisor's path resolution.
 *
 * Usage: race HOST_MARKER WORKDIR HOSTDIR ITERATIONS
 *
 * In WORKDIR (a --rw mount) a flipper thread keeps exchanging, with
 * renameat2(RENAME_EXCHANGE), a real directory "d" (holding an innocent
 * secret.txt) and a symlink "l" to HOSTDIR, a host directory outside the
 * view that holds the real secret.txt. Meanwhile the main thread opens,
 * stats and chmods "d/secret.txt" ITERATIONS times. Inside the sandbox
 * HOSTDIR does not exist, so every call must see the innocent file or fail;
 * a call that reaches the host file is an escape. Prints:
 *   opened: N innocent: N host: N errors: N flips: N
 *
 * Exits 99 at once if HOST_MARKER (a host file) is visible: it is
 * meant for `supervisor run` only (tests/security/races.rs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif

static atomic_int stop;
static atomic_long flips;

static void *flipper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "l", RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&flips, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5 || access(argv[1], F_OK) == 0) {
		fprintf(stderr, "race: NOT SANDBOXED (or bad arguments): refusing to run\n");
		return 99;
	}
	if (chdir(argv[2]) < 0 || mkdir("d", 0755) < 0 || symlink(argv[3], "l") < 0) {
		perror("race: setup");
		return 2;
	}
	int fd = open("d/secret.txt", O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "innocent", 8) != 8) {
		perror("race: innocent file");
		return 2;
	}
	close(fd);
	long n = atol(argv[4]), opened = 0, innocent = 0, host = 0, errors = 0;
	pthread_t t;
	pthread_create(&t, NULL, flipper, NULL);
	for (long i = 0; i < n; i++) {
		char buf[64] = { 0 };
		int f = open("d/secret.txt", O_RDONLY);
		if (f >= 0) {
			opened++;
			ssize_t r = read(f, buf, sizeof buf - 1);
			close(f);
			if (r == 8 && memcmp(buf, "innocent", 8) == 0)
				innocent++;
			else
				host++;
		} else if (errno != ENOENT && errno != ENOTDIR) {
			errors++;
		}
		struct stat st;
		if (stat("d/secret.txt", &st) == 0 && st.st_size != 8)
			host++;
		/* The host file is mode 0640: 0604 would only reach it by escaping. */
		chmod("d/secret.txt", 0604);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("opened: %ld innocent: %ld host: %ld errors: %ld flips: %ld\n", opened, innocent, host, errors,
	       atomic_load(&flips));
	return 0;
}
