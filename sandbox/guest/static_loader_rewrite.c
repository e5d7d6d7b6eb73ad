/*
 * static_loader_rewrite.c: rewriting a trapped open site of the loaded
 * program into a jump to a trampoline (docs/fast-reads.md, "Rewritten
 * sites"). The handler (static_loader_trap.c) calls rewrite_site after
 * it has answered a trapped plain read open; from then on that site's
 * calls go through the trampoline and the loader's rewritten_call, with
 * no signal. Owns the site patterns, the trampoline page, the patch and
 * the entry the trampolines call; does not own what an open becomes
 * (trapped_open, the handler's) or the filter.
 *
 * Two patterns, matched byte for byte in the program's own text (the
 * executable segments the loader mapped), at the address the trap
 * reports just past the `syscall` (S is the `syscall`'s address):
 *
 * - glibc's `mov $257, %eax; syscall` (`mov $2, %eax` for open):
 *   b8 IMM32 0f 05. The five-byte `mov` becomes `jmp rel32` to a slot
 *   that sets eax and calls the entry, then jumps back past the
 *   `syscall` (S + 2). The `syscall` stays: a thread that was between
 *   the two instructions when the site changed still makes its call,
 *   trapped as before.
 * - musl's `__syscall_cp_c`, which every cancellable call takes:
 *   `mov %rcx, %rdx; syscall; ret` followed by the alignment padding
 *   before the next function (48 89 ca 0f 05 c3, then NOPs). The padding
 *   gets `jmp rel32` to a slot (no thread runs there), then the
 *   two-byte `syscall` becomes `jmp .+3` (eb 01) onto it; the slot calls
 *   the entry (which dispatches on rax) and jumps back to the `ret`.
 *
 * Every slot steps over the red zone, calls rewrite_entry through a
 * pointer at the start of the page, and steps back. rewrite_entry keeps
 * every register and the flags but rax (the answer), rcx and r11 (which
 * `syscall` clobbers too), calls rewritten_call with the registers, and
 * returns. Each change of the program's text is one locked 8-byte
 * compare-and-exchange within a cache line, so another thread fetches
 * the old instruction or the new one, never a mix; a site whose bytes
 * would straddle a cache line is left to the signal. Patches are made
 * one at a time (a try-lock: a handler that finds it taken leaves its
 * site for the next trap), with the text page made writable and then
 * given back its own protection.
 */
#include "static_loader.h"

int rewriting;
struct text_range program_text[MAX_TEXT];
int program_text_count;

/* The trampolines: one page, mapped within 2 GiB of the program's text
 * at the first rewrite. Its first 8 bytes hold rewrite_entry's address;
 * slots follow. */
#define SLOT 32
#define REACH 0x7ff00000L
static ul tramp;
static ul tramp_used;
static int patch_lock;

/* ---- what a rewritten site calls ---- */

/* The registers rewrite_entry saved, lowest address first. */
struct saved {
    ul rax, rdi, rsi, rdx, r8, r9, r10;
};

