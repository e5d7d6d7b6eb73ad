/*
 * fsprobe: exercises every path call the supervisor services, with its edge
 * cases, and prints one line per case: "name: result", where result is the
 * return value (fds print as "fd") or the errno's name. Stat results print as
 * type/mode/size/nlink/ownership, never inode, device or times (except times
 * the program set itself).
 *
 * Usage: fsprobe SCRATCH   (an empty directory; the program chdirs into it)
 *
 * Run natively and under `supervisor run --rw PARENT:PARENT`; the outputs must
 * be equal, except the cases tests/fs/fsprobe.rs lists as privilege-dependent
 * (root natively has capabilities; root in the sandbox has none).
 *
 * Legacy syscall numbers (open, stat, mkdir, ...) are called through
 * syscall(2) so each number the policy services is exercised, not only the
 * *at forms that glibc uses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>
#include <dirent.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

static void show(const char *name, long r, int e, int is_fd)
{
	if (r < 0) {
		const char *n = strerrorname_np(e);
		printf("%s: %s\n", name, n ? n : "E?");
	} else if (is_fd) {
		printf("%s: fd\n", name);
		close((int)r);
	} else {
		printf("%s: %ld\n", name, r);
	}
	fflush(stdout);
}

/* T: a call returning a value; F: a call returning an fd (closed after). */
#define T(name, expr) do { errno = 0; long r_ = (long)(expr); show(name, r_, errno, 0); } while (0)
#define F(name, expr) do { errno = 0; long r_ = (long)(expr); show(name, r_, errno, 1); } while (0)

static const char *ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFIFO: return "fifo";
	case S_IFCHR: return "chr";
	case S_IFSOCK: return "sock";
	default: return "other";
	}
}

static void pst(const char *name, const struct stat *st)
{
	printf("%s: %s mode=%04o size=%lld nlink=%ld own=%s\n", name, ftype(st->st_mode),
	       st->st_mode & 07777, (long long)(S_ISDIR(st->st_mode) ? 0 : st->st_size),
	       (long)st->st_nlink,
	       st->st_uid == getuid() && st->st_gid == getgid() ? "yes" : "no");
	fflush(stdout);
}

/* Stat through a given syscall form; prints result or errno. */
static void st_at(const char *name, int dfd, const char *p, int flags)
{
	struct stat st;
	errno = 0;
	if (syscall(SYS_newfstatat, dfd, p, &st, flags) < 0)
		show(name, -1, errno, 0);
	else
		pst(name, &st);
}
#define ST(name, p) st_at(name, AT_FDCWD, p, 0)
#define LST(name, p) st_at(name, AT_FDCWD, p, AT_SYMLINK_NOFOLLOW)

static void legacy_stat(const char *name, const char *p, int lstat_)
{
	struct stat st;
	errno = 0;
	if (syscall(lstat_ ? SYS_lstat : SYS_stat, p, &st) < 0)
		show(name, -1, errno, 0);
	else
		pst(name, &st);
}

static void times_of(const char *name, const char *p)
{
	struct stat st;
	if (syscall(SYS_newfstatat, AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		show(name, -1, errno, 0);
		return;
	}
	printf("%s: atime=%lld.%09ld mtime=%lld.%09ld\n", name, (long long)st.st_atim.tv_sec,
	       st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	fflush(stdout);
}

static void content(const char *name, const char *p)
{
	char buf[256];
	int fd = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
	if (fd < 0) {
		show(name, -1, errno, 0);
		return;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = '|';
	printf("%s: \"%s\"\n", name, buf);
	fflush(stdout);
}

static void put(const char *p, const char *data, mode_t mode)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, mode);
	if (fd < 0 || write(fd, data, strlen(data)) < 0) {
		perror(p);
		exit(2);
	}
	close(fd);
}

static void rdlink(const char *name, int dfd, const char *p, size_t sz)
{
	char buf[PATH_MAX];
	memset(buf, 0, sizeof buf);
	errno = 0;
	long r = syscall(SYS_readlinkat, dfd, p, buf, sz);
	if (r < 0)
		show(name, -1, errno, 0);
	else
		printf("%s: %ld \"%.*s\"\n", name, r, (int)r, buf);
	fflush(stdout);
}

static void listdir(const char *name, const char *p)
{
	struct dirent **ents;
	int n = scandir(p, &ents, NULL, alphasort);
	if (n < 0) {
		show(name, -1, errno, 0);
		return;
	}
	printf("%s:", name);
	for (int i = 0; i < n; i++) {
		printf(" %s", ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	printf("\n");
	fflush(stdout);
}

static long oa2(int dfd, const char *p, int flags, int mode, unsigned long long resolve, size_t size)
{
	struct open_how how = { .flags = flags, .mode = mode, .resolve = resolve };
	return syscall(SYS_openat2, dfd, p, &how, size);
}

#include "fsprobe_cases.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fsprobe SCRATCH\n");
		return 2;
	}
	umask(022);
	if (chdir(argv[1]) < 0) {
		perror("chdir");
		return 2;
	}
	/* Fixture. */
	put("f", "hello\n", 0644);
	mkdir("d", 0755);
	put("d/inner", "inner\n", 0644);
	symlink("f", "lf");
	symlink("d", "ld");
	symlink("nonexist_target", "dang");
	symlink("nonexist2", "dang2");
	symlink("loop2", "loop1");
	symlink("loop1", "loop2");
	char abs[PATH_MAX];
	snprintf(abs, sizeof abs, "%s/f", argv[1]);
	symlink(abs, "labs");

	cases_open();
	cases_names();
	cases_stat();
	cases_dirs();
	cases_links();
	cases_attrs();
	cases_openat2();
	cases_misc(argv[1]);
	cases_proc();
	listdir("final_listing", ".");
	listdir("final_listing_d", "d");
	return 0;
}
