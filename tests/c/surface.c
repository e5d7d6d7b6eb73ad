/*
 * surface: probes the 17 kernel entry points that the first steps of public
 * container-escape and privilege-escalation exploits reach from a sandbox
 * (issue 35), one line each: "case: reached" when the call got to the host
 * kernel (it succeeded, or failed with the kernel's own errno), "case:
 * refused ERRNO" when it failed with the errno the sandbox's policy answers
 * for it. Three cases (sync, mbind, set_mempolicy) succeed whether the kernel
 * or the supervisor answered them; they print "case: 0" and the test tells
 * them apart by the supervisor's trace. Usage: `surface DIR` with DIR a
 * writable directory. Safe to run natively: every object it makes (a message
 * queue, an AIO context, files in DIR) is removed, and the personality
 * changes are made in a child that exits at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static void verdict(const char *name, long r, int e, int refusal)
{
	if (r < 0 && e == refusal)
		printf("%s: refused %s\n", name, strerrorname_np(e));
	else
		printf("%s: reached\n", name);
	fflush(stdout);
}

static void plain(const char *name, long r, int e)
{
	if (r < 0)
		printf("%s: %s\n", name, strerrorname_np(e));
	else
		printf("%s: %ld\n", name, r);
	fflush(stdout);
}

#define V(name, refusal, expr) do { errno = 0; long r_ = (long)(expr); \
		verdict(name, r_, errno, refusal); } while (0)
#define P(name, expr) do { errno = 0; long r_ = (long)(expr); \
		plain(name, r_, errno); } while (0)

/* personality(persona) in a child: its exit status says what happened. */
static void persona(const char *name, unsigned long p)
{
	pid_t c = fork();
	if (c == 0) {
		errno = 0;
		int r = personality(p);
		_exit(r < 0 ? (errno == EPERM ? 1 : 2) : 0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 1)
		printf("%s: refused EPERM\n", name);
	else
		printf("%s: reached\n", name);
	fflush(stdout);
}

static long rtnetlink_dump(int fd)
{
	struct {
		struct nlmsghdr nh;
		struct rtgenmsg g;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.g = { .rtgen_family = AF_UNSPEC },
	};
	if (send(fd, &req, sizeof(req), 0) < 0)
		return -1;
	char buf[16384];
	return recv(fd, buf, sizeof(buf), 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: surface DIR\n");
		return 2;
	}
	char a[4096], b[4096];
	snprintf(a, sizeof(a), "%s/surface-a", argv[1]);
	snprintf(b, sizeof(b), "%s/surface-b", argv[1]);
	int fa = open(a, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int fb = open(b, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fa < 0 || fb < 0 || write(fa, "surface probe\n", 14) != 14) {
		perror("surface: files");
		return 2;
	}
	long page = sysconf(_SC_PAGESIZE);

	/* 1. splice of a read-only file into a pipe (Dirty Pipe's first step). */
	{
		int ro = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), p[2];
		if (ro < 0 || pipe(p) < 0)
			return 2;
		V("splice_ro_file_to_pipe", ENOSYS, splice(ro, NULL, p[1], NULL, 64, 0));
		close(ro), close(p[0]), close(p[1]);
	}
	/* 2. madvise(MADV_DONTNEED). */
	{
		char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		m[0] = 1;
		V("madvise_dontneed", EINVAL, madvise(m, page, MADV_DONTNEED));
		munmap(m, page);
	}
	/* 3. SysV message queues. */
	{
		errno = 0;
		int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		verdict("msgget", q, errno, ENOSYS);
		if (q >= 0)
			msgctl(q, IPC_RMID, NULL);
	}
	/* 4. user.* extended attributes. */
	V("setxattr_user", EPERM, fsetxattr(fa, "user.surface", "1", 1, 0));
	/* 5, 6. An rtnetlink socket, and a dump of the links. */
	{
		errno = 0;
		int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		verdict("rtnetlink_socket", s, errno, EAFNOSUPPORT);
		if (s >= 0) {
			V("rtnetlink_dump", EAFNOSUPPORT, rtnetlink_dump(s));
			close(s);
		} else {
			printf("rtnetlink_dump: refused %s\n", strerrorname_np(EAFNOSUPPORT));
		}
	}
	/* 7. Kernel AIO. */
	{
		aio_context_t ctx = 0;
		errno = 0;
		long r = syscall(SYS_io_setup, 1, &ctx);
		verdict("io_setup", r, errno, ENOSYS);
		if (r == 0)
			syscall(SYS_io_destroy, ctx);
	}
	/* 8. sync. */
	P("sync", syscall(SYS_sync));
	/* 9, 10. FS_IOC_GETFLAGS and FS_IOC_SETFLAGS (to the flags it has). */
	{
		int flags = 0;
		errno = 0;
		long r = ioctl(fa, FS_IOC_GETFLAGS, &flags);
		verdict("fs_ioc_getflags", r, errno, ENOTTY);
		V("fs_ioc_setflags", ENOTTY, ioctl(fa, FS_IOC_SETFLAGS, &flags));
	}
	/* 11. FIEMAP. */
	{
		struct fiemap fm = { .fm_length = ~0ULL, .fm_extent_count = 0 };
		V("fiemap", ENOTTY, ioctl(fa, FS_IOC_FIEMAP, &fm));
	}
	/* 12. FICLONE. */
	V("ficlone", ENOTTY, ioctl(fb, FICLONE, fa));
	/* 13, 14. personality(READ_IMPLIES_EXEC), personality(ADDR_NO_RANDOMIZE). */
	persona("personality_read_implies_exec", READ_IMPLIES_EXEC);
	persona("personality_addr_no_randomize", ADDR_NO_RANDOMIZE);
	/* 15. remap_file_pages. */
	{
		char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		V("remap_file_pages", ENOSYS, remap_file_pages(m, page, 0, 1, 0));
		munmap(m, 2 * page);
	}
	/* 16, 17. mbind and set_mempolicy, to node 0. */
	{
		char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long node0 = 1;
		P("mbind", syscall(SYS_mbind, m, page, 2 /* MPOL_BIND */, &node0, 2, 0));
		P("set_mempolicy", syscall(SYS_set_mempolicy, 2 /* MPOL_BIND */, &node0, 2));
		P("set_mempolicy_default", syscall(SYS_set_mempolicy, 0, NULL, 0));
		munmap(m, page);
	}
	close(fa), close(fb);
	unlink(a), unlink(b);
	return 0;
}
