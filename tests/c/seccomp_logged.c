/*
 * seccomp_logged: the control of tests/security/confine.rs's kernel-log test. Installs
 * on itself a seccomp filter with SECCOMP_FILTER_FLAG_LOG that refuses
 * getppid with EPERM (and passes everything else), calls getppid, and prints
 * its pid and what the call returned. The kernel writes one audit record
 * (type=1326, syscall=110) naming this pid: proof, on a machine where such
 * records reach the kernel log, that a record of the supervisor's would too.
 * Harmless natively: it restricts only itself, and only getppid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    struct sock_filter insns[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof insns / sizeof insns[0], insns};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("no_new_privs");
        return 1;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, &prog) != 0) {
        perror("seccomp");
        return 1;
    }
    long r = syscall(SYS_getppid);
    printf("%d %ld %d\n", (int)getpid(), r, r < 0 ? errno : 0);
    return 0;
}
