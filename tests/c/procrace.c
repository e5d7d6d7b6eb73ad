/*
 * procrace: races against the CONTINUE of an open or a path stat, aimed at
 * the kernel's own procfs: the supervisor resolves a path to an ordinary
 * file of the view and lets the kernel open it, while another thread
 * makes the same path name a /proc file. What the kernel then opens must
 * hold no host fact (tests/procfs/race.rs).
 *
 * Usage: procrace [--mark MARK] HOST_MARKER ITERATIONS TARGET [NEEDLE...]
 *
 * Opens are made by syscall(2), never the C library's open (which the
 * fast-reads preload would make twice). With --mark, each carries MARK
 * (FAST_READ_MARK, the policy table's) in openat's fifth register, so the
 * filter passes it and the kernel opens natively whatever the path names
 * at that moment: what a fast read reaches, raced.
 *
 * Two ways to change the path between the two lookups, each tried
 * ITERATIONS times:
 *   swap:    a thread exchanges (renameat2 RENAME_EXCHANGE) two symlinks,
 *            /tmp/pr/a -> /tmp/pr/innocent and /tmp/pr/b -> TARGET; the
 *            main thread opens /tmp/pr/a and reads it, and stats it.
 *   rewrite: a thread rewrites the path buffer between "/tmp/pr/innocent"
 *            and TARGET while the main thread opens and stats it.
 * A read whose text contains a NEEDLE (a host fact the test knows) is a
 * leak; so is a stat, of something other than the innocent file, whose
 * size is more than 1 (the covers are empty or one newline; procfs
 * reports 0 for its text files, and a host size for kcore, config.gz).
 * An open refused with EACCES (the guest's Landlock fence: the kernel's
 * procfs is not granted reading) is counted as denied. Prints:
 *   reads: N innocent: N other: N leaks: N sizes: N denied: N swaps: N
 *   rewrites: N
 * and the first leaking text, if any.
 *
 * Exits 99 at once if HOST_MARKER (a host file) is visible: it is meant
 * for `supervisor run` only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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

#define INNOCENT "/tmp/pr/innocent"
#define TEXT "innocent-text"

static atomic_int stop;
static atomic_long swaps, rewrites;
static char path[256];
static const char *target;
static char **needles;
static int nneedles;
static long reads, innocent, other, leaks, sizes, denied;
static ino_t innocent_ino;
static char first_leak[4096];

static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (syscall(SYS_renameat2, AT_FDCWD, "/tmp/pr/a", AT_FDCWD, "/tmp/pr/b",
			    RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&swaps, 1);
	return NULL;
}

static void *rewriter(void *arg)
{
	(void)arg;
	char a[256] = INNOCENT, b[256] = {0};
	snprintf(b, sizeof b, "%s", target);
	while (!atomic_load(&stop)) {
		memcpy(path, b, sizeof path);
		memcpy(path, a, sizeof path);
		atomic_fetch_add(&rewrites, 1);
	}
	return NULL;
}

static char buf[1 << 20];

static void check_text(size_t n)
{
	buf[n] = 0;
	reads++;
	if (strcmp(buf, TEXT) == 0) {
		innocent++;
		return;
	}
	other++;
	for (int i = 0; i < nneedles; i++) {
		if (strstr(buf, needles[i])) {
			if (leaks++ == 0)
				snprintf(first_leak, sizeof first_leak, "needle %s in:\n%.3000s",
					 needles[i], buf);
			return;
		}
	}
}

static unsigned long mark;

static void one_try(const char *p)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC, 0, mark, 0);
	if (fd >= 0) {
		size_t n = 0;
		ssize_t r;
		while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
			n += (size_t)r;
		close(fd);
		check_text(n);
	} else if (errno == EACCES) {
		denied++;
	}
	struct stat st;
	if (stat(p, &st) == 0 && st.st_ino != innocent_ino && st.st_size > 1) {
		if (sizes++ == 0 && leaks == 0)
			snprintf(first_leak, sizeof first_leak, "stat size %lld",
				 (long long)st.st_size);
	}
}

static void race(void *(*fn)(void *), atomic_long *changes, const char *p, long iterations)
{
	pthread_t t;
	atomic_store(&stop, 0);
	long before = atomic_load(changes);
	if (pthread_create(&t, NULL, fn, NULL) != 0) {
		perror("procrace: thread");
		exit(2);
	}
	/* On a loaded machine the thread may not run before a short loop is
	 * over: start once it has changed the path at least once (or after
	 * a few seconds' yields: the test then finds no change). */
	for (long i = 0; i < 5000000 && atomic_load(changes) == before; i++)
		sched_yield();
	/* A marked open is native and quick: where the two threads share a
	 * CPU, a run of opens could finish within one time slice of the
	 * changer. Each marked try yields to it. */
	for (long i = 0; i < iterations; i++) {
		char copy[256];
		/* The rewrite race passes the shared buffer itself. */
		one_try(p == path ? path : strcpy(copy, p));
		if (mark)
			sched_yield();
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--mark") == 0) {
		mark = strtoul(argv[2], NULL, 0);
		argc -= 2;
		argv += 2;
	}
	if (argc < 4 || access(argv[1], F_OK) == 0) {
		fprintf(stderr, "procrace: NOT SANDBOXED (or bad arguments): refusing to run\n");
		return 99;
	}
	long iterations = atol(argv[2]);
	target = argv[3];
	needles = argv + 4;
	nneedles = argc - 4;
	struct stat st;
	int fd;
	if ((mkdir("/tmp/pr", 0755) < 0 && errno != EEXIST) ||
	    (fd = open(INNOCENT, O_CREAT | O_TRUNC | O_WRONLY, 0644)) < 0 ||
	    write(fd, TEXT, strlen(TEXT)) != (ssize_t)strlen(TEXT) || fstat(fd, &st) < 0) {
		perror("procrace: setup");
		return 2;
	}
	close(fd);
	innocent_ino = st.st_ino;
	unlink("/tmp/pr/a");
	unlink("/tmp/pr/b");
	if (symlink(INNOCENT, "/tmp/pr/a") < 0 || symlink(target, "/tmp/pr/b") < 0) {
		perror("procrace: symlinks");
		return 2;
	}
	if (mark) {
		/* Unraced first: the target through a symlink and by its own
		 * name, each refused by the fence (counted as denied) whatever
		 * the scheduler does with the races below. */
		one_try("/tmp/pr/b");
		one_try(target);
	}
	race(swapper, &swaps, "/tmp/pr/a", iterations);
	memcpy(path, INNOCENT, sizeof INNOCENT);
	race(rewriter, &rewrites, path, iterations);
	printf("reads: %ld innocent: %ld other: %ld leaks: %ld sizes: %ld denied: %ld swaps: %ld "
	       "rewrites: %ld\n",
	       reads, innocent, other, leaks, sizes, denied, atomic_load(&swaps),
	       atomic_load(&rewrites));
	if (first_leak[0])
		printf("%s\n", first_leak);
	return 0;
}
