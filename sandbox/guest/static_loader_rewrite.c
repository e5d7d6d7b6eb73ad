/*
 * static_loader_rewrite.c: rewriting a trapped open site of the loaded
 * program into a jump to a trampoline (docs/fast-reads.md, "Rewritten
 * sites"). The handler (static_loader_trap.c) calls rewrite_site after
 * it has answered a trapped open (a plain read, or one for writing
 * only); when the site is one of the
 * patterns of static_loader_sites.c, from then on its calls go through a
 * slot of the trampoline page and the loader's rewritten_call, with no
 * signal. Owns the trampoline page, the slots, the patch and go_entry;
 * does not own the patterns (static_loader_sites.c), rewrite_entry, the
 * glibc slots' bytes and the atomic store (site_patch.c, which the
 * preload shares), what an open becomes (trapped_open, the handler's) or
 * the filter.
 *
 * A slot runs the instructions its jump replaced (glibc's sites), steps
 * over the red zone, calls rewrite_entry through a pointer at the start
 * of the page, steps back and jumps past the site's `syscall`.
 * rewrite_entry keeps every register and the flags but rax (the answer),
 * rcx and r11 (which `syscall` clobbers too), calls rewritten_call with
 * the registers, and returns. Go's slot differs: its calls run on a
 * goroutine's stack, of which a Go function in a system call may own as
 * little as a hundred bytes, so the slot makes every call but a plain
 * read or write-only openat itself (`syscall` in the slot, nothing on
 * the stack), and
 * calls go_entry for those, which runs rewritten_call on a stack of the
 * loader's own (a pool claimed with one locked instruction), or when all
 * are taken on the thread's signal stack, or else makes the call itself,
 * unmarked, for the handler (the signal route).
 *
 * Each change of the program's text is one locked 8-byte
 * compare-and-exchange within a cache line, so another thread fetches
 * the old instruction or the new one, never a mix; a site whose bytes
 * would straddle a cache line is left to the signal. A jump into padding
 * is written first (no thread runs there), then the `syscall` becomes
 * `jmp` onto it. Patches are made one at a time (a try-lock: a handler
 * that finds it taken leaves its site for the next trap), with the text
 * page made writable and then given back its own protection.
 */
#include "static_loader.h"
#include "write_reopen.h"

int rewriting;
struct text_range program_text[MAX_TEXT];
int program_text_count;

/* The trampolines: one page, mapped within 2 GiB of the program's text
 * at the first rewrite. Its first 8 bytes hold rewrite_entry's address,
 * the next 8 go_entry's; slots follow, each at a 16-byte boundary. */
#define SLOT_MAX 48
#define GO_ENTRY_AT 8
#define FIRST_SLOT 16
/* The least signal stack go_entry runs rewritten_call on. */
#define GO_STACK_MIN 16384
static ul tramp;
static ul tramp_used;
static int patch_lock;

/* ---- what a rewritten site calls ---- */

static long raw_syscall(const struct saved *s)
{
    return raw_syscall6((long)s->rax, (long)s->rdi, (long)s->rsi, (long)s->rdx, (long)s->r10, (long)s->r8,
                        (long)s->r9);
}

/* Whether an open with `flags` is one trapped_open makes: a plain read
 * or O_RDWR without O_EXCL (marked), or one for writing only (made again
 * where the kernel refused it). */
static int trapped(long flags)
{
    return (flags & NOT_PLAIN) == 0 || (flags & READ_WRITE_MASK) == O_RDWR || write_only(flags);
}

/* A rewritten site's call: an open of trapped()'s as the handler makes
 * it (marked, then the preload's check; or a write-only open made again
 * by openat2 where refused), but with no LOADER_MARK in r9: a signal
 * delivered at one of these calls' return starts its handler with these
 * registers, and its calls must still meet the stacked filter. Any
 * other call exactly as the program made it. */
long rewritten_call(const struct saved *s)
{
    if (s->rax == __NR_openat && trapped((long)s->rdx) && s->r8 != FAST_READ_MARK)
        return trapped_open((long)s->rdi, (long)s->rsi, (long)s->rdx, (long)s->r10, 0);
    if (s->rax == __NR_open && trapped((long)s->rsi))
        return trapped_open(AT_FDCWD, (long)s->rdi, (long)s->rsi, (long)s->rdx, 0);
    return raw_syscall(s);
}

/* rewrite_entry, which calls rewritten_call, is site_patch.c's. */

/* Stacks for Go's plain read and write-only openats: GO_STACKS slices,
 * each a guard page then the stack, claimed by clearing a bit of go_stacks_free and
 * given back by setting it (each a locked instruction, so threads,
 * signal handlers and a vforked child each claim their own; a forked
 * child keeps the parent's other threads' bits claimed, and falls back
 * the sooner). Mapped at the first rewrite of a Go site. */
#define GO_STACKS 32
#define GO_SLICE 20480 /* a guard page, then 16 KiB */
ul go_stacks_free;
ul go_stacks_base;

