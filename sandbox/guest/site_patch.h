/*
 * site_patch.h: what the static loader and the preload share to rewrite
 * glibc's non-cancellable open into a jump to a trampoline slot
 * (docs/fast-reads.md, "Rewritten sites", "The loader's and the C
 * library's own opens"): the pattern, the atomic store of a patch, the
 * slot that calls an entry, and the entry itself, which saves the
 * registers a `syscall` keeps and calls `rewritten_call` (each binary
 * defines its own). Freestanding: no C library, general registers only.
 * Does not own where sites are found (static_loader_sites.c,
 * fast_reads_rewrite.c), the trampoline pages or what a call becomes.
 */
#ifndef SITE_PATCH_H
#define SITE_PATCH_H

typedef unsigned long ul;

/* glibc's __open_nocancel from its `mov $257, %eax` to its `syscall`:
 * `mov $257, %eax; mov %rdi, %rsi; mov $AT_FDCWD, %edi; syscall`, as
 * the three moves' bytes and the `syscall`'s (a list each, for C arrays
 * and for the `.byte` lines of ldso_trampoline.c's slot). */
#define NOCANCEL_MOVE_BYTES 0xb8, 0x01, 0x01, 0x00, 0x00, 0x48, 0x89, 0xfe, 0xbf, 0x9c, 0xff, 0xff, 0xff
#define NOCANCEL_SYSCALL_BYTES 0x0f, 0x05
#define NOCANCEL_LEN 15
/* The bytes a slot runs again: the three moves. */
#define NOCANCEL_MOVES (NOCANCEL_LEN - 2)
extern const unsigned char nocancel_open[NOCANCEL_LEN];

/* Whether the NOCANCEL_LEN bytes at `from` are the pattern. */
int is_nocancel_open(const unsigned char *from);

/* The registers rewrite_entry saved, lowest address first. */
struct saved {
    ul rax, rdi, rsi, rdx, r8, r9, r10;
};

/* Defined by each binary: the call a rewritten site makes, with the
 * registers of its `syscall`; the answer as the kernel's (-errno). */
long rewritten_call(const struct saved *s);

/* Saves rdi, rsi, rdx, r8, r9, r10, rbp and the flags, calls
 * rewritten_call on an aligned stack, and returns its answer in rax;
 * rcx and r11 left changed, as a `syscall` leaves them. */
void rewrite_entry(void);

/* A slot's step over the red zone before its call (`lea -128(%rsp),
 * %rsp`) and back after it (`lea 128(%rsp), %rsp`). */
#define SLOT_DOWN_BYTES 0x48, 0x8d, 0x64, 0x24, 0x80
#define SLOT_UP_BYTES 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00

/* The most bytes write_call_slot writes. */
#define CALL_SLOT_MAX 48

/* Writes into `t` the slot that lives at `slot`: the `copied` bytes its
 * site's jump replaced, a step over the red zone, `call *` through the
 * pointer at `entry_ptr`, the step back and `jmp back`. Its length. */
int write_call_slot(unsigned char *t, ul slot, ul entry_ptr, const unsigned char *copied, int ncopied, ul back);

/* The 8-byte window within one cache line and within [lo, hi) that holds
 * the `n` bytes at `at`; 0 if none. */
ul patch_window(ul at, int n, ul lo, ul hi);

/* Writes the `n` bytes at `at` as one locked 8-byte compare-and-exchange
 * of its window (another thread fetches the old bytes or the new); 0
 * when there is no window or the bytes changed under it. */
int patch_store(ul at, const unsigned char *bytes, int n, ul lo, ul hi);

/* `v`'s low 32 bits, little-endian, at `p`. */
void put32(unsigned char *p, long v);

/* Whether a rel32 jump from `a` reaches `b`. */
int within_reach(ul a, ul b);

#endif
