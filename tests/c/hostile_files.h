/*
 * The file-system cases of hostile.c (included by it; not a separate
 * program): open, openat, openat2 and the served opens; access and
 * readlink; making, removing, renaming and linking names; attributes
 * (chmod, chown, times, truncate, statfs, inotify); extended attributes.
 * They use hostile.c's pointer and descriptor sets and its R/RFD macros.
 */

/* ---- open, openat, openat2 ---------------------------------------------- */

static void t_open(void) {
    FOR_PATHS("open", syscall(SYS_open, P, O_RDONLY));
    RFD("open loop", syscall(SYS_open, "loop", O_RDONLY));
    RFD("open flags=unknown_bits", syscall(SYS_open, "f", O_RDONLY | 0x80000000));
    RFD("open flags=high_bits", syscall(SYS_open, "f", HIGH_BITS | O_RDONLY));
    RFD("open flags=all_but_write_path_dir",
        syscall(SYS_open, "new_all", (long)(unsigned)~(O_ACCMODE | O_PATH | O_DIRECTORY), 0644));
    RFD("open creat mode=all_bits", syscall(SYS_open, "new_mode", O_RDONLY | O_CREAT, ALL_BITS));
    RFD("open tmpfile_without_directory", syscall(SYS_open, "d", O_RDONLY | 0x400000, 0600));
}

static void t_openat(void) {
    FOR_PATHS("openat", syscall(SYS_openat, AT_FDCWD, P, O_RDONLY));
    for (int i = 0; i < NDIRFDS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "openat dirfd=%s", dirfds[i].label);
        RFD(nm, syscall(SYS_openat, dirfds[i].fd, "f", O_RDONLY));
    }
    RFD("openat flags=unknown_bits", syscall(SYS_openat, AT_FDCWD, "f", O_RDONLY | 0x80000000));
    RFD("openat flags=high_bits", syscall(SYS_openat, AT_FDCWD, "f", HIGH_BITS));
    RFD("openat empty_path_with_dirfd", syscall(SYS_openat, dir_fd, "", O_RDONLY));
}

