/*
 * More cases of fsprobe.c (included through fsprobe_cases.h): directories,
 * mknod, unlink/rmdir/rename(2), links, attributes, openat2, inotify, chdir
 * and `..`.
 */

static void cases_dirs(void)
{
	T("mkdir_new", syscall(SYS_mkdir, "m1", 0777));
	ST("mkdir_new_stat", "m1");
	T("mkdir_existing", syscall(SYS_mkdir, "m1", 0755));
	T("mkdir_existing_file", syscall(SYS_mkdir, "f", 0755));
	T("mkdir_over_dangling", syscall(SYS_mkdir, "dang2", 0755));
	T("mkdir_trailing_slash", syscall(SYS_mkdirat, AT_FDCWD, "m2/", 0700));
	ST("mkdir_trailing_slash_stat", "m2");
	T("mkdir_missing_parent", syscall(SYS_mkdirat, AT_FDCWD, "nope/x", 0755));
	T("mkdir_under_file", syscall(SYS_mkdirat, AT_FDCWD, "f/x", 0755));
	T("mkdir_sticky", syscall(SYS_mkdirat, AT_FDCWD, "m3", 01777));
	ST("mkdir_sticky_stat", "m3");
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	T("mkdirat_dirfd", syscall(SYS_mkdirat, dfd, "sub", 0755));
	ST("mkdirat_dirfd_stat", "d/sub");

	T("mknod_fifo", syscall(SYS_mknod, "fifo1", S_IFIFO | 0666, 0));
	LST("mknod_fifo_stat", "fifo1");
	T("mknod_fifo_existing", syscall(SYS_mknodat, AT_FDCWD, "fifo1", S_IFIFO | 0644, 0));
	T("mknod_reg", syscall(SYS_mknodat, AT_FDCWD, "reg1", S_IFREG | 0600, 0));
	ST("mknod_reg_stat", "reg1");
	T("mknod_type0", syscall(SYS_mknodat, AT_FDCWD, "reg2", 0644, 0));
	ST("mknod_type0_stat", "reg2");
	T("mknod_dir_type", syscall(SYS_mknodat, AT_FDCWD, "dir1", S_IFDIR | 0755, 0));
	T("mknodat_dirfd_fifo", syscall(SYS_mknodat, dfd, "fifo2", S_IFIFO | 0600, 0));
	LST("mknodat_dirfd_fifo_stat", "d/fifo2");
	T("mknod_chr", syscall(SYS_mknodat, AT_FDCWD, "chr1", S_IFCHR | 0600, makedev(1, 3)));

	put("u1", "x", 0644);
	T("unlink_file", syscall(SYS_unlink, "u1"));
	T("unlink_again", syscall(SYS_unlink, "u1"));
	T("unlink_dir", syscall(SYS_unlink, "m1"));
	T("unlink_dot", syscall(SYS_unlinkat, AT_FDCWD, ".", 0));
	T("unlink_trailing_slash", syscall(SYS_unlinkat, AT_FDCWD, "f/", 0));
	T("unlinkat_removedir_file", syscall(SYS_unlinkat, AT_FDCWD, "f", AT_REMOVEDIR));
	T("unlinkat_bad_flags", syscall(SYS_unlinkat, AT_FDCWD, "f", 0x1));
	symlink("f", "lf2");
	T("unlink_symlink", syscall(SYS_unlink, "lf2"));
	ST("unlink_symlink_target_stays", "f");
	T("unlinkat_dirfd", syscall(SYS_unlinkat, dfd, "fifo2", 0));
	T("unlinkat_dirfd_removedir", syscall(SYS_unlinkat, dfd, "sub", AT_REMOVEDIR));

	T("rmdir_empty", syscall(SYS_rmdir, "m2"));
	T("rmdir_nonempty", syscall(SYS_rmdir, "d"));
	T("rmdir_file", syscall(SYS_rmdir, "f"));
	T("rmdir_missing", syscall(SYS_rmdir, "nope"));
	T("rmdir_dot", syscall(SYS_rmdir, "."));
	T("rmdir_dotdot", syscall(SYS_rmdir, "d/.."));
	T("rmdir_symlink_to_dir", syscall(SYS_rmdir, "ld"));

	put("r1", "r1\n", 0644);
	put("r2", "r2\n", 0644);
	mkdir("rd1", 0755);
	mkdir("rd2", 0755);
	mkdir("rd3", 0755);
	put("rd3/x", "x", 0644);
	T("rename_file_new", syscall(SYS_rename, "r1", "r1b"));
	T("rename_file_over_file", syscall(SYS_rename, "r1b", "r2"));
	content("rename_file_over_file_content", "r2");
	T("rename_file_over_dir", syscall(SYS_rename, "r2", "rd1"));
	T("rename_dir_over_empty_dir", syscall(SYS_rename, "rd1", "rd2"));
	T("rename_dir_over_nonempty_dir", syscall(SYS_rename, "rd2", "rd3"));
	T("rename_dir_over_file", syscall(SYS_rename, "rd2", "r2"));
	T("rename_dir_into_itself", syscall(SYS_rename, "rd3", "rd3/y"));
	T("rename_same", syscall(SYS_rename, "r2", "r2"));
	T("rename_missing", syscall(SYS_rename, "nope", "x"));
	T("rename_dot", syscall(SYS_rename, ".", "x"));
	symlink("r2", "lr");
	T("rename_symlink", syscall(SYS_renameat, AT_FDCWD, "lr", AT_FDCWD, "lr2"));
	LST("rename_symlink_stat", "lr2");
	int d2 = open("rd3", O_RDONLY | O_DIRECTORY);
	T("renameat_two_dirfds", syscall(SYS_renameat, dfd, "inner", d2, "inner_moved"));
	content("renameat_two_dirfds_content", "rd3/inner_moved");
	T("renameat_two_dirfds_back", syscall(SYS_renameat, d2, "inner_moved", dfd, "inner"));
	close(d2);
	put("x1", "one\n", 0644);
	put("x2", "two\n", 0644);
	T("renameat2_noreplace_existing", syscall(SYS_renameat2, AT_FDCWD, "x1", AT_FDCWD, "x2", RENAME_NOREPLACE));
	T("renameat2_noreplace_new", syscall(SYS_renameat2, AT_FDCWD, "x1", AT_FDCWD, "x3", RENAME_NOREPLACE));
	T("renameat2_exchange", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "x3", RENAME_EXCHANGE));
	content("renameat2_exchange_x2", "x2");
	content("renameat2_exchange_x3", "x3");
	T("renameat2_exchange_missing", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "nope", RENAME_EXCHANGE));
	T("renameat2_exchange_file_dir", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "rd2", RENAME_EXCHANGE));
	LST("renameat2_exchange_file_dir_x2", "x2");
	LST("renameat2_exchange_file_dir_rd2", "rd2");
	T("renameat2_bad_flags", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "x3", RENAME_NOREPLACE | RENAME_EXCHANGE));
	close(dfd);
}

