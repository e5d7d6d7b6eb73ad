/*
 * fast_reads_next.c: the C library's own definition of a name the
 * preload also defines (what dlsym(RTLD_NEXT, name) answers), found in
 * the dynamic symbol tables of the objects the loader lists after this
 * library. The preload's freopen (fast_reads.c) calls the C library's
 * through it: neither glibc nor musl exports freopen under another name
 * (as glibc does fopen, `_IO_fopen`), and dlsym is glibc's only from
 * 2.34 (libdl's before). Owns the search of an object's symbol tables
 * (GNU or SysV hash, `object_function`, which the preload's rewrite also
 * asks); not what the caller does with the answer.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

#include "fast_reads.h"

struct lookup {
    const char *name;
    int after_self, any; /* past this library's entry; or any but it */
    void *found;
};

static int same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* A dynamic entry's address: glibc relocates most objects' entries in
 * place, musl none (and no loader the vDSO's): an address below the
 * object's base is an offset from it. */
static uintptr_t at(ElfW(Addr) base, ElfW(Addr) ptr)
{
    return ptr < base ? base + ptr : ptr;
}

/* Whether symbol `s` defines `name` as a function. */
static int defines(const ElfW(Sym) *s, const char *strtab, const char *name)
{
    return s->st_shndx != SHN_UNDEF && s->st_value != 0 && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
           same_name(strtab + s->st_name, name);
}

static const ElfW(Sym) *by_gnu_hash(const uint32_t *h, const ElfW(Sym) *sym, const char *str, const char *name)
{
    uint32_t hash = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        hash = hash * 33 + *p;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
    if (nbuckets == 0)
        return 0;
    const uint32_t *buckets = h + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return 0;
    for (;; i++) {
        uint32_t ch = chain[i - symoffset];
        if ((ch | 1) == (hash | 1) && defines(&sym[i], str, name))
            return &sym[i];
        if (ch & 1)
            return 0;
    }
}

static const ElfW(Sym) *by_sysv_hash(const uint32_t *h, const ElfW(Sym) *sym, const char *str, const char *name)
{
    uint32_t hash = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        hash = (hash << 4) + *p;
        uint32_t g = hash & 0xf0000000;
        hash ^= g >> 24;
        hash &= ~g;
    }
    uint32_t nbucket = h[0];
    if (nbucket == 0)
        return 0;
    const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
    for (uint32_t i = bucket[hash % nbucket]; i != 0; i = chain[i])
        if (defines(&sym[i], str, name))
            return &sym[i];
    return 0;
}

/* The function `name` as the object `info` defines it, from its dynamic
 * symbol table (through its GNU hash table, else its SysV one); 0 if
 * none. Also the preload's search of libc for `__open_nocancel`
 * (fast_reads_rewrite.c). */
const ElfW(Sym) *object_function(const struct dl_phdr_info *info, const char *name)
{
    const ElfW(Dyn) *dyn = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const uint32_t *gnu = 0, *sysv = 0;
    const ElfW(Sym) *sym = 0;
    const char *str = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = at(info->dlpi_addr, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)p;
        else if (dyn->d_tag == DT_HASH)
            sysv = (const uint32_t *)p;
        else if (dyn->d_tag == DT_SYMTAB)
            sym = (const ElfW(Sym) *)p;
        else if (dyn->d_tag == DT_STRTAB)
            str = (const char *)p;
    }
    if (!sym || !str)
        return 0;
    return gnu ? by_gnu_hash(gnu, sym, str, name) : sysv ? by_sysv_hash(sysv, sym, str, name) : 0;
}

/* Whether `info` is the object holding this file's code. */
static int is_self(struct dl_phdr_info *info)
{
    uintptr_t self = (uintptr_t)next_definition;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && self >= lo && self < lo + p->p_memsz)
            return 1;
    }
    return 0;
}

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct lookup *l = data;
    if (!l->after_self || (l->any && is_self(info))) {
        l->after_self = l->any || is_self(info);
        return 0;
    }
    const ElfW(Sym) *s = object_function(info, l->name);
    if (!s)
        return 0;
    l->found = (void *)(info->dlpi_addr + s->st_value);
    return 1;
}

/* The objects after this library's entry first (as RTLD_NEXT), then,
 * should none define it, any other. */
void *next_definition(const char *name)
{
    struct lookup l = {name, 0, 0, 0};
    dl_iterate_phdr(each_object, &l);
    if (!l.found) {
        l.after_self = l.any = 1;
        dl_iterate_phdr(each_object, &l);
    }
    return l.found;
}