static void t_openat2(void) {
    struct open_how how = {.flags = O_RDONLY};
    FOR_PATHS("openat2", syscall(SYS_openat2, AT_FDCWD, P, &how, sizeof how));
    FOR_BUFS("openat2", "how", syscall(SYS_openat2, AT_FDCWD, "f", B, sizeof how));
    RFD("openat2 size=0", syscall(SYS_openat2, AT_FDCWD, "f", &how, 0));
    RFD("openat2 size=short", syscall(SYS_openat2, AT_FDCWD, "f", &how, 8));
    RFD("openat2 size=huge", syscall(SYS_openat2, AT_FDCWD, "f", &how, SIZE_MAX));
    RFD("openat2 size=int_max", syscall(SYS_openat2, AT_FDCWD, "f", &how, (size_t)INT_MAX));
    char *big = calloc(1, 2 * PG);
    memcpy(big, &how, sizeof how);
    RFD("openat2 size=page_zero_tail", syscall(SYS_openat2, AT_FDCWD, "f", big, PG));
    big[100] = 1;
    RFD("openat2 size=page_nonzero_tail", syscall(SYS_openat2, AT_FDCWD, "f", big, PG));
    RFD("openat2 size=too_big", syscall(SYS_openat2, AT_FDCWD, "f", big, 2 * PG));
    char *mis = big + 1001;
    memcpy(mis, &how, sizeof how);
    RFD("openat2 how=misaligned", syscall(SYS_openat2, AT_FDCWD, "f", mis, sizeof how));
    free(big);
    struct open_how h2 = {.flags = ALL_BITS};
    RFD("openat2 flags=all_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h2, sizeof h2));
    struct open_how h3 = {.flags = O_RDONLY, .resolve = ALL_BITS};
    RFD("openat2 resolve=all_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h3, sizeof h3));
    struct open_how h4 = {.flags = O_RDONLY, .mode = 0644};
    RFD("openat2 mode_without_creat", syscall(SYS_openat2, AT_FDCWD, "f", &h4, sizeof h4));
    struct open_how h5 = {.flags = O_RDONLY | O_CREAT, .mode = ALL_BITS};
    RFD("openat2 mode=all_bits", syscall(SYS_openat2, AT_FDCWD, "n2", &h5, sizeof h5));
    struct open_how h6 = {.flags = HIGH_BITS};
    RFD("openat2 flags=high_bits", syscall(SYS_openat2, AT_FDCWD, "f", &h6, sizeof h6));
    for (int i = 0; i < NDIRFDS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "openat2 dirfd=%s", dirfds[i].label);
        RFD(nm, syscall(SYS_openat2, dirfds[i].fd, "f", &how, sizeof how));
    }
}

/* Files the sandbox may serve itself (its /proc), opened for reading with
 * hostile flags and resolutions. */
static void t_open_served(void) {
    const char *files[] = {"/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/self/status",
                           "/proc/uptime", "/proc/loadavg"};
    long flags[] = {O_RDONLY | 0x80000000, HIGH_BITS, O_RDONLY | O_NOFOLLOW, O_RDONLY | O_DIRECT,
                    O_RDONLY | O_NOATIME, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT | O_EXCL};
    const char *fl[] = {"unknown_bits", "high_bits", "nofollow", "direct", "noatime", "trunc",
                        "creat_excl"};
    char nm[160];
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < 7; i++) {
            snprintf(nm, sizeof nm, "openat %s flags=%s", files[k], fl[i]);
            RFD(nm, syscall(SYS_openat, AT_FDCWD, files[k], flags[i], 0600));
        }
        unsigned long long res[] = {RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS,
                                    RESOLVE_NO_XDEV, RESOLVE_IN_ROOT, RESOLVE_CACHED};
        const char *rl[] = {"no_symlinks", "beneath", "no_magiclinks", "no_xdev", "in_root",
                            "cached"};
        for (int i = 0; i < 6; i++) {
            struct open_how how = {.flags = O_RDONLY, .resolve = res[i]};
            snprintf(nm, sizeof nm, "openat2 %s resolve=%s", files[k], rl[i]);
            RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], &how, sizeof how));
        }
        struct open_how bad = {.flags = O_RDONLY | O_CREAT, .mode = 07777 + 1};
        snprintf(nm, sizeof nm, "openat2 %s mode=out_of_range", files[k]);
        RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], &bad, sizeof bad));
        struct open_how big = {.flags = O_RDONLY};
        snprintf(nm, sizeof nm, "openat2 %s size=page_zero_tail", files[k]);
        char *pg = calloc(1, PG);
        memcpy(pg, &big, sizeof big);
        RFD(nm, syscall(SYS_openat2, AT_FDCWD, files[k], pg, PG));
        free(pg);
        char sb[256], xb[64];
        snprintf(nm, sizeof nm, "statfs %s", files[k]);
        R(nm, syscall(SYS_statfs, files[k], sb));
        snprintf(nm, sizeof nm, "statfs %s buf=one", files[k]);
        R(nm, syscall(SYS_statfs, files[k], (void *)1));
        snprintf(nm, sizeof nm, "getxattr %s user", files[k]);
        R(nm, syscall(SYS_getxattr, files[k], "user.x", xb, sizeof xb));
        snprintf(nm, sizeof nm, "listxattr %s buf=one", files[k]);
        R(nm, syscall(SYS_listxattr, files[k], (void *)1, 64));
        snprintf(nm, sizeof nm, "faccessat2 %s mode=all_bits", files[k]);
        R(nm, syscall(SYS_faccessat2, AT_FDCWD, files[k], ALL_BITS, 0));
        snprintf(nm, sizeof nm, "faccessat2 %s eaccess_r", files[k]);
        R(nm, syscall(SYS_faccessat2, AT_FDCWD, files[k], R_OK, AT_EACCESS));
        int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        snprintf(nm, sizeof nm, "inotify_add_watch %s", files[k]);
        R(nm, syscall(SYS_inotify_add_watch, ino, files[k], IN_MODIFY));
        snprintf(nm, sizeof nm, "inotify_add_watch %s onlydir", files[k]);
        R(nm, syscall(SYS_inotify_add_watch, ino, files[k], IN_MODIFY | IN_ONLYDIR));
        close(ino);
        int fd = open(files[k], O_RDONLY);
        char b[64];
        snprintf(nm, sizeof nm, "lseek rewind %s after_read", files[k]);
        read(fd, b, sizeof b);
        R(nm, syscall(SYS_lseek, fd, 0, SEEK_SET));
        snprintf(nm, sizeof nm, "lseek rewind %s high_bits_whence", files[k]);
        R(nm, syscall(SYS_lseek, fd, 0, HIGH_BITS | SEEK_SET));
        close(fd);
    }
}