static void cases_links(void)
{
	put("l0", "link me\n", 0644);
	T("link_new", syscall(SYS_link, "l0", "l1"));
	ST("link_new_stat", "l0");
	T("link_existing", syscall(SYS_link, "l0", "l1"));
	T("link_dir", syscall(SYS_link, "d", "dl"));
	T("link_missing", syscall(SYS_link, "nope", "l2"));
	T("link_symlink_nofollow", syscall(SYS_linkat, AT_FDCWD, "lf", AT_FDCWD, "l3", 0));
	LST("link_symlink_nofollow_stat", "l3");
	T("link_symlink_follow", syscall(SYS_linkat, AT_FDCWD, "lf", AT_FDCWD, "l4", AT_SYMLINK_FOLLOW));
	LST("link_symlink_follow_stat", "l4");
	T("linkat_bad_flags", syscall(SYS_linkat, AT_FDCWD, "l0", AT_FDCWD, "l5", 0x1));
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	T("linkat_dirfd", syscall(SYS_linkat, dfd, "inner", AT_FDCWD, "l6", 0));
	ST("linkat_dirfd_stat", "d/inner");
	T("symlink_new", syscall(SYS_symlink, "l0", "s1"));
	LST("symlink_new_stat", "s1");
	rdlink("symlink_new_readlink", AT_FDCWD, "s1", 100);
	T("symlink_existing", syscall(SYS_symlink, "x", "s1"));
	T("symlink_empty_target", syscall(SYS_symlink, "", "s2"));
	T("symlink_missing_parent", syscall(SYS_symlink, "x", "nope/s"));
	T("symlinkat_dirfd", syscall(SYS_symlinkat, "../f", dfd, "s3"));
	content("symlinkat_dirfd_content", "d/s3");
	T("unlink_s3", syscall(SYS_unlinkat, dfd, "s3", 0));
	close(dfd);
}