static void ready_go_stacks(void)
{
    if (go_stacks_base)
        return;
    long m = mmap6(0, GO_STACKS * GO_SLICE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                   0);
    if ((ul)m > (ul)-4096)
        return;
    for (int i = 0; i < GO_STACKS; i++)
        if (sys3(__NR_mprotect, m + i * GO_SLICE, PAGE, PROT_NONE) != 0)
            return;
    go_stacks_base = (ul)m;
    __atomic_store_n(&go_stacks_free, (1UL << GO_STACKS) - 1, __ATOMIC_RELEASE);
}

/* Go's plain read or write-only openat, from its slot, with the
 * program's registers and only its return address on the goroutine's
 * stack: onto a free stack of go_stacks for rewrite_entry; when none is free, onto the
 * thread's signal stack when it has one of GO_STACK_MIN bytes or more
 * and is not on it (`sigaltstack`, one more call); else the call made
 * here, unmarked (the stacked filter traps it to the handler). A signal
 * arriving while rewritten_call runs on a stack of go_stacks is
 * delivered on the thread's signal stack (Go's handlers are all
 * SA_ONSTACK, as the loader's is); on the signal stack, below it (the
 * kernel sees the thread on its signal stack), as on the signal route.
 * The signal stack is free when the thread is not on it: no handler's
 * frame outlives its return to a goroutine's stack. The goroutine's
 * stack pointer is read off a stack of go_stacks before its bit is set:
 * from then on another thread may claim the stack and push its own. */
void go_entry(void);
__asm__(".text\n"
        ".globl go_entry\n"
        ".hidden go_entry\n"
        "go_entry:\n"
        "0:\n"
        "  mov go_stacks_free(%rip), %rax\n"
        "  test %rax, %rax\n"
        "  jz 2f\n"
        "  bsf %rax, %rcx\n"
        "  lock btrq %rcx, go_stacks_free(%rip)\n"
        "  jnc 0b\n" /* another thread or a handler took it first */
        "  lea 1(%rcx), %rax\n"
        "  imul $20480, %rax, %rax\n" /* GO_SLICE */
        "  add go_stacks_base(%rip), %rax\n"
        "  mov %rsp, %r11\n"
        "  mov %rax, %rsp\n"
        "  push %r11\n"
        "  push %rcx\n"
        "  mov $257, %eax\n"
        "  call rewrite_entry\n"
        "  pop %rcx\n"
        "  pop %r11\n" /* off the stack before it is given back */
        "  lock btsq %rcx, go_stacks_free(%rip)\n"
        "  mov %r11, %rsp\n"
        "  ret\n"
        "2:\n"
        "  push %rdi\n"
        "  push %rsi\n"
        "  push %rdx\n"
        "  sub $24, %rsp\n" /* stack_t: ss_sp, ss_flags, ss_size */
        "  xor %edi, %edi\n"
        "  mov %rsp, %rsi\n"
        "  mov $131, %eax\n" /* __NR_sigaltstack */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  mov 8(%rsp), %eax\n"
        "  test %eax, %eax\n" /* SS_ONSTACK, SS_DISABLE, SS_AUTODISARM */
        "  jnz 1f\n"
        "  mov 16(%rsp), %rcx\n"
        "  cmp $16384, %rcx\n"
        "  jb 1f\n"
        "  add (%rsp), %rcx\n"
        "  and $-16, %rcx\n"
        "  add $24, %rsp\n"
        "  pop %rdx\n"
        "  pop %rsi\n"
        "  pop %rdi\n"
        "  mov %rsp, %r11\n"
        "  mov %rcx, %rsp\n"
        "  push %r11\n"
        "  push %r11\n"
        "  mov $257, %eax\n"
        "  call rewrite_entry\n"
        "  mov (%rsp), %rsp\n"
        "  ret\n"
        "1:\n"
        "  add $24, %rsp\n"
        "  pop %rdx\n"
        "  pop %rsi\n"
        "  pop %rdi\n"
        "  mov $257, %eax\n"
        "  syscall\n"
        "  ret\n");
_Static_assert(GO_SLICE == 20480, "go_entry's imul");
_Static_assert(GO_STACK_MIN == 16384, "go_entry's cmp");

/* ---- the trampoline page ---- */

#define near within_reach

