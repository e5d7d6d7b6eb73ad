/*
 * static_loader.c: the foothold in statically linked guest programs
 * (docs/fast-reads.md, "Static programs"; sandbox/src/launch/static_loader.rs
 * says when the supervisor starts it).
 *
 * A static program loads no preload, so its plain read opens are
 * serviced round trips. The supervisor starts this loader in its place:
 *
 *   static_loader PROGRAM ARGV0 ARGS...       (argv[0] "sandbox-static-loader")
 *
 * It maps PROGRAM's segments itself (static, static-pie, and a dynamic
 * program's interpreter when an exec from a loaded program names one),
 * fixes the auxiliary vector (AT_PHDR, AT_PHNUM, AT_PHENT, AT_ENTRY,
 * AT_BASE, AT_EXECFN), installs a SIGSYS handler, stacks a filter that
 * answers SECCOMP_RET_TRAP for the calls the handler takes over, drops
 * its two leading arguments and jumps to the entry.
 *
 * The handler (its calls carry LOADER_MARK in r9, which the stacked
 * filter lets pass and the kernel ignores for every call it traps):
 * - a plain read open (open, openat), unmarked: made again with
 *   FAST_READ_MARK in r8, which the supervisor's filter passes in a
 *   fenced guest, then the preload's check (EACCES from the fence, or a
 *   descriptor on the view's procfs or a cover: closed and made again
 *   unmarked, for the supervisor to serve); an open of /proc/self/exe
 *   opens the program;
 * - rt_sigprocmask and rt_sigaction: made as asked, except that SIGSYS
 *   never gets blocked (a forced SIGSYS on a thread that blocks it kills
 *   the process); the program's own SIGSYS disposition is kept here and
 *   runs for every SIGSYS that is not this filter's;
 * - readlink of /proc/self/exe (or /proc/thread-self/exe, /proc/PID/exe):
 *   the program's path, as the kernel would name it;
 * - execve and execveat: the stacked filter outlives exec while this
 *   handler does not, so the new program is started through the loader
 *   again (argv[0] "sandbox-static-loader:nested", no second filter).
 * After a trapped open, the handler rewrites its site when it is one of
 * the C libraries' known ones (static_loader_rewrite.c), unless the
 * loader was started as "sandbox-static-loader:no-rewrite" (run
 * --no-rewrite; its nested name is ":nested-no-rewrite").
 *
 * Nothing here is trusted by the supervisor: the marks are registers any
 * guest code can set, and its filter decides on them as for any call.
 * What goes wrong here only hurts the guest itself. This file holds the
 * start and the mapping; static_loader_trap.c the handler and the filter;
 * static_loader_mm.c which process owns the loader's state;
 * static_loader_rewrite.c the rewritten sites.
 * Built by sandbox/build.rs as a freestanding static-pie with no
 * relocations: no C library, no TLS, no stack protector, no jump tables,
 * hidden symbols.
 */
#include "static_loader.h"

/* ---- messages ---- */

static void say(const char *a, const char *b, const char *c)
{
    sys3(__NR_write, 2, a, str_len(a));
    sys3(__NR_write, 2, b, str_len(b));
    sys3(__NR_write, 2, c, str_len(c));
}

static void __attribute__((noreturn)) die(const char *what, const char *path)
{
    say("sandbox-static-loader: ", what, ": ");
    say(path, "\n", "");
    for (;;)
        sys1(__NR_exit_group, 127);
}

/* ---- mapping a program ---- */

#define MAX_PHNUM 64

struct image {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[MAX_PHNUM];
    ul base; /* load bias: 0 for ET_EXEC */
};

static int read_at(long fd, void *buf, ul len, ul off)
{
    return sys4(__NR_pread64, fd, buf, len, off) == (long)len;
}

static void read_headers(long fd, struct image *im, const char *path)
{
    if (!read_at(fd, &im->eh, sizeof im->eh, 0))
        die("cannot read the ELF header", path);
    Elf64_Ehdr *eh = &im->eh;
    if (eh->e_ident[0] != 0x7f || eh->e_ident[1] != 'E' || eh->e_ident[2] != 'L' ||
        eh->e_ident[3] != 'F' || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
        (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > MAX_PHNUM)
        die("not an x86_64 ELF program the loader maps", path);
    if (!read_at(fd, im->ph, eh->e_phnum * sizeof(Elf64_Phdr), eh->e_phoff))
        die("cannot read the program headers", path);
}

static long prot_of(Elf64_Word flags)
{
    return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) |
           (flags & PF_X ? PROT_EXEC : 0);
}

