/*
 * fast_reads_rewrite.c: the preload's rewrite of the dynamic loader's
 * and the C library's own opens (docs/fast-reads.md, "The loader's and
 * the C library's own opens"). glibc's ld.so opens every library it
 * searches for and loads, and its libc.so its locale files,
 * /etc/localtime and its own fopen's files, through __open_nocancel,
 * which the preload's open family does not reach. At the preload's
 * start (its constructor, which runs before main and before any later
 * dlopen), each site of site_patch.c's pattern in the executable
 * segments of ld.so and libc.so, byte for byte, becomes a jump to a slot
 * on a trampoline page of this library's, whose call is the preload's
 * own open (fast_open): marked, checked, made again unmarked where the
 * answer may be the supervisor's. An object whose bytes differ is left
 * as it is.
 *
 * Owns: which objects are looked at, the search, the trampoline pages,
 * the patch of their text. Does not own the pattern, the slots or the
 * entry (site_patch.c), nor what an open becomes (fast_reads.c).
 */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fast_reads.h"
#include "raw_syscall.h"
#include "site_patch.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define PAGE 4096UL
/* Sites rewritten at most, and trampoline pages (each within reach of
 * the sites whose slots it holds). */
#define MAX_SITES 8
#define MAX_PAGES 2
#define FIRST_SLOT 16

/* '1' as built; the supervisor writes '0' in the last letter for a
 * sandbox that keeps its text as built (fast_reads.h). */
static volatile const char rewrite_switch[] = REWRITE_SWITCH "1";

struct found {
    ul at, lo, hi; /* the site's `mov`; its segment */
    int prot;      /* the segment's protection */
};

struct pages {
    ul at[MAX_PAGES], used[MAX_PAGES];
    int count;
};

#define sys6 raw_syscall6

static int failed(long ret)
{
    return (ul)ret > (ul)-4096;
}

/* A rewritten site's call: its moves left openat(AT_FDCWD, path, flags,
 * mode) in the registers. Anything else (a jump into a slot's entry from
 * elsewhere) is made as asked. */
long rewritten_call(const struct saved *s)
{
    if (s->rax == SYS_openat)
        return fast_open((int)s->rdi, (const char *)s->rsi, (int)s->rdx, (mode_t)s->r10);
    return sys6((long)s->rax, (long)s->rdi, (long)s->rsi, (long)s->rdx, (long)s->r10, (long)s->r8, (long)s->r9);
}

/* The object's base name when `name` (a path) names it, else 0. */
static const char *named(const char *name, const char *base_prefix)
{
    const char *base = name;
    for (const char *p = name; *p; p++)
        if (*p == '/')
            base = p + 1;
    return strncmp(base, base_prefix, strlen(base_prefix)) == 0 ? base : 0;
}

/* Adds the sites within [from, to) of the segment `seg` to `f` (at most
 * MAX_SITES in all): each `mov $AT_FDCWD` immediate's 0x9c found by
 * memchr, then the whole pattern around it. */
static int find_in(ul from, ul to, const struct found *seg, struct found *f, int n)
{
    const unsigned char *q = (const unsigned char *)from + 9;
    while (n < MAX_SITES && (ul)q + (NOCANCEL_LEN - 9) <= to) {
        q = memchr(q, 0x9c, to - (NOCANCEL_LEN - 9) + 1 - (ul)q);
        if (!q)
            break;
        if (is_nocancel_open(q - 9)) {
            f[n] = *seg;
            f[n].at = (ul)(q - 9);
            n++;
        }
        q++;
    }
    return n;
}

struct search {
    struct found sites[MAX_SITES];
    int count;
};

/* The executable segment of `info` that holds [lo, hi): its bounds and
 * protection in `f`; 0 if none. */
static int segment_of(const struct dl_phdr_info *info, ul lo, ul hi, struct found *f)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        ul start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && start <= lo && hi <= start + ph->p_filesz) {
            f->lo = start;
            f->hi = start + ph->p_filesz;
            f->prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0);
            return 1;
        }
    }
    return 0;
}

/* ld.so: every executable segment searched (it exports no name for its
 * open; its text is small). */
static void search_loader(const struct dl_phdr_info *info, struct search *s)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_filesz < NOCANCEL_LEN)
            continue;
        struct found seg = {.lo = info->dlpi_addr + ph->p_vaddr};
        seg.hi = seg.lo + ph->p_filesz;
        seg.prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0);
        s->count = find_in(seg.lo, seg.hi, &seg, s->sites, s->count);
    }
}

/* The address and size of the function `name` in the object's dynamic
 * symbol table (fast_reads_next.c's `object_function`); 0 if none. */
static ul lookup(const struct dl_phdr_info *info, const char *name, ul *size)
{
    const ElfW(Sym) *s = object_function(info, name);
    if (!s)
        return 0;
    *size = s->st_size;
    return info->dlpi_addr + s->st_value;
}