/* ---- access, readlink ------------------------------------------------- */

static void t_access(void) {
    FOR_PATHS("access", syscall(SYS_access, P, R_OK));
    R("access mode=all_bits", syscall(SYS_access, "f", ALL_BITS));
    R("access loop", syscall(SYS_access, "loop", F_OK));
    FOR_PATHS("faccessat", syscall(SYS_faccessat, AT_FDCWD, P, R_OK));
    FOR_DIRFDS("faccessat", syscall(SYS_faccessat, D, "f", R_OK));
    R("faccessat mode=all_bits", syscall(SYS_faccessat, AT_FDCWD, "f", ALL_BITS));
    FOR_PATHS("faccessat2", syscall(SYS_faccessat2, AT_FDCWD, P, R_OK, 0));
    FOR_DIRFDS("faccessat2", syscall(SYS_faccessat2, D, "f", R_OK, 0));
    R("faccessat2 flags=all_bits", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, ALL_BITS));
    R("faccessat2 flags=unknown", syscall(SYS_faccessat2, AT_FDCWD, "f", R_OK, 0x80000));
    R("faccessat2 empty_path_flag", syscall(SYS_faccessat2, opath_fd, "", R_OK, AT_EMPTY_PATH));
    R("faccessat2 empty_path_flag_null",
      syscall(SYS_faccessat2, opath_fd, NULL, R_OK, AT_EMPTY_PATH));
    R("faccessat2 empty_path_no_flag", syscall(SYS_faccessat2, opath_fd, "", R_OK, 0));
}

static void t_readlink(void) {
    char buf[64];
    FOR_PATHS("readlink", syscall(SYS_readlink, P, buf, sizeof buf));
    FOR_BUFS("readlink", "buf", syscall(SYS_readlink, "l", B, 64));
    R("readlink size=0", syscall(SYS_readlink, "l", buf, 0));
    R("readlink size=minus1", syscall(SYS_readlink, "l", buf, -1));
    R("readlink size=int_max", syscall(SYS_readlink, "l", buf, INT_MAX));
    R("readlink size=huge", syscall(SYS_readlink, "l", buf, SIZE_MAX));
    R("readlink size=high_bits", syscall(SYS_readlink, "l", buf, HIGH_BITS | 64));
    R("readlink size=short", syscall(SYS_readlink, "l", buf, 0));
    R("readlink not_a_link", syscall(SYS_readlink, "f", buf, sizeof buf));
    FOR_PATHS("readlinkat", syscall(SYS_readlinkat, AT_FDCWD, P, buf, sizeof buf));
    FOR_DIRFDS("readlinkat", syscall(SYS_readlinkat, D, "l", buf, sizeof buf));
    FOR_BUFS("readlinkat", "buf", syscall(SYS_readlinkat, AT_FDCWD, "l", B, 64));
    R("readlinkat size=minus1", syscall(SYS_readlinkat, AT_FDCWD, "l", buf, -1));
    R("readlinkat size=huge", syscall(SYS_readlinkat, AT_FDCWD, "l", buf, SIZE_MAX));
    R("readlinkat empty_path_of_opath_link", syscall(SYS_readlinkat, opath_fd, "", buf, 64));
    /* Links the sandbox may answer itself (its /proc): only errors and
     * lengths that do not depend on the pid or the host are printed. */
    const char *proc_links[] = {"/proc/self", "/proc/self/exe", "/proc/self/cwd",
                                "/proc/thread-self", "/proc/self/fd/0"};
    /* /proc/self and /proc/thread-self name pids, whose length differs:
     * no buffer that fits some lengths and not others. */
    int pid_named[] = {1, 0, 0, 1, 0};
    for (int k = 0; k < 5; k++) {
        char nm[160];
        for (int i = 0; i < NBUFS - pid_named[k]; i++) {
            snprintf(nm, sizeof nm, "readlink %s buf=%s", proc_links[k], bufs[i].label);
            R(nm, syscall(SYS_readlink, proc_links[k], bufs[i].p, 64));
        }
        snprintf(nm, sizeof nm, "readlink %s size=0", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, 0));
        snprintf(nm, sizeof nm, "readlink %s size=minus1", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, -1));
        snprintf(nm, sizeof nm, "readlink %s size=1", proc_links[k]);
        R(nm, syscall(SYS_readlink, proc_links[k], buf, 1));
        snprintf(nm, sizeof nm, "readlinkat %s dirfd=minus1 buf=one", proc_links[k]);
        R(nm, syscall(SYS_readlinkat, -1, proc_links[k], (void *)1, 64));
    }
}

