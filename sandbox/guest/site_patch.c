/*
 * site_patch.c: the rewrite of glibc's non-cancellable open that the
 * static loader and the preload share (site_patch.h says what it owns).
 */
#include "site_patch.h"

#define REACH 0x7ff00000L

const unsigned char nocancel_open[NOCANCEL_LEN] = {NOCANCEL_MOVE_BYTES, NOCANCEL_SYSCALL_BYTES};

int is_nocancel_open(const unsigned char *from)
{
    for (int i = 0; i < NOCANCEL_LEN; i++)
        if (from[i] != nocancel_open[i])
            return 0;
    return 1;
}

int within_reach(ul a, ul b)
{
    long d = (long)(a - b);
    return d < REACH && d > -REACH;
}

void put32(unsigned char *p, long v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)((ul)v >> (8 * i));
}

int write_call_slot(unsigned char *t, ul slot, ul entry_ptr, const unsigned char *copied, int ncopied, ul back)
{
    static const unsigned char down[] = {SLOT_DOWN_BYTES};
    static const unsigned char up[] = {SLOT_UP_BYTES};
    int n = 0;
    for (int i = 0; i < ncopied; i++)
        t[n++] = copied[i];
    for (unsigned i = 0; i < sizeof down; i++)
        t[n++] = down[i];
    t[n] = 0xff; /* call *entry_ptr(%rip) */
    t[n + 1] = 0x15;
    put32(t + n + 2, (long)(entry_ptr - (slot + n + 6)));
    n += 6;
    for (unsigned i = 0; i < sizeof up; i++)
        t[n++] = up[i];
    t[n] = 0xe9;
    put32(t + n + 1, (long)(back - (slot + n + 5)));
    return n + 5;
}

ul patch_window(ul at, int n, ul lo, ul hi)
{
    for (ul w = at;; w--) {
        if ((w & 63) <= 56 && w >= lo && w + 8 <= hi)
            return w;
        if (w + 8 == at + (ul)n)
            return 0;
    }
}

int patch_store(ul at, const unsigned char *bytes, int n, ul lo, ul hi)
{
    ul w = patch_window(at, n, lo, hi);
    if (!w)
        return 0;
    ul old = *(volatile ul *)w, new = old;
    unsigned char *nb = (unsigned char *)&new;
    for (int i = 0; i < n; i++)
        nb[at - w + i] = bytes[i];
    return __atomic_compare_exchange_n((ul *)w, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

__asm__(".text\n"
        ".globl rewrite_entry\n"
        ".hidden rewrite_entry\n"
        "rewrite_entry:\n"
        "  pushfq\n"
        "  push %rbp\n"
        "  push %r10\n"
        "  push %r9\n"
        "  push %r8\n"
        "  push %rdx\n"
        "  push %rsi\n"
        "  push %rdi\n"
        "  push %rax\n"
        "  mov %rsp, %rdi\n"
        "  mov %rsp, %rbp\n"
        "  and $-16, %rsp\n"
        "  cld\n"
        "  call rewritten_call\n"
        "  mov %rbp, %rsp\n"
        "  add $8, %rsp\n"
        "  pop %rdi\n"
        "  pop %rsi\n"
        "  pop %rdx\n"
        "  pop %r8\n"
        "  pop %r9\n"
        "  pop %r10\n"
        "  pop %rbp\n"
        "  popfq\n"
        "  ret\n");
