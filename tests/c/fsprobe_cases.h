/*
 * The cases of fsprobe.c (included by it; not a separate program). Grouped:
 * open/creat, long and bad names, stat/access/readlink, mkdir/mknod/unlink/
 * rmdir/rename, link/symlink, chmod/chown/utimes/truncate/statfs, openat2,
 * and inotify/chdir/`..`.
 */

static void cases_open(void)
{
	F("open_rdonly", syscall(SYS_open, "f", O_RDONLY));
	F("open_creat_new", syscall(SYS_open, "new1", O_CREAT | O_WRONLY, 0640));
	ST("open_creat_new_stat", "new1");
	F("open_creat_umask", syscall(SYS_openat, AT_FDCWD, "new2", O_CREAT | O_WRONLY, 0777));
	ST("open_creat_umask_stat", "new2");
	F("creat_new", syscall(SYS_creat, "new3", 0600));
	ST("creat_new_stat", "new3");
	F("open_excl_existing", syscall(SYS_openat, AT_FDCWD, "f", O_CREAT | O_EXCL | O_WRONLY, 0644));
	F("open_excl_dangling", syscall(SYS_openat, AT_FDCWD, "dang", O_CREAT | O_EXCL | O_WRONLY, 0644));
	F("open_excl_symlink", syscall(SYS_openat, AT_FDCWD, "lf", O_CREAT | O_EXCL | O_WRONLY, 0644));
	F("open_creat_dangling", syscall(SYS_openat, AT_FDCWD, "dang", O_CREAT | O_WRONLY, 0644));
	ST("open_creat_dangling_target", "nonexist_target");
	F("open_nofollow_symlink", syscall(SYS_openat, AT_FDCWD, "lf", O_RDONLY | O_NOFOLLOW));
	F("open_nofollow_file", syscall(SYS_openat, AT_FDCWD, "f", O_RDONLY | O_NOFOLLOW));
	{
		errno = 0;
		int fd = syscall(SYS_openat, AT_FDCWD, "lf", O_PATH | O_NOFOLLOW);
		struct stat st;
		show("open_path_nofollow", fd < 0 ? -1 : 0, errno, 0);
		errno = 0;
		if (fstat(fd, &st) == 0)
			pst("open_path_nofollow_fstat", &st);
		else
			show("open_path_nofollow_fstat", -1, errno, 0);
		rdlink("readlinkat_empty_path", fd, "", 100);
		if (fd >= 0)
			close(fd);
	}
	{
		errno = 0;
		int fd = syscall(SYS_openat, AT_FDCWD, "d", O_PATH | O_DIRECTORY);
		show("open_path_dir", fd < 0 ? -1 : 0, errno, 0);
		st_at("open_path_dir_fstatat", fd, "inner", 0);
		F("open_path_dir_openat", syscall(SYS_openat, fd, "inner", O_RDONLY));
		if (fd >= 0)
			close(fd);
	}
	F("open_directory_file", syscall(SYS_openat, AT_FDCWD, "f", O_RDONLY | O_DIRECTORY));
	F("open_directory_dir", syscall(SYS_openat, AT_FDCWD, "d", O_RDONLY | O_DIRECTORY));
	F("open_directory_symlink_dir", syscall(SYS_openat, AT_FDCWD, "ld", O_RDONLY | O_DIRECTORY));
	F("open_wronly_dir", syscall(SYS_openat, AT_FDCWD, "d", O_WRONLY));
	F("open_creat_dir", syscall(SYS_openat, AT_FDCWD, "d", O_CREAT | O_RDONLY, 0644));
	F("open_missing", syscall(SYS_openat, AT_FDCWD, "nope", O_RDONLY));
	F("open_missing_parent", syscall(SYS_openat, AT_FDCWD, "nope/x", O_CREAT | O_WRONLY, 0644));
	F("open_file_as_dir", syscall(SYS_openat, AT_FDCWD, "f/x", O_RDONLY));
	F("open_file_trailing_slash", syscall(SYS_openat, AT_FDCWD, "f/", O_RDONLY));
	F("open_creat_trailing_slash", syscall(SYS_openat, AT_FDCWD, "newdir/", O_CREAT | O_WRONLY, 0644));
	F("open_loop", syscall(SYS_openat, AT_FDCWD, "loop1", O_RDONLY));
	F("open_empty", syscall(SYS_openat, AT_FDCWD, "", O_RDONLY));
	put("tr", "0123456789", 0644);
	F("open_trunc", syscall(SYS_openat, AT_FDCWD, "tr", O_WRONLY | O_TRUNC));
	ST("open_trunc_stat", "tr");
	{
		int fd = syscall(SYS_openat, AT_FDCWD, "tr", O_WRONLY | O_APPEND);
		T("open_append_write", write(fd, "ab", 2) + write(fd, "cd\n", 3));
		close(fd);
		content("open_append_content", "tr");
	}
	{
		errno = 0;
		int fd = syscall(SYS_openat, AT_FDCWD, ".", O_TMPFILE | O_RDWR, 0600);
		struct stat st;
		show("open_tmpfile", fd < 0 ? -1 : 0, errno, 0);
		if (fd >= 0) {
			T("open_tmpfile_write", write(fd, "tmp\n", 4));
			if (fstat(fd, &st) == 0)
				pst("open_tmpfile_fstat", &st);
			char p[64];
			snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
			T("open_tmpfile_link_procfd",
			  syscall(SYS_linkat, AT_FDCWD, p, AT_FDCWD, "tmpmat", AT_SYMLINK_FOLLOW));
			ST("open_tmpfile_linked_stat", "tmpmat");
			content("open_tmpfile_linked_content", "tmpmat");
			close(fd);
		}
	}
	F("open_tmpfile_on_file", syscall(SYS_openat, AT_FDCWD, "f", O_TMPFILE | O_RDWR, 0600));
	F("open_tmpfile_excl_missing", syscall(SYS_openat, AT_FDCWD, "nope", O_TMPFILE | O_RDWR, 0600));
	/* Permission checks that root bypasses natively (privilege-dependent). */
	put("m000", "secret\n", 0000);
	chmod("m000", 0);
	F("open_mode000_rd", syscall(SYS_openat, AT_FDCWD, "m000", O_RDONLY));
	put("m444", "ro\n", 0444);
	F("open_mode444_wr", syscall(SYS_openat, AT_FDCWD, "m444", O_WRONLY));
	F("open_noatime_own", syscall(SYS_openat, AT_FDCWD, "f", O_RDONLY | O_NOATIME));
}