/* ---- creating and removing names ---------------------------------------- */

static void t_mk(void) {
    FOR_PATHS("mkdir", syscall(SYS_mkdir, P, 0755));
    R("mkdir existing", syscall(SYS_mkdir, "f", 0755));
    R("mkdir mode=all_bits", syscall(SYS_mkdir, "m_all", ALL_BITS));
    FOR_PATHS("mkdirat", syscall(SYS_mkdirat, AT_FDCWD, P, 0755));
    FOR_DIRFDS("mkdirat", syscall(SYS_mkdirat, D, "f", 0755));
    R("mkdirat mode=all_bits", syscall(SYS_mkdirat, AT_FDCWD, "ma_all", ALL_BITS));
    FOR_PATHS("mknod", syscall(SYS_mknod, P, S_IFIFO | 0644, 0));
    R("mknod mode=all_bits", syscall(SYS_mknod, "n_all", ALL_BITS, 0));
    R("mknod fifo dev=huge", syscall(SYS_mknod, "n_fifo", S_IFIFO | 0600, ALL_BITS));
    R("mknod type=dir", syscall(SYS_mknod, "n_dir", S_IFDIR | 0600, 0));
    R("mknod type=unknown", syscall(SYS_mknod, "n_unk", 0150000 | 0600, 0));
    FOR_PATHS("mknodat", syscall(SYS_mknodat, AT_FDCWD, P, S_IFIFO | 0644, 0));
    FOR_DIRFDS("mknodat", syscall(SYS_mknodat, D, "f", S_IFIFO | 0644, 0));
    R("mknodat mode=all_bits", syscall(SYS_mknodat, AT_FDCWD, "na_all", ALL_BITS, 0));
    R("mknodat mode=high_bits", syscall(SYS_mknodat, AT_FDCWD, "na_hi", HIGH_BITS | S_IFIFO, 0));
    /* Device nodes (serviced): every case fails before the capability
     * check, natively as supervised, so root and tester agree. */
    FOR_PATHS("mknod chr", syscall(SYS_mknod, P, S_IFCHR | 0600, 0x103));
    R("mknod chr existing", syscall(SYS_mknod, "f", S_IFCHR | 0600, 0x103));
    R("mknod blk missing_parent", syscall(SYS_mknod, "nope/b", S_IFBLK | 0600, 0x700));
    R("mknod blk through_file", syscall(SYS_mknod, "f/b", S_IFBLK | 0600, 0x700));
    FOR_PATHS("mknodat blk", syscall(SYS_mknodat, AT_FDCWD, P, S_IFBLK | 0600, 0x700));
    FOR_DIRFDS("mknodat chr", syscall(SYS_mknodat, D, "f", S_IFCHR | 0600, 0x103));
    R("mknodat chr high_bits existing",
      syscall(SYS_mknodat, AT_FDCWD, "f", HIGH_BITS | S_IFCHR | 0600, ALL_BITS));
}

static void t_rm(void) {
    FOR_PATHS("unlinkat removedir", syscall(SYS_unlinkat, AT_FDCWD, P, AT_REMOVEDIR));
    FOR_DIRFDS("unlinkat removedir", syscall(SYS_unlinkat, D, "f", AT_REMOVEDIR));
    R("unlinkat flags=all_bits", syscall(SYS_unlinkat, AT_FDCWD, "d", ALL_BITS));
    R("unlinkat flags=removedir_unknown", syscall(SYS_unlinkat, AT_FDCWD, "d", AT_REMOVEDIR | 0x1));
    R("unlinkat removedir file", syscall(SYS_unlinkat, AT_FDCWD, "f", AT_REMOVEDIR));
    R("unlinkat removedir dot", syscall(SYS_unlinkat, AT_FDCWD, ".", AT_REMOVEDIR));
    R("unlinkat removedir symlink_to_dir", syscall(SYS_unlinkat, AT_FDCWD, "l", AT_REMOVEDIR));
    FOR_PATHS("rmdir", syscall(SYS_rmdir, P));
    R("rmdir file", syscall(SYS_rmdir, "f"));
    R("rmdir dot", syscall(SYS_rmdir, "."));
    R("rmdir dotdot", syscall(SYS_rmdir, "d/.."));
    R("rmdir loop", syscall(SYS_rmdir, "loop"));
}