static void cases_attrs(void)
{
	put("c1", "c\n", 0644);
	T("chmod_0600", syscall(SYS_chmod, "c1", 0600));
	ST("chmod_0600_stat", "c1");
	T("chmod_via_symlink", syscall(SYS_chmod, "lf", 0640));
	ST("chmod_via_symlink_target", "f");
	T("chmod_missing", syscall(SYS_chmod, "nope", 0644));
	/* Set-id bits that make no program: those that do are dropped on the
	 * host's file systems (handlers/setid.rs, tests/fs/host_shared.rs). */
	T("chmod_special_bits", syscall(SYS_chmod, "c1", 07644));
	ST("chmod_special_bits_stat", "c1");
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	T("fchmodat_dirfd", syscall(SYS_fchmodat, dfd, "inner", 0604));
	ST("fchmodat_dirfd_stat", "d/inner");
	T("fchmodat2_nofollow_symlink", syscall(SYS_fchmodat2, AT_FDCWD, "lf", 0600, AT_SYMLINK_NOFOLLOW));
	T("fchmodat2_nofollow_file", syscall(SYS_fchmodat2, AT_FDCWD, "c1", 0644, AT_SYMLINK_NOFOLLOW));
	ST("fchmodat2_nofollow_file_stat", "c1");
	T("fchmodat2_bad_flags", syscall(SYS_fchmodat2, AT_FDCWD, "c1", 0644, 0x1));

	T("chown_own", syscall(SYS_chown, "c1", getuid(), getgid()));
	T("chown_minus1", syscall(SYS_chown, "c1", -1, -1));
	T("lchown_own", syscall(SYS_lchown, "lf", getuid(), getgid()));
	T("fchownat_dirfd_own", syscall(SYS_fchownat, dfd, "inner", getuid(), getgid(), 0));
	T("fchownat_nofollow_own", syscall(SYS_fchownat, AT_FDCWD, "lf", -1, getgid(), AT_SYMLINK_NOFOLLOW));
	T("chown_missing", syscall(SYS_chown, "nope", getuid(), getgid()));
	put("c2", "", 0644);
	T("chown_other", syscall(SYS_chown, "c2", getuid() + 1234, -1));
	ST("chown_other_stat", "c2");

	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000005, 500 } };
	T("utimensat_explicit", syscall(SYS_utimensat, AT_FDCWD, "c1", ts, 0));
	times_of("utimensat_explicit_times", "c1");
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 1200000000, 7 } };
	T("utimensat_omit_atime", syscall(SYS_utimensat, AT_FDCWD, "c1", omit, 0));
	times_of("utimensat_omit_atime_times", "c1");
	struct timespec both_omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	T("utimensat_omit_both", syscall(SYS_utimensat, AT_FDCWD, "c1", both_omit, 0));
	times_of("utimensat_omit_both_times", "c1");
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	T("utimensat_now_atime", syscall(SYS_utimensat, AT_FDCWD, "c1", now, 0));
	{
		struct stat st;
		stat("c1", &st);
		printf("utimensat_now_atime_recent: %s mtime=%lld\n", st.st_atime > 1600000000 ? "yes" : "no",
		       (long long)st.st_mtime);
	}
	T("utimensat_null_times", syscall(SYS_utimensat, AT_FDCWD, "c1", NULL, 0));
	T("utimensat_missing", syscall(SYS_utimensat, AT_FDCWD, "nope", ts, 0));
	T("utimensat_nofollow_symlink", syscall(SYS_utimensat, AT_FDCWD, "lf", ts, AT_SYMLINK_NOFOLLOW));
	times_of("utimensat_nofollow_symlink_times", "lf");
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
	T("utimensat_bad_nsec", syscall(SYS_utimensat, AT_FDCWD, "c1", bad, 0));
	T("utimensat_dirfd", syscall(SYS_utimensat, dfd, "inner", ts, 0));
	times_of("utimensat_dirfd_times", "d/inner");
	struct timeval tv[2] = { { 1100000000, 1 }, { 1100000001, 2 } };
	T("utimes", syscall(SYS_utimes, "c1", tv));
	times_of("utimes_times", "c1");
	struct utimbuf ub = { 1300000000, 1300000001 };
	T("utime", syscall(SYS_utime, "c1", &ub));
	times_of("utime_times", "c1");
	T("futimesat_dirfd", syscall(SYS_futimesat, dfd, "inner", tv));
	times_of("futimesat_dirfd_times", "d/inner");

	put("t1", "0123456789", 0644);
	T("truncate_grow", syscall(SYS_truncate, "t1", 100));
	ST("truncate_grow_stat", "t1");
	T("truncate_shrink", syscall(SYS_truncate, "t1", 3));
	content("truncate_shrink_content", "t1");
	T("truncate_via_symlink", syscall(SYS_truncate, "lf", 2));
	ST("truncate_via_symlink_stat", "f");
	T("truncate_dir", syscall(SYS_truncate, "d", 0));
	T("truncate_missing", syscall(SYS_truncate, "nope", 0));
	T("truncate_negative", syscall(SYS_truncate, "t1", (long)-1));

	struct statfs a, b;
	errno = 0;
	if (syscall(SYS_statfs, ".", &a) < 0 || syscall(SYS_statfs, "f", &b) < 0)
		show("statfs", -1, errno, 0);
	else
		printf("statfs: type=%lx bsize=%ld namelen=%ld same_for_file=%s\n", (long)a.f_type,
		       (long)a.f_bsize, (long)a.f_namelen, a.f_type == b.f_type ? "yes" : "no");
	T("statfs_missing", syscall(SYS_statfs, "nope", &a));
	T("statfs_efault", syscall(SYS_statfs, "f", (void *)1));
	close(dfd);
}

