/*
 * static_loader_mm.c: whether the calling process owns the memory the
 * loader's state lives in (static_loader.c says what the loader is).
 *
 * The handler keeps the program's view of SIGSYS's disposition in the
 * loader's image. A child made by fork has its own copy, which its own
 * rt_sigaction may change; a child that shares the parent's memory
 * (vfork, clone with CLONE_VM: glibc's and musl's posix_spawn, Go's
 * os/exec) has not, and the signal handlers it resets before its exec
 * (Go's runtime resets SIGSYS to SIG_DFL in every such child) must not
 * become the parent's. A page marked MADV_WIPEONFORK reads as zeros in
 * a forked copy and keeps its bytes in shared memory: non-zero, the
 * memory's owner is the process recorded with it; zero, a fork copied
 * it, and its owner is the child that fork made (whose parent is the one
 * recorded). A shared child of a forked child that has not yet claimed
 * its copy, or a forked child whose parent died before its first claim,
 * is then taken as not the owner: its SIGSYS disposition changes are
 * made but not recorded, which is the vfork child's case. Without the
 * page (a kernel before 4.14) every process owns the memory it sees.
 * Owns nothing else; does not own the disposition itself (the handler).
 */
#include "static_loader.h"

static long owner_pid;          /* the process whose memory this is */
static volatile ul *not_forked; /* the MADV_WIPEONFORK page: 1 until a fork copies it */

void claim_memory(void)
{
    owner_pid = sys0(__NR_getpid);
    long at = mmap6(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((ul)at > (ul)-4096)
        return;
    if (sys3(__NR_madvise, at, PAGE, MADV_WIPEONFORK) != 0) {
        sys2(__NR_munmap, at, PAGE);
        return;
    }
    not_forked = (volatile ul *)at;
    *not_forked = 1;
}

int owns_memory(void)
{
    if (!not_forked)
        return 1;
    long pid = sys0(__NR_getpid);
    if (*not_forked == 0) {
        if (sys0(__NR_getppid) != owner_pid)
            return 0;
        owner_pid = pid;
        *not_forked = 1;
    }
    return owner_pid == pid;
}