static void t_rename(void) {
    FOR_PATHS("rename old", syscall(SYS_rename, P, "r1"));
    FOR_PATHS("rename new", syscall(SYS_rename, "nonexistent", P));
    R("rename dir_into_itself", syscall(SYS_rename, "d", "d/sub"));
    FOR_PATHS("renameat old", syscall(SYS_renameat, AT_FDCWD, P, AT_FDCWD, "r1"));
    FOR_PATHS("renameat new", syscall(SYS_renameat, AT_FDCWD, "nonexistent", AT_FDCWD, P));
    FOR_DIRFDS("renameat olddir", syscall(SYS_renameat, D, "f", AT_FDCWD, "r1"));
    FOR_DIRFDS("renameat newdir", syscall(SYS_renameat, AT_FDCWD, "nonexistent", D, "r1"));
    FOR_PATHS("renameat2 old", syscall(SYS_renameat2, AT_FDCWD, P, AT_FDCWD, "r1", 0));
    FOR_DIRFDS("renameat2 newdir", syscall(SYS_renameat2, AT_FDCWD, "nonexistent", D, "r1", 0));
    R("renameat2 flags=all_bits", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", ALL_BITS));
    R("renameat2 flags=unknown", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", 0x100));
    R("renameat2 exchange_noreplace",
      syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", RENAME_EXCHANGE | RENAME_NOREPLACE));
    R("renameat2 exchange_missing", syscall(SYS_renameat2, AT_FDCWD, "f", AT_FDCWD, "r1", RENAME_EXCHANGE));
}

static void t_link(void) {
    FOR_PATHS("link old", syscall(SYS_link, P, "k1"));
    FOR_PATHS("link new", syscall(SYS_link, "f", P));
    R("link dir", syscall(SYS_link, "d", "k_dir"));
    FOR_PATHS("linkat old", syscall(SYS_linkat, AT_FDCWD, P, AT_FDCWD, "k1", 0));
    FOR_DIRFDS("linkat olddir", syscall(SYS_linkat, D, "f", AT_FDCWD, "k1", 0));
    FOR_DIRFDS("linkat newdir", syscall(SYS_linkat, AT_FDCWD, "f", D, "k1", 0));
    R("linkat flags=all_bits", syscall(SYS_linkat, AT_FDCWD, "f", AT_FDCWD, "k1", ALL_BITS));
    R("linkat flags=unknown", syscall(SYS_linkat, AT_FDCWD, "f", AT_FDCWD, "k1", 0x1));
    R("linkat empty_path_no_flag", syscall(SYS_linkat, opath_fd, "", AT_FDCWD, "k1", 0));
    R("linkat empty_path_flag_null", syscall(SYS_linkat, opath_fd, NULL, AT_FDCWD, "k2", AT_EMPTY_PATH));
    FOR_PATHS("symlink target", syscall(SYS_symlink, P, "s1"));
    FOR_PATHS("symlink name", syscall(SYS_symlink, "f", P));
    R("symlink existing", syscall(SYS_symlink, "f", "l"));
    static char longest[PATH_MAX];
    memset(longest, 't', PATH_MAX - 1);
    R("symlink target=path_max_minus_1", syscall(SYS_symlink, longest, "s_long"));
    static char lbuf[PATH_MAX + 16];
    R("readlink target=path_max_minus_1", syscall(SYS_readlink, "s_long", lbuf, sizeof lbuf));
    R("readlink target=path_max_minus_1 size=10", syscall(SYS_readlink, "s_long", lbuf, 10));
    R("readlink target=path_max_minus_1 buf=no_room", syscall(SYS_readlink, "s_long", edge, 4096));
    R("open through_long_symlink", syscall(SYS_open, "s_long", O_RDONLY));
    unlink("s_long");
    FOR_PATHS("symlinkat target", syscall(SYS_symlinkat, P, AT_FDCWD, "s1"));
    FOR_DIRFDS("symlinkat newdir", syscall(SYS_symlinkat, "x", D, "f"));
}

/* ---- attributes ---------------------------------------------------------- */

static void t_chmod(void) {
    FOR_PATHS("chmod", syscall(SYS_chmod, P, 0644));
    R("chmod mode=all_bits", syscall(SYS_chmod, "f", ALL_BITS));
    R("chmod loop", syscall(SYS_chmod, "loop", 0644));
    FOR_PATHS("fchmodat", syscall(SYS_fchmodat, AT_FDCWD, P, 0644));
    FOR_DIRFDS("fchmodat", syscall(SYS_fchmodat, D, "f", 0644));
    R("fchmodat mode=high_bits", syscall(SYS_fchmodat, AT_FDCWD, "f", HIGH_BITS | 0644));
    FOR_PATHS("fchmodat2", syscall(SYS_fchmodat2, AT_FDCWD, P, 0644, 0));
    FOR_DIRFDS("fchmodat2", syscall(SYS_fchmodat2, D, "f", 0644, 0));
    R("fchmodat2 flags=all_bits", syscall(SYS_fchmodat2, AT_FDCWD, "f", 0644, ALL_BITS));
    R("fchmodat2 flags=unknown", syscall(SYS_fchmodat2, AT_FDCWD, "f", 0644, 0x2));
    R("fchmodat2 nofollow_symlink", syscall(SYS_fchmodat2, AT_FDCWD, "l", 0644, AT_SYMLINK_NOFOLLOW));
    R("fchmodat2 empty_path_flag", syscall(SYS_fchmodat2, opath_fd, "", 0644, AT_EMPTY_PATH));
    R("fchmodat2 empty_path_flag_null", syscall(SYS_fchmodat2, opath_fd, NULL, 0644, AT_EMPTY_PATH));
    R("fchmodat2 empty_path_no_flag", syscall(SYS_fchmodat2, opath_fd, "", 0644, 0));
    /* fchmod is serviced whatever the mode (no procfs mode changes). */
    FOR_FDS("fchmod", syscall(SYS_fchmod, F, 0644));
    int ffd = open("f", O_RDONLY);
    R("fchmod mode=all_bits", syscall(SYS_fchmod, ffd, ALL_BITS));
    R("fchmod mode=high_bits", syscall(SYS_fchmod, ffd, HIGH_BITS | 0644));
    R("fchmod mode=0600", syscall(SYS_fchmod, ffd, 0600));
    R("fchmod opath", syscall(SYS_fchmod, opath_fd, 0644));
    R("fchmod mode=0644", syscall(SYS_fchmod, ffd, 0644));
    close(ffd);
}

static void t_chown(void) {
    FOR_PATHS("chown", syscall(SYS_chown, P, -1, -1));
    R("chown ids=minus1", syscall(SYS_chown, "f", -1, -1));
    R("chown ids=high_bits_minus1", syscall(SYS_chown, "f", HIGH_BITS | 0xffffffffUL, HIGH_BITS | 0xffffffffUL));
    FOR_PATHS("lchown", syscall(SYS_lchown, P, -1, -1));
    R("lchown ids=minus1", syscall(SYS_lchown, "l", -1, -1));
    FOR_PATHS("fchownat", syscall(SYS_fchownat, AT_FDCWD, P, -1, -1, 0));
    FOR_DIRFDS("fchownat", syscall(SYS_fchownat, D, "f", -1, -1, 0));
    R("fchownat flags=all_bits", syscall(SYS_fchownat, AT_FDCWD, "f", -1, -1, ALL_BITS));
    R("fchownat flags=unknown", syscall(SYS_fchownat, AT_FDCWD, "f", -1, -1, 0x2));
    R("fchownat empty_path_flag", syscall(SYS_fchownat, opath_fd, "", -1, -1, AT_EMPTY_PATH));
    R("fchownat empty_path_flag_null", syscall(SYS_fchownat, opath_fd, NULL, -1, -1, AT_EMPTY_PATH));
    R("fchownat empty_path_no_flag", syscall(SYS_fchownat, opath_fd, "", -1, -1, 0));
}

static void t_times(void) {
    struct timeval tv[2] = {{1, 0}, {2, 0}};
    struct timespec ts[2] = {{1, 0}, {2, 0}};
    FOR_PATHS("utime", syscall(SYS_utime, P, NULL));
    FOR_BUFS("utime", "times", syscall(SYS_utime, "f", B));
    FOR_PATHS("utimes", syscall(SYS_utimes, P, tv));
    FOR_BUFS("utimes", "times", syscall(SYS_utimes, "f", B));
    struct timeval badtv[2] = {{1, 2000000}, {2, -1}};
    R("utimes usec=out_of_range", syscall(SYS_utimes, "f", badtv));
    FOR_PATHS("futimesat", syscall(SYS_futimesat, AT_FDCWD, P, tv));
    FOR_DIRFDS("futimesat", syscall(SYS_futimesat, D, "f", tv));
    FOR_BUFS("futimesat", "times", syscall(SYS_futimesat, AT_FDCWD, "f", B));
    FOR_PATHS("utimensat", syscall(SYS_utimensat, AT_FDCWD, P, ts, 0));
    FOR_DIRFDS("utimensat", syscall(SYS_utimensat, D, "f", ts, 0));
    /* NULL passes to the kernel (futimens): only non-NULL bad pointers here. */
    for (int i = 1; i < NBUFS; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "utimensat times=%s", bufs[i].label);
        R(nm, syscall(SYS_utimensat, AT_FDCWD, "f", bufs[i].p, 0));
    }
    struct timespec badts[2] = {{1, 1000000000}, {2, -5}};
    R("utimensat nsec=out_of_range", syscall(SYS_utimensat, AT_FDCWD, "f", badts, 0));
    R("utimensat flags=all_bits", syscall(SYS_utimensat, AT_FDCWD, "f", ts, ALL_BITS));
    R("utimensat flags=unknown", syscall(SYS_utimensat, AT_FDCWD, "f", ts, 0x1));
    R("utimensat empty_path_flag", syscall(SYS_utimensat, opath_fd, "", ts, AT_EMPTY_PATH));
    R("utimensat empty_path_no_flag", syscall(SYS_utimensat, opath_fd, "", ts, 0));
    R("utimensat nofollow_link", syscall(SYS_utimensat, AT_FDCWD, "l", ts, AT_SYMLINK_NOFOLLOW));
}

static void t_truncate_statfs(void) {
    FOR_PATHS("truncate", syscall(SYS_truncate, P, 0));
    R("truncate length=minus1", syscall(SYS_truncate, "f", -1L));
    R("truncate length=huge", syscall(SYS_truncate, "f", LONG_MAX));
    R("truncate dir", syscall(SYS_truncate, "d", 0));
    R("truncate loop", syscall(SYS_truncate, "loop", 0));
    R("truncate length=6", syscall(SYS_truncate, "f", 6));
    struct statfs_buf { char b[256]; } sb;
    FOR_PATHS("statfs", syscall(SYS_statfs, P, &sb));
    FOR_BUFS("statfs", "buf", syscall(SYS_statfs, "f", B));
    char *mis = malloc(512);
    R("statfs buf=misaligned", syscall(SYS_statfs, "f", mis + 3));
    free(mis);
}

static void t_inotify(void) {
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    FOR_PATHS("inotify_add_watch", syscall(SYS_inotify_add_watch, in, P, IN_MODIFY));
    FOR_FDS("inotify_add_watch", syscall(SYS_inotify_add_watch, F, "f", IN_MODIFY));
    R("inotify_add_watch mask=0", syscall(SYS_inotify_add_watch, in, "f", 0));
    R("inotify_add_watch mask=all_bits", syscall(SYS_inotify_add_watch, in, "f", ALL_BITS));
    R("inotify_add_watch mask=mask_add_create", syscall(SYS_inotify_add_watch, in, "f", IN_MASK_ADD | IN_MASK_CREATE | IN_MODIFY));
    R("inotify_add_watch fd=dir", syscall(SYS_inotify_add_watch, dir_fd, "f", IN_MODIFY));
    R("inotify_add_watch onlydir_on_file", syscall(SYS_inotify_add_watch, in, "f", IN_ONLYDIR | IN_MODIFY));
    close(in);
}

/* ---- extended attributes ------------------------------------------------ */

static struct ptr names[8];
#define NNAMES 8

static void xattr_set(const char *call, long nr, const char *file) {
    char nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.b", "v", 1, 0));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p, "v", 1, 0));
    }
    for (int i = 1; i < NBUFS; i++) {
        snprintf(nm, sizeof nm, "%s value=%s", call, bufs[i].label);
        R(nm, syscall(nr, file, "user.b", bufs[i].p, 16, 0));
    }
    snprintf(nm, sizeof nm, "%s value=null_size_16", call);
    R(nm, syscall(nr, file, "user.b", NULL, 16, 0));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, "user.b", "v", SIZE_MAX, 0));
    snprintf(nm, sizeof nm, "%s size=over_xattr_size_max", call);
    R(nm, syscall(nr, file, "user.b", "v", 65537, 0));
    snprintf(nm, sizeof nm, "%s flags=all_bits", call);
    R(nm, syscall(nr, file, "user.b", "v", 1, ALL_BITS));
    snprintf(nm, sizeof nm, "%s flags=create_replace", call);
    R(nm, syscall(nr, file, "user.b", "v", 1, 3));
}