static void cases_openat2(void)
{
	size_t sz = sizeof(struct open_how);
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	F("openat2_plain", oa2(AT_FDCWD, "f", O_RDONLY, 0, 0, sz));
	F("openat2_beneath_ok", oa2(AT_FDCWD, "d/inner", O_RDONLY, 0, RESOLVE_BENEATH, sz));
	F("openat2_beneath_dotdot", oa2(dfd, "../f", O_RDONLY, 0, RESOLVE_BENEATH, sz));
	F("openat2_beneath_absolute", oa2(dfd, "/etc/passwd", O_RDONLY, 0, RESOLVE_BENEATH, sz));
	F("openat2_beneath_abs_symlink", oa2(AT_FDCWD, "labs", O_RDONLY, 0, RESOLVE_BENEATH, sz));
	F("openat2_in_root_abs", oa2(dfd, "/inner", O_RDONLY, 0, RESOLVE_IN_ROOT, sz));
	F("openat2_in_root_dotdot", oa2(dfd, "../../../inner", O_RDONLY, 0, RESOLVE_IN_ROOT, sz));
	F("openat2_in_root_escape", oa2(dfd, "../f", O_RDONLY, 0, RESOLVE_IN_ROOT, sz));
	F("openat2_no_symlinks", oa2(AT_FDCWD, "lf", O_RDONLY, 0, RESOLVE_NO_SYMLINKS, sz));
	F("openat2_no_symlinks_dir", oa2(AT_FDCWD, "ld/inner", O_RDONLY, 0, RESOLVE_NO_SYMLINKS, sz));
	F("openat2_no_symlinks_ok", oa2(AT_FDCWD, "f", O_RDONLY, 0, RESOLVE_NO_SYMLINKS, sz));
	F("openat2_no_xdev_ok", oa2(AT_FDCWD, "d/inner", O_RDONLY, 0, RESOLVE_NO_XDEV, sz));
	F("openat2_bad_size", oa2(AT_FDCWD, "f", O_RDONLY, 0, 0, 8));
	F("openat2_bad_resolve", oa2(AT_FDCWD, "f", O_RDONLY, 0, 1ULL << 40, sz));
	F("openat2_mode_without_creat", oa2(AT_FDCWD, "f", O_RDONLY, 0644, 0, sz));
	F("openat2_creat", oa2(AT_FDCWD, "oa2new", O_CREAT | O_WRONLY, 0604, RESOLVE_BENEATH, sz));
	ST("openat2_creat_stat", "oa2new");
	F("openat2_ebadf", oa2(9999, "f", O_RDONLY, 0, RESOLVE_BENEATH, sz));
	close(dfd);
}