static long raw_syscall(const struct saved *s)
{
    register long r10 __asm__("r10") = (long)s->r10;
    register long r8 __asm__("r8") = (long)s->r8;
    register long r9 __asm__("r9") = (long)s->r9;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(s->rax), "D"(s->rdi), "S"(s->rsi), "d"(s->rdx), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Whether an open with `flags` is one trapped_open makes marked: a
 * plain read, or O_RDWR without O_EXCL. */
static int marks(long flags)
{
    return (flags & NOT_PLAIN) == 0 || (flags & READ_WRITE_MASK) == O_RDWR;
}

/* A rewritten site's call: a plain read or O_RDWR open as the handler
 * makes it (marked, then the preload's check), but with no LOADER_MARK
 * in r9: a signal delivered at one of these calls' return starts its
 * handler with these registers, and its calls must still meet the
 * stacked filter. Any other call exactly as the program made it. */

long __attribute__((used)) rewritten_call(const struct saved *s)
{
    if (s->rax == __NR_openat && marks((long)s->rdx) && s->r8 != FAST_READ_MARK)
        return trapped_open((long)s->rdi, (long)s->rsi, (long)s->rdx, (long)s->r10, 0);
    if (s->rax == __NR_open && marks((long)s->rsi))
        return trapped_open(AT_FDCWD, (long)s->rdi, (long)s->rsi, (long)s->rdx, 0);
    return raw_syscall(s);
}

void rewrite_entry(void);
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

/* ---- the program's text ---- */

static const struct text_range *text_of(ul lo, ul hi)
{
    for (int i = 0; i < program_text_count; i++)
        if (program_text[i].lo <= lo && hi <= program_text[i].hi)
            return &program_text[i];
    return 0;
}

static int near(ul a, ul b)
{
    long d = (long)(a - b);
    return d < REACH && d > -REACH;
}

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
        sys3(__NR_mprotect, at, PAGE, PROT_READ | PROT_EXEC);
        tramp = at;
        tramp_used = 8;
        return 1;
    }
    return 0;
}

/* Standard NOP encodings, as compilers pad between functions: the
 * length of the one at `p` (at most `max` bytes), 0 if none. */
static int nop_len(const unsigned char *p, int max)
{
    int n = 0;
    while (n < max && p[n] == 0x66)
        n++;
    if (n < max && p[n] == 0x2e)
        n++;
    if (n < max && p[n] == 0x90)
        return n + 1;
    if (n + 2 >= max || p[n] != 0x0f || p[n + 1] != 0x1f)
        return 0;
    int body;
    switch (p[n + 2]) {
    case 0x00:
        body = 3;
        break;
    case 0x40:
        body = 4;
        break;
    case 0x44:
        body = 5;
        break;
    case 0x80:
        body = 7;
        break;
    case 0x84:
        body = 8;
        break;
    default:
        return 0;
    }
    if (n + body > max)
        return 0;
    for (int i = 3; i < body; i++)
        if (p[n + i] != 0)
            return 0;
    return n + body;
}

/* Whether [from, to) holds NOPs alone. */
static int only_nops(const unsigned char *from, const unsigned char *to)
{
    while (from < to) {
        int n = nop_len(from, (int)(to - from));
        if (!n)
            return 0;
        from += n;
    }
    return 1;
}

/* Writes `n` bytes at `at` as one locked 8-byte compare-and-exchange
 * within a cache line and within `text`; 0 if no such window. */
/* The 8-byte window, within a cache line and within `text`, that holds
 * the `n` bytes at `at`; 0 if none. */
static ul window(ul at, int n, const struct text_range *text)
{
    for (ul w = at;; w--) {
        if ((w & 63) <= 56 && w >= text->lo && w + 8 <= text->hi)
            return w;
        if (w + 8 == at + (ul)n)
            return 0;
    }
}

/* Writes `n` bytes at `at` as one locked 8-byte compare-and-exchange of
 * its window (another thread fetches the old bytes or the new). */
static int store_atomic(ul at, const unsigned char *bytes, int n, const struct text_range *text)
{
    ul w = window(at, n, text);
    if (!w)
        return 0;
    ul old = *(volatile ul *)w, new = old;
    unsigned char *nb = (unsigned char *)&new;
    for (int i = 0; i < n; i++)
        nb[at - w + i] = bytes[i];
    return __atomic_compare_exchange_n((ul *)w, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void put32(unsigned char *p, long v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)((ul)v >> (8 * i));
}

/* A slot at `slot`: over the red zone, `mov $imm, %eax` when `imm` >= 0,
 * the call through the page's pointer, back over the red zone, and
 * `jmp back`. Its length. */
static int write_slot(unsigned char *t, ul slot, long imm, ul back)
{
    static const unsigned char down[] = {0x48, 0x8d, 0x64, 0x24, 0x80};
    static const unsigned char up[] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00};
    int n = 0;
    copy(t, down, sizeof down);
    n += sizeof down;
    if (imm >= 0) {
        t[n] = 0xb8;
        put32(t + n + 1, imm);
        n += 5;
    }
    t[n] = 0xff;
    t[n + 1] = 0x15;
    put32(t + n + 2, (long)(tramp - (slot + n + 6)));
    n += 6;
    copy(t + n, up, sizeof up);
    n += sizeof up;
    t[n] = 0xe9;
    put32(t + n + 1, (long)(back - (slot + n + 5)));
    return n + 5;
}