#define TRUNC(x) ((x) & ~(PAGE - 1))
#define ROUND(x) (((x) + PAGE - 1) & ~(PAGE - 1))

static int bad(long r)
{
    return (ul)r > (ul)-4096;
}

/* Records the executable, non-writable segments of `im` (mapped) as the
 * program's text, where sites may be rewritten. */
static void note_text(struct image *im)
{
    for (int i = 0; i < im->eh.e_phnum && program_text_count < MAX_TEXT; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || (p->p_flags & PF_W) || !p->p_filesz)
            continue;
        struct text_range *t = &program_text[program_text_count++];
        t->lo = im->base + TRUNC(p->p_vaddr);
        t->hi = im->base + p->p_vaddr + p->p_filesz;
        t->prot = prot_of(p->p_flags);
    }
}

static void map_image(long fd, struct image *im, const char *path)
{
    ul lo = (ul)-1, hi = 0;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        if (p->p_filesz > p->p_memsz || (p->p_vaddr - p->p_offset) % PAGE)
            die("a malformed segment", path);
        if (TRUNC(p->p_vaddr) < lo)
            lo = TRUNC(p->p_vaddr);
        if (ROUND(p->p_vaddr + p->p_memsz) > hi)
            hi = ROUND(p->p_vaddr + p->p_memsz);
    }
    if (hi <= lo)
        die("no loadable segment", path);
    long flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (im->eh.e_type == ET_EXEC)
        flags |= MAP_FIXED_NOREPLACE;
    long at = mmap6(im->eh.e_type == ET_EXEC ? lo : 0, hi - lo, PROT_NONE, flags, -1, 0);
    if (bad(at) || (im->eh.e_type == ET_EXEC && (ul)at != lo))
        die("cannot reserve the program's addresses", path);
    im->base = im->eh.e_type == ET_EXEC ? 0 : (ul)at - lo;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        long prot = prot_of(p->p_flags);
        ul start = im->base + TRUNC(p->p_vaddr);
        ul file_end = im->base + p->p_vaddr + p->p_filesz;
        ul mem_end = im->base + p->p_vaddr + p->p_memsz;
        if (p->p_filesz) {
            long m = mmap6(start, file_end - start, prot | (p->p_memsz > p->p_filesz ? PROT_WRITE : 0),
                           MAP_PRIVATE | MAP_FIXED, fd, TRUNC(p->p_offset));
            if (bad(m))
                die("cannot map a segment", path);
        }
        if (p->p_memsz > p->p_filesz) {
            /* The rest of the file's last page is bss: zeroed. */
            if (p->p_filesz && ROUND(file_end) > file_end)
                zero((void *)file_end, ROUND(file_end) - file_end);
            ul anon = p->p_filesz ? ROUND(file_end) : start;
            if (ROUND(mem_end) > anon) {
                long m = mmap6(anon, ROUND(mem_end) - anon, prot, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                if (bad(m))
                    die("cannot map the bss", path);
            }
            if (p->p_filesz && !(prot & PROT_WRITE))
                sys3(__NR_mprotect, start, ROUND(file_end) - start, prot);
        }
    }
}

/* The address of the program headers in the mapped image. */
static ul phdr_address(struct image *im)
{
    for (int i = 0; i < im->eh.e_phnum; i++)
        if (im->ph[i].p_type == PT_PHDR)
            return im->base + im->ph[i].p_vaddr;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        Elf64_Phdr *p = &im->ph[i];
        if (p->p_type == PT_LOAD && p->p_offset <= im->eh.e_phoff &&
            im->eh.e_phoff < p->p_offset + p->p_filesz)
            return im->base + p->p_vaddr + (im->eh.e_phoff - p->p_offset);
    }
    return 0;
}