static void cases_misc(const char *scratch)
{
	int in = inotify_init1(IN_NONBLOCK);
	T("inotify_add_watch_dir", inotify_add_watch(in, ".", IN_CREATE));
	T("inotify_add_watch_missing", inotify_add_watch(in, "nope", IN_CREATE));
	T("inotify_add_watch_dontfollow", inotify_add_watch(in, "lf", IN_ATTRIB | IN_DONT_FOLLOW));
	T("inotify_add_watch_onlydir_file", inotify_add_watch(in, "f", IN_ATTRIB | IN_ONLYDIR));
	T("inotify_add_watch_zero_mask", inotify_add_watch(in, "f", 0));
	put("ino_created", "", 0644);
	{
		char buf[4096] __attribute__((aligned(8)));
		ssize_t n = read(in, buf, sizeof buf);
		struct inotify_event *ev = (struct inotify_event *)buf;
		if (n <= 0)
			show("inotify_event", -1, errno, 0);
		else
			printf("inotify_event: wd=%d create=%s name=%s\n", ev->wd,
			       ev->mask & IN_CREATE ? "yes" : "no", ev->len ? ev->name : "");
	}
	close(in);

	char cwd[PATH_MAX];
	T("chdir_sub", syscall(SYS_chdir, "d"));
	printf("getcwd_sub: %s\n", getcwd(cwd, sizeof cwd) ? cwd : "ERR");
	F("relative_after_chdir", syscall(SYS_open, "inner", O_RDONLY));
	ST("relative_dotdot_after_chdir", "../f");
	T("chdir_file", syscall(SYS_chdir, "../f"));
	T("chdir_missing", syscall(SYS_chdir, "nope"));
	T("chdir_dotdot", syscall(SYS_chdir, ".."));
	printf("getcwd_back: %s\n", getcwd(cwd, sizeof cwd) ? cwd : "ERR");
	T("chdir_symlink_dir", syscall(SYS_chdir, "ld"));
	printf("getcwd_symlink_dir: %s\n", getcwd(cwd, sizeof cwd) ? cwd : "ERR");
	ST("dotdot_after_symlink_chdir", "../f");
	int s = open(scratch, O_RDONLY | O_DIRECTORY);
	T("fchdir_back", syscall(SYS_fchdir, s));
	close(s);
	ST("dotdot_sub_dotdot", "d/../f");
	ST("dotdot_symlink_dotdot", "ld/../f");
	ST("dotdot_missing_dotdot", "nope/../f");
	ST("dotdot_file_dotdot", "f/../f");
	ST("dot_components", "./d/./inner");
	ST("double_slash", "d//inner");
	ST("trailing_dot_file", "f/.");
	ST("trailing_slash_dir", "d/");
	ST("trailing_slash_symlink_dir", "ld/");
	LST("lstat_trailing_slash_symlink_dir", "ld/");
	char up[PATH_MAX];
	const char *base = strrchr(scratch, '/');
	snprintf(up, sizeof up, "..%s/f", base ? base : "/");
	ST("dotdot_and_back", up);
}

/* /proc/self and friends name the calling guest process, also in serviced
 * calls (the supervisor must not resolve them as itself). */
static void cases_proc(void)
{
	char buf[PATH_MAX], want[32];
	snprintf(want, sizeof want, "%d", getpid());
	long r = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self", buf, sizeof buf - 1);
	buf[r < 0 ? 0 : r] = 0;
	printf("proc_self_is_getpid: %s\n", strcmp(buf, want) == 0 ? "yes" : buf);
	rdlink("proc_self_cwd", AT_FDCWD, "/proc/self/cwd", sizeof buf);
	rdlink("proc_self_exe_size0", AT_FDCWD, "/proc/self/exe", 0);
	ST("proc_self_cwd_file", "/proc/self/cwd/f");
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d/inner", dfd);
	ST("proc_self_fd_dir_file", p);
	F("proc_self_fd_dir_open", syscall(SYS_openat, AT_FDCWD, p, O_RDONLY));
	snprintf(p, sizeof p, "/proc/%d/cwd/f", getpid());
	ST("proc_pid_cwd_file", p);
	snprintf(p, sizeof p, "/proc/thread-self/fd/%d", dfd);
	ST("proc_thread_self_fd", p);
	T("proc_self_access", syscall(SYS_access, "/proc/self/status", R_OK));
	close(dfd);
}