static void cases_names(void)
{
	static char comp[300], path[5000];
	memset(comp, 'a', 256);
	comp[256] = 0;
	F("name_component_256", syscall(SYS_openat, AT_FDCWD, comp, O_RDONLY));
	T("name_component_256_mkdir", syscall(SYS_mkdirat, AT_FDCWD, comp, 0755));
	comp[255] = 0;
	F("name_component_255_create", syscall(SYS_openat, AT_FDCWD, comp, O_CREAT | O_WRONLY, 0644));
	T("name_component_255_unlink", syscall(SYS_unlinkat, AT_FDCWD, comp, 0));
	/* "./" repeated: 4096 characters is too long, 4095 is fine. */
	for (int i = 0; i < 2048; i++)
		memcpy(path + 2 * i, "./", 2);
	path[4096] = 0;
	F("name_path_4096", syscall(SYS_openat, AT_FDCWD, path, O_RDONLY));
	legacy_stat("name_path_4096_stat", path, 0);
	path[4094] = 'f';
	path[4095] = 0;
	F("name_path_4095", syscall(SYS_openat, AT_FDCWD, path, O_RDONLY));
	/* Bad pointers. */
	F("efault_path", syscall(SYS_openat, AT_FDCWD, (char *)1, O_RDONLY));
	F("efault_null_path", syscall(SYS_open, NULL, O_RDONLY));
	T("efault_stat_buf", syscall(SYS_newfstatat, AT_FDCWD, "f", (void *)1, 0));
	T("efault_statx_buf", syscall(SYS_statx, AT_FDCWD, "f", 0, STATX_BASIC_STATS, (void *)1));
	T("efault_readlink_buf", syscall(SYS_readlinkat, AT_FDCWD, "lf", (char *)1, 10));
	T("efault_mkdir_path", syscall(SYS_mkdir, (char *)1, 0755));
	T("efault_rename_new", syscall(SYS_rename, "new3", (char *)1));
	T("efault_openat2_how", syscall(SYS_openat2, AT_FDCWD, "f", (void *)1, sizeof(struct open_how)));
	/* Bad dirfds. */
	F("ebadf_dirfd_open", syscall(SYS_openat, 9999, "f", O_RDONLY));
	char abs[PATH_MAX];
	if (getcwd(abs, sizeof abs - 3))
		strcat(abs, "/f");
	F("ebadf_dirfd_absolute_ok", syscall(SYS_openat, 9999, abs, O_RDONLY));
	st_at("ebadf_dirfd_stat", 9999, "f", 0);
	T("ebadf_dirfd_mkdir", syscall(SYS_mkdirat, 9999, "x", 0755));
	T("ebadf_dirfd_unlink", syscall(SYS_unlinkat, 9999, "f", 0));
	T("ebadf_dirfd_readlink", syscall(SYS_readlinkat, 9999, "lf", abs, 10));
	int ffd = open("f", O_RDONLY);
	F("enotdir_dirfd_open", syscall(SYS_openat, ffd, "x", O_RDONLY));
	T("enotdir_dirfd_mkdir", syscall(SYS_mkdirat, ffd, "x", 0755));
	/* AT_EMPTY_PATH. */
	st_at("empty_path_fstatat", ffd, "", AT_EMPTY_PATH);
	st_at("empty_path_no_flag", ffd, "", 0);
	st_at("empty_path_cwd", AT_FDCWD, "", AT_EMPTY_PATH);
	T("empty_path_fchownat", syscall(SYS_fchownat, ffd, "", getuid(), getgid(), AT_EMPTY_PATH));
	T("empty_path_faccessat2", syscall(SYS_faccessat2, ffd, "", R_OK, AT_EMPTY_PATH));
	{
		struct statx sx;
		errno = 0;
		long r = syscall(SYS_statx, ffd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx);
		if (r < 0)
			show("empty_path_statx", r, errno, 0);
		else
			printf("empty_path_statx: mode=%o size=%llu\n", sx.stx_mode, (unsigned long long)sx.stx_size);
	}
	T("empty_path_linkat", syscall(SYS_linkat, ffd, "", AT_FDCWD, "flink_empty", AT_EMPTY_PATH));
	close(ffd);
}