/* libc.so: the function it exports as __open_nocancel (GLIBC_PRIVATE),
 * searched alone. */
static void search_libc(const struct dl_phdr_info *info, struct search *s)
{
    ul size = 0, at = lookup(info, "__open_nocancel", &size);
    struct found f;
    if (!at || size < NOCANCEL_LEN || size > 4096 || !segment_of(info, at, at + size, &f))
        return;
    s->count = find_in(at, at + size, &f, s->sites, s->count);
}

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (!info->dlpi_name)
        return 0;
    if (named(info->dlpi_name, "ld-linux-x86-64.so."))
        search_loader(info, data);
    else if (named(info->dlpi_name, "libc.so."))
        search_libc(info, data);
    return 0;
}

/* A trampoline page within reach of `site`: one of `p`'s, or a new one
 * (anywhere mmap puts it, which is beside the libraries, else near the
 * site), its first 8 bytes rewrite_entry's address. 0 if none. */
static ul page_near(struct pages *p, ul site)
{
    for (int i = 0; i < p->count; i++)
        if (within_reach(p->at[i], site) && within_reach(p->at[i] + PAGE, site) &&
            p->used[i] + CALL_SLOT_MAX <= PAGE)
            return p->at[i];
    if (p->count == MAX_PAGES)
        return 0;
    const ul hints[] = {0, (site & ~(PAGE - 1)) - 0x1000000UL, (site & ~(PAGE - 1)) + 0x1000000UL};
    for (unsigned i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        long flags = MAP_PRIVATE | MAP_ANONYMOUS | (hints[i] ? MAP_FIXED_NOREPLACE : 0);
        long m = sys6(SYS_mmap, (long)hints[i], PAGE, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (failed(m))
            continue;
        if (!within_reach((ul)m, site) || !within_reach((ul)m + PAGE, site)) {
            sys6(SYS_munmap, m, PAGE, 0, 0, 0, 0);
            continue;
        }
        *(volatile ul *)m = (ul)rewrite_entry;
        p->at[p->count] = (ul)m;
        p->used[p->count] = FIRST_SLOT;
        p->count++;
        return (ul)m;
    }
    return 0;
}

/* Writes `f`'s slot into a page of `p`: its address, 0 if none. */
static ul add_slot(struct pages *p, const struct found *f)
{
    ul page = page_near(p, f->at);
    if (!page)
        return 0;
    int i = 0;
    while (p->at[i] != page)
        i++;
    ul slot = page + p->used[i];
    int len = write_call_slot((unsigned char *)slot, slot, page, (const unsigned char *)f->at, NOCANCEL_MOVES,
                              f->at + NOCANCEL_LEN);
    p->used[i] += ((ul)len + 15) & ~15UL;
    return slot;
}

/* The site's `mov $257, %eax` becomes `jmp slot`: the page that holds
 * its window made writable (its execute right kept: code on it may be
 * running, this constructor's callers among it), one locked store, the
 * segment's protection given back. A thread between the `mov` and the
 * `syscall` runs the original moves and call. */
static void patch(const struct found *f, ul slot)
{
    ul w = patch_window(f->at, 5, f->lo, f->hi);
    if (!w || !within_reach(slot, f->at + 5))
        return;
    ul page = w & ~(PAGE - 1);
    if (sys6(SYS_mprotect, (long)page, PAGE, f->prot | PROT_WRITE, 0, 0, 0) != 0)
        return;
    if (is_nocancel_open((const unsigned char *)f->at)) {
        unsigned char jump[5] = {0xe9};
        put32(jump + 1, (long)(slot - (f->at + 5)));
        patch_store(f->at, jump, 5, f->lo, f->hi);
    }
    sys6(SYS_mprotect, (long)page, PAGE, f->prot, 0, 0, 0);
}

/* Runs before main and before any later dlopen: every site found gets
 * its slot first, the pages become executable (and no longer writable),
 * then the sites jump to them. */
__attribute__((constructor)) static void rewrite_loader_sites(void)
{
    if (rewrite_switch[sizeof rewrite_switch - 2] != '1')
        return;
    struct search s = {.count = 0};
    dl_iterate_phdr(each_object, &s);
    if (s.count == 0)
        return;
    struct pages p = {.count = 0};
    ul slots[MAX_SITES];
    for (int i = 0; i < s.count; i++)
        slots[i] = add_slot(&p, &s.sites[i]);
    for (int i = 0; i < p.count; i++)
        if (sys6(SYS_mprotect, (long)p.at[i], PAGE, PROT_READ | PROT_EXEC, 0, 0, 0) != 0)
            return;
    for (int i = 0; i < s.count; i++)
        if (slots[i])
            patch(&s.sites[i], slots[i]);
}
