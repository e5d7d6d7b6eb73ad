/*
 * fast_reads.h: what the preload's files share (fast_reads.c, the
 * open family; fast_reads_rewrite.c, the rewrite of the dynamic loader's
 * and the C library's own opens; fast_reads_next.c, the C library's own
 * definitions).
 */
#ifndef FAST_READS_H
#define FAST_READS_H
#include <link.h>
#include <sys/types.h>

/* An open as the preload makes it (marked where the flags allow, made
 * again unmarked where the answer may be the supervisor's); the answer
 * as the kernel's, -errno on failure. */
long fast_open(int dirfd, const char *path, int flags, mode_t mode);

/* The address of the function `name` as the next object after this
 * library defines it (the C library's), or NULL (fast_reads_next.c). */
void *next_definition(const char *name);
/* fast_reads_next.c: the function `name` as one loaded object defines it. */
const ElfW(Sym) *object_function(const struct dl_phdr_info *info, const char *name);

/* The switch the supervisor finds in the library's bytes: the letter
 * after it is '1' (rewrite the loader's and the C library's own open
 * sites) as built, '0' in a sandbox whose sites stay as built (`run
 * --no-rewrite`). Must equal REWRITE_SWITCH of
 * sandbox/src/launch/fast_reads.rs (a unit test there finds it). */
#define REWRITE_SWITCH "sandbox-fast-reads:rewrite-sites="

#endif
