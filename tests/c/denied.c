/*
 * denied: calls each syscall the policy denies, through syscall(2), and prints
 * "case: ERRNO-NAME" (or "case: RET" if the call was not denied). Arguments are
 * chosen so that even a call that wrongly went through would do nothing
 * (invalid magic numbers, missing paths, bad pointers) — but NEVER run this
 * natively: it is for `supervisor run` only (tests/security/denied.rs). Usage:
 * `denied HOST_MARKER`; it exits 99 at once if that host file is visible,
 * i.e. when it is not in a sandbox.
 *
 * Last line: "pthread_create_fallback: 0" shows that glibc falls back from
 * clone3, which the filter refuses (ENOSYS, uncounted), to clone and
 * threads still work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/reboot.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <unistd.h>

static void show(const char *name, long r, int e)
{
	if (r < 0) {
		const char *n = strerrorname_np(e);
		printf("%s: %s\n", name, n ? n : "E?");
	} else {
		printf("%s: %ld\n", name, r);
	}
	fflush(stdout);
}

#define T(name, expr) do { \
		errno = 0; \
		long r_ = (long)(expr); \
		int e_ = errno; \
		if (r_ >= 0 && strstr(name, "socket")) \
			close((int)r_); \
		show(name, r_, e_); \
	} while (0)

static void *thread_fn(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	char buf[64];

	/* Refuse to run unsandboxed: the host marker (argv[1]) visible. */
	if (argc != 2 || access(argv[1], F_OK) == 0) {
		fprintf(stderr, "denied: NOT SANDBOXED (or no marker argument): refusing to run\n");
		return 99;
	}
	struct iovec iov = { buf, sizeof buf };

	T("mount", syscall(SYS_mount, "none", "/nonexistent-sbx", "tmpfs", 0, NULL));
	T("umount2", syscall(SYS_umount2, "/nonexistent-sbx", 0));
	T("pivot_root", syscall(SYS_pivot_root, "/nonexistent-sbx", "/nonexistent-sbx"));
	T("chroot", syscall(SYS_chroot, "/nonexistent-sbx"));
	T("unshare", syscall(SYS_unshare, CLONE_NEWNS));
	T("setns", syscall(SYS_setns, -1, 0));
	T("ptrace", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 999999, 0, 0));
	T("process_vm_readv", syscall(SYS_process_vm_readv, getpid(), &iov, 1, &iov, 1, 0));
	T("process_vm_writev", syscall(SYS_process_vm_writev, getpid(), &iov, 1, &iov, 1, 0));
	T("bpf", syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, NULL, 0));
	T("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	T("userfaultfd", syscall(SYS_userfaultfd, 0));
	T("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL));
	T("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	T("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));
	T("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
	T("add_key", syscall(SYS_add_key, "user", "sbx", "x", 1, -3));
	T("request_key", syscall(SYS_request_key, "user", "sbx-none", NULL, 0));
	T("clone3", syscall(SYS_clone3, NULL, 0));
	{
		/* clone with a namespace flag; if it ever forked, reap the child. */
		errno = 0;
		long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);
		int e = errno;
		if (r == 0)
			_exit(0);
		if (r > 0)
			waitpid(r, NULL, 0);
		show("clone_newuser", r, e);
		errno = 0;
		r = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, NULL, NULL, 0);
		e = errno;
		if (r == 0)
			_exit(0);
		if (r > 0)
			waitpid(r, NULL, 0);
		show("clone_newns", r, e);
	}
	T("iopl", syscall(SYS_iopl, 0));
	T("ioperm", syscall(SYS_ioperm, 0x80, 1, 0));
	T("syslog", syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
	T("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, 0, 0, NULL));
	T("swapon", syscall(SYS_swapon, "/nonexistent-sbx", 0));
	T("swapoff", syscall(SYS_swapoff, "/nonexistent-sbx"));
	T("acct", syscall(SYS_acct, "/nonexistent-sbx"));
	T("quotactl", syscall(SYS_quotactl, 0, "/nonexistent-sbx", 0, NULL));
	T("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0xdeadbeef));
	T("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0xdeadbeef));
	T("init_module", syscall(SYS_init_module, NULL, 0, ""));
	T("finit_module", syscall(SYS_finit_module, -1, "", 0));
	T("delete_module", syscall(SYS_delete_module, "sbx_no_such_module", O_NONBLOCK));
	T("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0));
	T("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
	T("socket_packet", syscall(SYS_socket, AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
	T("socket_inet_raw", syscall(SYS_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP));
	T("socket_netlink", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
	{
		int fd = open("/dev/null", O_RDONLY);
		char c = 'x';
		T("ioctl_tiocsti", syscall(SYS_ioctl, fd, TIOCSTI, &c));
		close(fd);
	}
	T("sethostname", syscall(SYS_sethostname, "evil", 4));
	T("fanotify_init", syscall(SYS_fanotify_init, 0, 0));
	T("pidfd_getfd", syscall(SYS_pidfd_getfd, -1, 0, 0));
	T("kcmp", syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0));
	T("unknown_1000", syscall(1000));
	{
		pthread_t t;
		int r = pthread_create(&t, NULL, thread_fn, NULL);
		if (r == 0)
			pthread_join(t, NULL);
		printf("pthread_create_fallback: %d\n", r);
	}
	return 0;
}