/* The trampoline page, mapped near `site` at the first rewrite. */
static int ready_trampolines(ul site)
{
    if (tramp)
        return near(tramp, site) && near(tramp + PAGE, site);
    ul lo = program_text[0].lo, hi = program_text[0].hi;
    for (int i = 1; i < program_text_count; i++) {
        if (program_text[i].lo < lo)
            lo = program_text[i].lo;
        if (program_text[i].hi > hi)
            hi = program_text[i].hi;
    }
    /* Below the text, then above it (past what a bss may take). */
    const ul tries[] = {lo - 16 * PAGE, lo - 256 * PAGE, (hi + 0x4000000UL) & ~(PAGE - 1),
                        (hi + 0x10000000UL) & ~(PAGE - 1)};
    for (ul i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        ul at = tries[i];
        if (at < 0x10000 || !near(at, site) || !near(at + PAGE, site))
            continue;
        long m = mmap6(at, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if ((ul)m > (ul)-4096)
            continue;
        if ((ul)m != at) {
            sys2(__NR_munmap, m, PAGE);
            continue;
        }
        *(volatile ul *)at = (ul)rewrite_entry;
        *(volatile ul *)(at + GO_ENTRY_AT) = (ul)go_entry;
        sys3(__NR_mprotect, at, PAGE, PROT_READ | PROT_EXEC);
        tramp = at;
        tramp_used = FIRST_SLOT;
        return 1;
    }
    return 0;
}

static ul window(ul at, int n, const struct text_range *text)
{
    return patch_window(at, n, text->lo, text->hi);
}

static int store_atomic(ul at, const unsigned char *bytes, int n, const struct text_range *text)
{
    return patch_store(at, bytes, n, text->lo, text->hi);
}

/* The slot at `slot` for `site` into `t`: the instructions its jump
 * replaced, then the call through the page's pointer and the jump back
 * (Go's: the call for a plain read or write-only openat only, every
 * other call made in the slot). Its length, at most SLOT_MAX. */
static int write_slot(unsigned char *t, ul slot, const struct site *site)
{
    if (site->kind != SITE_GO)
        return write_call_slot(t, slot, tramp, (const unsigned char *)site->jump_at, site->copied, site->back);
    int n = 0;
    copy(t, (const void *)site->jump_at, (ul)site->copied);
    n += site->copied;
    /* cmp $257, %eax; jne raw; test $NOT_PLAIN, %edx; je call;
     * mov %edx, %ecx; and $(O_ACCMODE | O_PATH), %ecx; cmp $O_WRONLY, %ecx;
     * jne raw (rcx is the `syscall`'s to clobber) */
    static const unsigned char test[] = {0x3d, 0x01, 0x01, 0x00, 0x00, 0x75, 32, 0xf7, 0xc2, 0,    0,
                                         0,    0,    0x74, 13,   0x89, 0xd1, 0x81, 0xe1, 0,    0,    0,
                                         0,    0x83, 0xf9, 0x01, 0x75, 11};
    copy(t + n, test, sizeof test);
    put32(t + n + 9, NOT_PLAIN);
    put32(t + n + 19, O_ACCMODE | O_PATH);
    n += sizeof test;
    t[n] = 0xff; /* call *go_entry */
    t[n + 1] = 0x15;
    put32(t + n + 2, (long)(tramp + GO_ENTRY_AT - (slot + n + 6)));
    n += 6;
    t[n] = 0xe9;
    put32(t + n + 1, (long)(site->back - (slot + n + 5)));
    n += 5;
    t[n] = 0x0f; /* raw: syscall; jmp back */
    t[n + 1] = 0x05;
    n += 2;
    t[n] = 0xe9;
    put32(t + n + 1, (long)(site->back - (slot + n + 5)));
    return n + 5;
}

static void patch(const struct site *site)
{
    const struct text_range *text = site->text;
    if (!window(site->jump_at, 5, text) || (site->hop_at && !window(site->hop_at, 2, text)))
        return;
    if (!ready_trampolines(site->jump_at) || tramp_used + SLOT_MAX > PAGE)
        return;
    if (site->kind == SITE_GO)
        ready_go_stacks();
    ul slot = tramp + tramp_used;
    unsigned char code[SLOT_MAX];
    int len = write_slot(code, slot, site);
    ul lo = site->hop_at && site->hop_at < site->jump_at ? site->hop_at : site->jump_at;
    ul page = (lo - 8) & ~(PAGE - 1), end = (site->jump_at + 16 + PAGE - 1) & ~(PAGE - 1);
    ul text_end = (text->hi + PAGE - 1) & ~(PAGE - 1);
    if (page < text->lo)
        page = text->lo & ~(PAGE - 1);
    if (end > text_end)
        end = text_end;
    if (sys3(__NR_mprotect, tramp, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return;
    copy((void *)slot, code, (ul)len);
    sys3(__NR_mprotect, tramp, PAGE, PROT_READ | PROT_EXEC);
    tramp_used += ((ul)len + 15) & ~15UL;
    if (sys3(__NR_mprotect, page, end - page, text->prot | PROT_WRITE) != 0)
        return;
    unsigned char jump[5] = {0xe9};
    put32(jump + 1, (long)(slot - (site->jump_at + 5)));
    if (!site->hop_at) {
        store_atomic(site->jump_at, jump, 5, text);
    } else {
        copy((void *)site->jump_at, jump, 5);
        unsigned char hop[2] = {0xeb, (unsigned char)(site->jump_at - (site->hop_at + 2))};
        store_atomic(site->hop_at, hop, 2, text);
    }
    sys3(__NR_mprotect, page, end - page, text->prot);
}

/* After a trapped open from the `syscall` that ends at `after`: rewrites
 * its site when it is one of the patterns, once, by one thread. */
void rewrite_site(ul after, long nr)
{
    ul s = after - 2;
    struct site site;
    if (!find_site(s, nr, &site))
        return;
    if (__atomic_exchange_n(&patch_lock, 1, __ATOMIC_ACQUIRE))
        return;
    if (find_site(s, nr, &site))
        patch(&site);
    __atomic_store_n(&patch_lock, 0, __ATOMIC_RELEASE);
}