static void xattr_get(const char *call, long nr, const char *file) {
    char buf[64], nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.a", buf, sizeof buf));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p, buf, sizeof buf));
    }
    FOR_BUFS(call, "value", syscall(nr, file, "user.a", B, 64));
    snprintf(nm, sizeof nm, "%s size=0", call);
    R(nm, syscall(nr, file, "user.a", NULL, 0));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, "user.a", buf, SIZE_MAX));
    snprintf(nm, sizeof nm, "%s size=high_bits", call);
    R(nm, syscall(nr, file, "user.a", buf, HIGH_BITS | 64));
}

static void xattr_list(const char *call, long nr, const char *file) {
    char buf[64], nm[160];
    FOR_PATHS(call, syscall(nr, P, buf, sizeof buf));
    FOR_BUFS(call, "list", syscall(nr, file, B, 64));
    snprintf(nm, sizeof nm, "%s size=0", call);
    R(nm, syscall(nr, file, NULL, 0));
    snprintf(nm, sizeof nm, "%s size=1", call);
    R(nm, syscall(nr, file, buf, 1));
    snprintf(nm, sizeof nm, "%s size=huge", call);
    R(nm, syscall(nr, file, buf, SIZE_MAX));
}

static void xattr_remove(const char *call, long nr, const char *file) {
    char nm[160];
    FOR_PATHS(call, syscall(nr, P, "user.a"));
    for (int i = 0; i < NNAMES; i++) {
        snprintf(nm, sizeof nm, "%s name=%s", call, names[i].label);
        R(nm, syscall(nr, file, names[i].p));
    }
}

