/*
 * static_loader_sites.c: which trapped `syscall` instructions of the
 * loaded program are sites the loader may rewrite, and how
 * (docs/fast-reads.md, "Rewritten sites"). Owns the patterns, matched
 * byte for byte in the program's own text (the executable segments the
 * loader mapped, never a library's, a JIT's or the loader's), and the
 * plan of each site's patch; does not own the trampoline page, the slots
 * or the patch itself (static_loader_rewrite.c).
 *
 * S is the `syscall`'s address (the trap reports S + 2). Four patterns:
 *
 * - glibc's cancellable open and openat: `mov $NR, %eax; syscall`
 *   (b8 IMM32 0f 05). The five-byte `mov` becomes the jump; the slot
 *   makes it again.
 * - glibc's `__open_nocancel`: `mov $257, %eax; mov %rdi, %rsi;
 *   mov $AT_FDCWD, %edi; syscall` (b8 01 01 00 00 48 89 fe bf 9c ff ff ff
 *   0f 05). The `mov` becomes the jump; the slot makes the three moves
 *   (they read and write registers only) and the call. A thread between
 *   the `mov` and the `syscall` when the site changes runs the original
 *   moves and call, trapped as before.
 * - musl's `__syscall_cp_c`: `mov %rcx, %rdx; syscall; ret`, then at
 *   least five bytes of standard NOPs up to the next 16-byte boundary.
 *   The jump goes into the padding, the `syscall` becomes `jmp .+3`.
 * - Go's `runtime/internal/syscall.Syscall6` (Go 1.19 and later; every
 *   system call of the `syscall` and `os` packages): the whole function
 *   as the Go toolchain assembles it, then at least five `int3` of the
 *   padding Go puts between functions. The jump goes into the padding,
 *   the `syscall` becomes `jmp` onto it; a thread returning from a call
 *   made there returns to the `cmp` after it, unchanged.
 *
 * musl's `__syscall_cp_asm` (programs that link pthread_cancel) is no
 * pattern: cancellation acts on a thread whose interrupted address lies
 * between `__cp_begin` and `__cp_end`, and a slot outside that range
 * that makes a blocking call (or jumps back into it) leaves an
 * instruction where a cancel request is deferred past a blocking call.
 */
#include "static_loader.h"

const struct text_range *text_of(ul lo, ul hi)
{
    for (int i = 0; i < program_text_count; i++)
        if (program_text[i].lo <= lo && hi <= program_text[i].hi)
            return &program_text[i];
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

static int same(const unsigned char *at, const unsigned char *want, int n)
{
    for (int i = 0; i < n; i++)
        if (at[i] != want[i])
            return 0;
    return 1;
}

/* Go's runtime/internal/syscall.Syscall6, whole: the four moves of its
 * arguments, the `syscall` (at GO_SYSCALL), the errno test and its two
 * returns. */
#define GO_SYSCALL 12
static const unsigned char go_syscall6[] = {
    0x49, 0x89, 0xf2, 0x48, 0x89, 0xfa, 0x48, 0x89, 0xce, 0x48, 0x89, 0xdf, 0x0f, 0x05,
    0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff, 0x76, 0x15, 0x48, 0xf7, 0xd8, 0x48, 0x89, 0xc1,
    0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff, 0x48, 0xc7, 0xc3, 0x00, 0x00, 0x00, 0x00,
    0xc3, 0x48, 0x89, 0xd3, 0x48, 0xc7, 0xc1, 0x00, 0x00, 0x00, 0x00, 0xc3};

static int glibc(ul s, long nr, struct site *site)
{
    const unsigned char *b = (const unsigned char *)s;
    if (!(site->text = text_of(s - 5, s + 2)))
        return 0;
    if (!(b[0] == 0x0f && b[1] == 0x05 && b[-5] == 0xb8 && b[-4] == (unsigned char)nr &&
          b[-3] == (unsigned char)(nr >> 8) && b[-2] == 0 && b[-1] == 0))
        return 0;
    site->kind = SITE_GLIBC;
    site->jump_at = s - 5;
    site->copied = 5;
    return 1;
}

static int glibc_nocancel(ul s, long nr, struct site *site)
{
    ul from = s + 2 - NOCANCEL_LEN;
    if (nr != __NR_openat || !(site->text = text_of(from, s + 2)) || !is_nocancel_open((const unsigned char *)from))
        return 0;
    site->kind = SITE_GLIBC_NOCANCEL;
    site->jump_at = from;
    site->copied = NOCANCEL_MOVES;
    return 1;
}

static int musl(ul s, struct site *site)
{
    const unsigned char *b = (const unsigned char *)s;
    ul pad_end = (s + 3 + 15) & ~15UL;
    if (!(site->text = text_of(s - 3, pad_end)))
        return 0;
    if (!(b[-3] == 0x48 && b[-2] == 0x89 && b[-1] == 0xca && b[0] == 0x0f && b[1] == 0x05 &&
          b[2] == 0xc3 && pad_end - (s + 3) >= 5 && only_nops(b + 3, (const unsigned char *)pad_end)))
        return 0;
    site->kind = SITE_MUSL;
    site->jump_at = s + 3;
    site->hop_at = s;
    return 1;
}

static int go(ul s, struct site *site)
{
    ul from = s - GO_SYSCALL, pad = from + sizeof go_syscall6;
    if (!(site->text = text_of(from, pad + 5)) || !same((const unsigned char *)from, go_syscall6, sizeof go_syscall6))
        return 0;
    for (int i = 0; i < 5; i++)
        if (((const unsigned char *)pad)[i] != 0xcc)
            return 0;
    site->kind = SITE_GO;
    site->jump_at = pad;
    site->hop_at = s;
    return 1;
}

int find_site(ul s, long nr, struct site *site)
{
    zero(site, sizeof *site);
    site->back = s + 2;
    return glibc(s, nr, site) || glibc_nocancel(s, nr, site) || musl(s, site) || go(s, site);
}