static long open_or_die(const char *path)
{
    long fd = sys4(__NR_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        die("cannot open", path);
    return fd;
}

/* ---- the start ---- */

static void learn_devices(void)
{
    struct stat st;
    if (sys2(__NR_stat, "/proc", &st) != 0)
        return;
    proc_dev = st.st_dev;
    cover_dev = st.st_dev;
    if (sys2(__NR_stat, "/proc/sys/fs/file-nr", &st) == 0)
        cover_dev = st.st_dev;
    fast = 1;
}

/* A script: its interpreter started through the loader, with the
 * kernel's arguments (interpreter, its one optional argument, the
 * script's path, then the script's own arguments but the first). */
static void __attribute__((noreturn)) exec_script(long fd, char **argv, long argc, char **envp)
{
    static char line[256];
    long n = sys4(__NR_pread64, fd, line, sizeof line - 1, 0);
    if (n < 3)
        die("cannot read the script", argv[1]);
    line[n] = 0;
    char *p = line + 2, *interp, *arg = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    interp = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n')
        p++;
    if (*p == ' ' || *p == '\t') {
        *p++ = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        arg = p;
        while (*p && *p != '\n')
            p++;
        char *end = p;
        while (end > arg && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        *end = 0;
        if (!*arg)
            arg = 0;
    }
    *p = 0;
    if (!*interp)
        die("a script names no interpreter", argv[1]);
    /* argv: [name, interp, interp, arg?, script, args 1..]: at most
     * argc + 3 entries and the NULL. */
    long args_at = mmap6(0, (ul)(argc + 4) * sizeof(char *), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (bad(args_at))
        die("cannot start the script's interpreter", interp);
    char **args = (char **)args_at;
    long k = 0;
    args[k++] = argv[0];
    args[k++] = interp;
    args[k++] = interp;
    if (arg)
        args[k++] = arg;
    args[k++] = argv[1];
    for (long i = 3; i < argc; i++)
        args[k++] = argv[i];
    args[k] = 0;
    sys3(__NR_execve, loader_path, args, envp);
    die("cannot start the script's interpreter", interp);
}

/* ---- what other processes see: the program's command line and name ---- */

/* The kernel's struct prctl_mm_map (104 bytes). */
struct mm_map {
    ul start_code, end_code, start_data, end_data, start_brk, brk, start_stack;
    ul arg_start, arg_end, env_start, env_end;
    ul auxv;
    unsigned int auxv_size, exe_fd;
};

/* Makes /proc/PID/cmdline read the program's arguments (argv from 2 on:
 * the loader's two leading words dropped), its code and data bounds the
 * program's, and its name (comm) the program's file name, as the kernel
 * would have made them had it executed the program itself.
 * PR_SET_MM_MAP of a process's own bounds needs no privilege (the kernel
 * checks they lie in the address space and in order); where it fails
 * (no CONFIG_CHECKPOINT_RESTORE), the loader's own words stay. */
static void show_as_program(const struct image *im, const char *prog, char **argv, long argc,
                            char **envp, ul *sp)
{
    struct mm_map m = {0};
    m.start_code = m.start_data = (ul)-1;
    for (int i = 0; i < im->eh.e_phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        ul lo = im->base + p->p_vaddr, hi = lo + p->p_filesz;
        if (p->p_flags & PF_X) {
            if (lo < m.start_code)
                m.start_code = lo;
            if (hi > m.end_code)
                m.end_code = hi;
        } else if (p->p_flags & PF_W) {
            if (lo < m.start_data)
                m.start_data = lo;
            if (hi > m.end_data)
                m.end_data = hi;
        }
    }
    if (m.start_code >= m.end_code)
        return;
    if (m.start_data > m.end_data)
        m.start_data = m.end_data = m.end_code;
    m.start_brk = m.brk = (ul)sys1(__NR_brk, 0);
    m.start_stack = (ul)sp;
    m.arg_start = (ul)argv[2];
    m.arg_end = (ul)argv[argc - 1] + str_len(argv[argc - 1]) + 1;
    m.env_start = m.env_end = m.arg_end;
    if (envp[0]) {
        char **e = envp;
        while (e[1])
            e++;
        m.env_start = (ul)envp[0];
        m.env_end = (ul)*e + str_len(*e) + 1;
    }
    m.exe_fd = (unsigned int)-1;
    sys4(__NR_prctl, PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m);

    const char *name = prog;
    for (const char *c = prog; *c; c++)
        if (*c == '/')
            name = c + 1;
    char comm[16] = {0};
    for (int i = 0; i < 15 && name[i]; i++)
        comm[i] = name[i];
    sys2(__NR_prctl, PR_SET_NAME, comm);
}

static void __attribute__((noreturn, used)) loader_main(ul *sp)
{
    long argc = (long)sp[0];
    char **argv = (char **)(sp + 1);
    if (argc < 3)
        die("usage", FIRST_NAME " PROGRAM ARGV0 [ARGS...]");
    int nested = str_eq(argv[0], NESTED_NAME) || str_eq(argv[0], NESTED_NAME_NO_REWRITE);
    rewriting = str_eq(argv[0], FIRST_NAME) || str_eq(argv[0], NESTED_NAME);
    const char *prog = argv[1];
    char **envp = argv + argc + 1;
    char **e = envp;
    while (*e)
        e++;
    Elf64_auxv_t *auxv = (Elf64_auxv_t *)(e + 1);

    long n = sys4(__NR_readlinkat, AT_FDCWD, "/proc/self/exe", loader_path, MAX_PATH - 1);
    loader_path[n > 0 ? n : 0] = 0;

    long fd = sys4(__NR_openat, AT_FDCWD, prog, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        /* Not readable (mode --x): the kernel alone may start it. */
        sys3(__NR_execve, prog, argv + 2, envp);
        die("cannot start", prog);
    }
    char own[32];
    fd_path(own, fd);
    n = sys4(__NR_readlinkat, AT_FDCWD, own, program_path, MAX_PATH - 1);
    program_path[n > 0 ? n : 0] = 0;
    char head[2] = {0};
    if (read_at(fd, head, 2, 0) && head[0] == '#' && head[1] == '!')
        exec_script(fd, argv, argc, envp);

    static struct image program, interp;
    read_headers(fd, &program, prog);
    map_image(fd, &program, prog);
    note_text(&program);
    ul entry = program.base + program.eh.e_entry, base = 0;
    for (int i = 0; i < program.eh.e_phnum; i++) {
        Elf64_Phdr *p = &program.ph[i];
        if (p->p_type != PT_INTERP)
            continue;
        static char interp_path[MAX_PATH];
        if (p->p_filesz < 2 || p->p_filesz >= MAX_PATH ||
            !read_at(fd, interp_path, p->p_filesz, p->p_offset) || interp_path[p->p_filesz - 1])
            die("a malformed interpreter name", prog);
        long ifd = open_or_die(interp_path);
        read_headers(ifd, &interp, interp_path);
        map_image(ifd, &interp, interp_path);
        sys1(__NR_close, ifd);
        base = interp.base;
        entry = interp.base + interp.eh.e_entry;
    }
    sys1(__NR_close, fd);

    for (Elf64_auxv_t *a = auxv; a->a_type != AT_NULL; a++) {
        switch (a->a_type) {
        case AT_PHDR:
            a->a_un.a_val = phdr_address(&program);
            break;
        case AT_PHNUM:
            a->a_un.a_val = program.eh.e_phnum;
            break;
        case AT_PHENT:
            a->a_un.a_val = sizeof(Elf64_Phdr);
            break;
        case AT_ENTRY:
            a->a_un.a_val = program.base + program.eh.e_entry;
            break;
        case AT_BASE:
            a->a_un.a_val = base;
            break;
        case AT_EXECFN:
            a->a_un.a_val = (ul)prog;
            break;
        }
    }

    show_as_program(&program, prog, argv, argc, envp, sp);
    learn_devices();
    claim_memory();
    if (!fast)
        rewriting = 0;
    struct ksigaction ours = our_sigsys();
    sys4(__NR_rt_sigaction, SIGSYS, &ours, &program_sigsys, sizeof(ul));
    ul mask = get_mask();
    if (mask & SIGSYS_BIT)
        set_mask(mask & ~SIGSYS_BIT);
    if (!nested)
        stack_filter();

    /* Drop the loader's two arguments: argc moves up two slots, where
     * the program's argv already starts. */
    ul *new_sp = sp + 2;
    new_sp[0] = (ul)(argc - 2);
    __asm__ volatile("mov %0, %%rsp\n\t"
                     "xor %%edx, %%edx\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "jmp *%1"
                     :
                     : "r"(new_sp), "r"(entry)
                     : "memory");
    __builtin_unreachable();
}

__asm__(".text\n"
        ".globl _start\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call loader_main\n"
        "  hlt\n"
        ".globl loader_restorer\n"
        "loader_restorer:\n"
        "  mov $15, %eax\n"
        "  syscall\n"
        "  hlt\n");
