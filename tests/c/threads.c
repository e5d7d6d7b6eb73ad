/*
 * threads: threads and spawns through glibc, whose pthread_create and
 * posix_spawn try clone3 first and fall back to clone on ENOSYS (the
 * sandbox's filter answers clone3 ENOSYS itself). Prints the same lines
 * natively and supervised (tests/programs/threads.rs).
 *
 *   threads N        N pthread_create + pthread_join, one after another;
 *                    then 8 threads at once that meet at a barrier and
 *                    add to a counter under a mutex; then a posix_spawn
 *                    of `true` and its exit status.
 *   threads clone3   a raw clone3 of a child process (flags 0, SIGCHLD),
 *                    which the kernel makes natively ("clone3: child
 *                    exited 7") and the sandbox refuses ("clone3:
 *                    ENOSYS", what glibc's probe expects).
 *   threads time N   the loop of `threads N` alone, then its wall and
 *                    this process's CPU nanoseconds per thread (for
 *                    measurements, not for tests: it prints times).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CONCURRENT 8

static pthread_barrier_t barrier;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *square(void *arg)
{
	uintptr_t n = (uintptr_t)arg;
	return (void *)(n * n);
}

static void *meet(void *arg)
{
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(&lock);
	counter += (long)(uintptr_t)arg;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* N threads, one after another; the sum of what they returned, or -1. */
static long one_by_one(long n)
{
	long sum = 0;
	for (long i = 0; i < n; i++) {
		pthread_t t;
		void *r;
		int e = pthread_create(&t, NULL, square, (void *)(uintptr_t)(i % 1000));
		if (e != 0) {
			printf("pthread_create %ld: %s\n", i, strerrorname_np(e));
			return -1;
		}
		if (pthread_join(t, &r) != 0)
			return -1;
		sum += (long)(uintptr_t)r;
	}
	return sum;
}

static int together(void)
{
	pthread_t t[CONCURRENT];
	pthread_barrier_init(&barrier, NULL, CONCURRENT);
	for (int i = 0; i < CONCURRENT; i++) {
		int e = pthread_create(&t[i], NULL, meet, (void *)(uintptr_t)(i + 1));
		if (e != 0) {
			printf("pthread_create together: %s\n", strerrorname_np(e));
			return 1;
		}
	}
	for (int i = 0; i < CONCURRENT; i++)
		pthread_join(t[i], NULL);
	printf("together: %d threads, counter %ld\n", CONCURRENT, counter);
	return 0;
}

static int spawn_true(void)
{
	char *argv[] = {"true", NULL};
	pid_t pid;
	int e = posix_spawnp(&pid, "true", NULL, NULL, argv, environ);
	if (e != 0) {
		printf("posix_spawn: %s\n", strerrorname_np(e));
		return 1;
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("posix_spawn true: exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

static int raw_clone3(void)
{
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.exit_signal = SIGCHLD;
	long r = syscall(SYS_clone3, &args, sizeof args);
	if (r == 0)
		_exit(7);
	if (r < 0) {
		printf("clone3: %s\n", strerrorname_np(errno));
		return 0;
	}
	int st;
	if (waitpid((pid_t)r, &st, 0) != r)
		return 1;
	printf("clone3: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

static long long ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int timed(long n)
{
	long long w = ns(CLOCK_MONOTONIC), c = ns(CLOCK_PROCESS_CPUTIME_ID);
	if (n <= 0 || one_by_one(n) < 0)
		return 1;
	w = ns(CLOCK_MONOTONIC) - w;
	c = ns(CLOCK_PROCESS_CPUTIME_ID) - c;
	printf("threads: %ld wall_ns_per_thread: %lld cpu_ns_per_thread: %lld\n", n, w / n, c / n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "clone3") == 0)
		return raw_clone3();
	if (argc == 3 && strcmp(argv[1], "time") == 0)
		return timed(atol(argv[2]));
	if (argc != 2) {
		fprintf(stderr, "usage: threads N | threads clone3 | threads time N\n");
		return 2;
	}
	long n = atol(argv[1]);
	long sum = one_by_one(n);
	if (sum < 0)
		return 1;
	printf("one by one: %ld threads, sum %ld\n", n, sum);
	if (together() != 0 || spawn_true() != 0)
		return 1;
	return 0;
}