static void cases_stat(void)
{
	ST("stat_file", "f");
	ST("stat_dir", "d");
	ST("stat_symlink_follow", "lf");
	LST("stat_symlink_nofollow", "lf");
	legacy_stat("legacy_stat_symlink", "lf", 0);
	legacy_stat("legacy_lstat_symlink", "lf", 1);
	legacy_stat("legacy_stat_dangling", "dang2", 0);
	ST("stat_loop", "loop1");
	LST("lstat_loop", "loop1");
	ST("stat_dangling", "dang2");
	LST("lstat_dangling", "dang2");
	ST("stat_dot", ".");
	ST("stat_dotdot", "..");
	ST("stat_missing", "nope");
	st_at("stat_bad_flags", AT_FDCWD, "f", 0x40000000);
	{
		struct statx sx;
		errno = 0;
		long r = syscall(SYS_statx, AT_FDCWD, "lf", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx);
		if (r < 0)
			show("statx_nofollow", r, errno, 0);
		else
			printf("statx_nofollow: mode=%o nlink=%u\n", sx.stx_mode, sx.stx_nlink);
		r = syscall(SYS_statx, AT_FDCWD, "f", 0, STATX_BASIC_STATS, &sx);
		if (r < 0)
			show("statx_file", r, errno, 0);
		else
			printf("statx_file: mode=%o size=%llu nlink=%u\n", sx.stx_mode,
			       (unsigned long long)sx.stx_size, sx.stx_nlink);
	}
	T("access_f_ok", syscall(SYS_access, "f", F_OK));
	T("access_missing", syscall(SYS_access, "nope", F_OK));
	T("access_x_ok_noexec", syscall(SYS_access, "f", X_OK));
	T("access_w_ok_own", syscall(SYS_access, "f", W_OK));
	T("access_dangling", syscall(SYS_access, "dang2", F_OK));
	T("access_mode000_r", syscall(SYS_access, "m000", R_OK));
	T("faccessat_dir_x", syscall(SYS_faccessat, AT_FDCWD, "d", X_OK));
	T("faccessat2_nofollow_dangling", syscall(SYS_faccessat2, AT_FDCWD, "loop1", F_OK, AT_SYMLINK_NOFOLLOW));
	T("faccessat2_eaccess", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, AT_EACCESS));
	T("faccessat2_bad_flags", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, 0x40000000));
	T("faccessat_bad_mode", syscall(SYS_faccessat, AT_FDCWD, "f", 0100));
	rdlink("readlink_full", AT_FDCWD, "lf", 100);
	rdlink("readlink_truncated", AT_FDCWD, "ld", 1);
	rdlink("readlink_truncated_3", AT_FDCWD, "dang", 3);
	rdlink("readlink_size0", AT_FDCWD, "lf", 0);
	rdlink("readlink_not_symlink", AT_FDCWD, "f", 100);
	rdlink("readlink_missing", AT_FDCWD, "nope", 100);
	rdlink("readlink_trailing_slash", AT_FDCWD, "lf/", 100);
	{
		char buf[100];
		errno = 0;
		long r = syscall(SYS_readlink, "loop1", buf, sizeof buf);
		if (r < 0)
			show("legacy_readlink", r, errno, 0);
		else
			printf("legacy_readlink: %ld \"%.*s\"\n", r, (int)r, buf);
	}
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	rdlink("readlinkat_dirfd_dotdot", dfd, "../lf", 100);
	F("openat_dirfd", syscall(SYS_openat, dfd, "inner", O_RDONLY));
	F("openat_dirfd_dotdot", syscall(SYS_openat, dfd, "../f", O_RDONLY));
	st_at("fstatat_dirfd", dfd, "inner", 0);
	st_at("fstatat_dirfd_dotdot", dfd, "..", 0);
	T("faccessat_dirfd", syscall(SYS_faccessat, dfd, "inner", R_OK));
	close(dfd);
}

#include "fsprobe_cases2.h"