enum kind { NONE, GLIBC, MUSL };

static enum kind site_kind(ul s, long nr, const struct text_range **text)
{
    const unsigned char *b = (const unsigned char *)s;
    if ((*text = text_of(s - 5, s + 2)) && b[0] == 0x0f && b[1] == 0x05 && b[-5] == 0xb8 &&
        b[-4] == (unsigned char)nr && b[-3] == (unsigned char)(nr >> 8) && b[-2] == 0 && b[-1] == 0)
        return GLIBC;
    ul pad_end = (s + 3 + 15) & ~15UL;
    if ((*text = text_of(s - 3, pad_end)) && b[-3] == 0x48 && b[-2] == 0x89 && b[-1] == 0xca &&
        b[0] == 0x0f && b[1] == 0x05 && b[2] == 0xc3 && pad_end - (s + 3) >= 5 &&
        only_nops(b + 3, (const unsigned char *)pad_end))
        return MUSL;
    return NONE;
}

static void patch(ul s, long nr, enum kind kind, const struct text_range *text)
{
    if (!window(kind == GLIBC ? s - 5 : s, kind == GLIBC ? 5 : 2, text))
        return;
    if (!ready_trampolines(s) || tramp_used + SLOT > PAGE)
        return;
    ul slot = tramp + tramp_used;
    unsigned char code[SLOT];
    int len = write_slot(code, slot, kind == GLIBC ? nr : -1, s + 2);
    ul page = (s - 8) & ~(PAGE - 1), end = (s + 16 + PAGE - 1) & ~(PAGE - 1);
    ul text_end = (text->hi + PAGE - 1) & ~(PAGE - 1);
    if (page < text->lo)
        page = text->lo;
    if (end > text_end)
        end = text_end;
    if (sys3(__NR_mprotect, tramp, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return;
    copy((void *)slot, code, (ul)len);
    sys3(__NR_mprotect, tramp, PAGE, PROT_READ | PROT_EXEC);
    tramp_used += SLOT;
    if (sys3(__NR_mprotect, page, end - page, text->prot | PROT_WRITE) != 0)
        return;
    unsigned char jump[5] = {0xe9};
    if (kind == GLIBC) {
        put32(jump + 1, (long)(slot - s));
        store_atomic(s - 5, jump, 5, text);
    } else {
        put32(jump + 1, (long)(slot - (s + 8)));
        copy((void *)(s + 3), jump, 5);
        static const unsigned char hop[2] = {0xeb, 0x01};
        store_atomic(s, hop, 2, text);
    }
    sys3(__NR_mprotect, page, end - page, text->prot);
}

/* After a trapped open from the `syscall` that ends at `after`: rewrites
 * its site when it is one of the patterns, once, by one thread. */
void rewrite_site(ul after, long nr)
{
    ul s = after - 2;
    const struct text_range *text;
    if (site_kind(s, nr, &text) == NONE)
        return;
    if (__atomic_exchange_n(&patch_lock, 1, __ATOMIC_ACQUIRE))
        return;
    enum kind kind = site_kind(s, nr, &text);
    if (kind != NONE)
        patch(s, nr, kind, text);
    __atomic_store_n(&patch_lock, 0, __ATOMIC_RELEASE);
}