static void t_xattr(void) {
    static char long_xname[300];
    memcpy(long_xname, "user.", 5);
    memset(long_xname + 5, 'n', 260);
    struct ptr n[NNAMES] = {
        {"null", NULL}, {"one", (void *)1}, {"prot_none", none_page},
        {"no_nul_to_unmapped", edge}, {"kernel", KERNEL}, {"empty", ""},
        {"too_long", long_xname}, {"unknown_namespace", "nosuch.x"},
    };
    memcpy(names, n, sizeof n);
    xattr_set("setxattr", SYS_setxattr, "f");
    xattr_set("lsetxattr", SYS_lsetxattr, "l");
    /* fsetxattr: the hostile descriptors, then hostile names, values and
     * flags on an open file. */
    FOR_FDS("fsetxattr", syscall(SYS_fsetxattr, F, "user.b", "v", 1, 0));
    {
        char nm[160];
        int fd = open("f", O_RDWR | O_CLOEXEC);
        for (int i = 0; i < NNAMES; i++) {
            snprintf(nm, sizeof nm, "fsetxattr name=%s", names[i].label);
            R(nm, syscall(SYS_fsetxattr, fd, names[i].p, "v", 1, 0));
        }
        R("fsetxattr value=null_size_16", syscall(SYS_fsetxattr, fd, "user.b", NULL, 16, 0));
        R("fsetxattr size=huge", syscall(SYS_fsetxattr, fd, "user.b", "v", SIZE_MAX, 0));
        R("fsetxattr flags=all_bits", syscall(SYS_fsetxattr, fd, "user.b", "v", 1, ALL_BITS));
        R("fsetxattr fd=opath_flags=all_bits",
          syscall(SYS_fsetxattr, opath_fd, "user.b", "v", 1, ALL_BITS));
        close(fd);
    }
    xattr_get("getxattr", SYS_getxattr, "f");
    xattr_get("lgetxattr", SYS_lgetxattr, "l");
    xattr_list("listxattr", SYS_listxattr, "f");
    xattr_list("llistxattr", SYS_llistxattr, "l");
    xattr_remove("removexattr", SYS_removexattr, "f");
    xattr_remove("lremovexattr", SYS_lremovexattr, "l");
}
