/*
 * raw_syscall.h: one system call made with the `syscall` instruction and
 * six arguments in the kernel's registers (rdi, rsi, rdx, r10, r8, r9),
 * the answer as the kernel gives it (-errno on failure). The one such
 * wrapper of the guest's C code: the static loader, the preload and its
 * rewrite (and tests/c/trampoline_hostile.c, which fuzzes them). Freestanding: no C library. Does not own what any call means
 * (the marks in r8 and r9 are the callers').
 */
#ifndef RAW_SYSCALL_H
#define RAW_SYSCALL_H

static inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

#endif
