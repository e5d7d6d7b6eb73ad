/*
 * socket_names.c: the preload's accept, accept4, connect, getsockname,
 * and the TCP_NODELAY of setsockopt and getsockopt. An
 * accepted connection's own name is fixed at its accept, and servers ask
 * for it at once (CPython's accept does, on every connection); the
 * supervisor's netstack answers getsockname with a round trip. Here a
 * marked accept (NAME_NOTE_MARK in r8, a note's address in r9, both
 * ignored by the kernel) gets that name written into the note by the
 * supervisor with the host socket's inode (syscalls/src/handlers/net/
 * note.rs), and getsockname answers from it while fstat of the
 * descriptor still shows that inode; anything else makes the call,
 * which the filter traps as before.
 *
 * Nothing here is trusted by the supervisor, which never reads a note:
 * a forged or stale one changes only what the guest tells itself
 * (docs/network.md, "Names without a round trip").
 *
 * The caller's pointers are hostile: getsockname's length is read and
 * written only once FUTEX_WAKE_OP added 0 to it (the kernel reports
 * EFAULT, never a fault); the name's buffer is proved writable by
 * getrandom before the name is copied there. Any failed proof makes the call itself, whose
 * served answer is the kernel's (EFAULT, EINVAL). Notes are kept by
 * descriptor number in a table whose slots a sequence count guards, so
 * that a thread reads a whole note or none. accept is a cancellation
 * point, as the C library's is (asynchronous cancellation around the
 * call).
 *
 * A connection's name changes once after its accept: a connect to
 * AF_UNSPEC (a TCP disconnect) of a wildcard listener's connection
 * unsets its address; so connect forgets the note of the descriptor it
 * is given first. It is a raw call that is a cancellation point as
 * accept's is, marked too: a client learns from its answer that its
 * connection is sandbox-local, and keeps a note without a name.
 *
 * A noted descriptor is a connection the netstack carries between two of
 * its own sockets, whose TCP_NODELAY needs no host action: setsockopt
 * and getsockopt of it are answered by the host socket's flag that
 * stands for it (at the end of this file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "raw_syscall.h"

/* Must equal sandbox_syscalls::handlers::NAME_NOTE_MARK (a unit test in
 * sandbox/src/launch/fast_reads.rs compares them). */
#define NAME_NOTE_MARK 0x6e616d655eedc0deUL
/* Must equal sandbox_syscalls::policy::NODELAY_MARK (the same test):
 * setsockopt's and getsockopt's r9, connect's r8. */
#define NODELAY_MARK 0x6e6f64656c61795fUL

#define EXPORT __attribute__((visibility("default")))

/* The C library's own types of these calls are left out: glibc declares
 * the address argument as a transparent union. */
typedef unsigned int socklen_t;
struct sockaddr;

/* What the supervisor writes (NOTE_LEN, 48 bytes): the connection's host
 * socket inode (0: not written), its name's length and the name. */
struct note {
    unsigned long ino;
    unsigned int len;
    unsigned int pad;
    unsigned long name[4];
};

/* One descriptor's note. seq is odd while a thread writes the slot. */
struct slot {
    unsigned int seq;
    int fd;
    unsigned long ino;
    unsigned long len;
    unsigned long name[4];
};

/* A note's length when it names nothing: a connection the client's
 * connect learned is local, whose getsockname is made. */
#define NO_NAME 0xffffffffUL
/* Set in a marked connect's answer when it is in progress. Must equal
 * sandbox_syscalls::handlers::CONNECT_IN_PROGRESS (the same test). */
#define IN_PROGRESS 0x4000000000000000UL

#define SLOTS 256
static struct slot slots[SLOTS];

/* Made when a getsockname is not answered here. */
#define NOT_NOTED 1

static long answer(long ret)
{
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* Keeps the note of descriptor `fd`; skipped when another thread is
 * writing the same slot (the call is then made, as without a note). */
static void keep(int fd, const struct note *n)
{
    struct slot *s = &slots[(unsigned)fd % SLOTS];
    unsigned int seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    if ((seq & 1) || n->ino == 0 || (n->len > sizeof n->name && n->len != NO_NAME))
        return;
    if (!__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->fd, fd, __ATOMIC_RELAXED);
    __atomic_store_n(&s->ino, n->ino, __ATOMIC_RELAXED);
    __atomic_store_n(&s->len, n->len, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++)
        __atomic_store_n(&s->name[i], n->name[i], __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

/* A consistent copy of descriptor `fd`'s slot into `out`; 0 when there
 * is none (or a thread is writing it, or its length is one no note has:
 * the table is the guest's to scribble on). */
static int lookup(int fd, struct slot *out)
{
    const struct slot *s = &slots[(unsigned)fd % SLOTS];
    unsigned int seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    out->fd = __atomic_load_n(&s->fd, __ATOMIC_RELAXED);
    out->ino = __atomic_load_n(&s->ino, __ATOMIC_RELAXED);
    out->len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++)
        out->name[i] = __atomic_load_n(&s->name[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return !(seq & 1) && seq == __atomic_load_n(&s->seq, __ATOMIC_RELAXED) && out->fd == fd &&
           out->ino != 0 && (out->len <= sizeof out->name || out->len == NO_NAME);
}

/* Whether `fd` is now the socket whose inode is `ino` (a sockfs inode is
 * unique while its socket lives). */
static int socket_is(int fd, unsigned long ino)
{
    struct stat st;
    return raw_syscall6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_ino == ino;
}

/* Forgets descriptor `fd`'s note: a later getsockname makes the call.
 * A slot another thread is writing is left: a thread keeps only the
 * note of a descriptor its own accept just returned, which no other
 * thread can have connected yet, so that note is another descriptor's
 * and fd's is gone with it. Never waits (a signal handler may call). */
static void forget(int fd)
{
    struct slot *s = &slots[(unsigned)fd % SLOTS];
    unsigned int seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if ((seq & 1) || __atomic_load_n(&s->fd, __ATOMIC_RELAXED) != fd)
        return;
    if (!__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&s->ino, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The C library's, weakly: glibc before 2.34 has it in libpthread only,
 * which a program without threads does not load (and then nothing
 * cancels). The same values in glibc and musl. */
extern int pthread_setcanceltype(int type, int *old) __attribute__((weak));
#define CANCEL_DEFERRED 0
#define CANCEL_ASYNCHRONOUS 1

/* A raw call that is a cancellation point as the C library's blocking
 * calls are: made with asynchronous cancellation on, as glibc made its
 * cancellable calls before 2.34, so a thread cancelled while the call
 * blocks (in the supervisor's wait, which a signal interrupts) is
 * cancelled. */
static long cancellable(long nr, long a, long b, long c, long d, long e, long f)
{
    int old = CANCEL_DEFERRED;
    if (pthread_setcanceltype != 0)
        pthread_setcanceltype(CANCEL_ASYNCHRONOUS, &old);
    long ret = raw_syscall6(nr, a, b, c, d, e, f);
    if (pthread_setcanceltype != 0 && old != CANCEL_ASYNCHRONOUS)
        pthread_setcanceltype(old, &old);
    return ret;
}

/* connect, marked with NODELAY_MARK in r8: a TCP connection to a
 * sandbox listener answers its host socket's inode (with IN_PROGRESS
 * set where a non-blocking connect answers EINPROGRESS) instead of 0
 * (syscalls/src/handlers/net/socket.rs, local_answer); the kernel's own
 * connect never answers more than 0. The descriptor is then kept as a
 * local connection, without a name, while fstat shows that inode. The
 * old note goes first (a connect to AF_UNSPEC changes a connection's
 * name). */
EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (fd >= 0)
        forget(fd);
    long ret = cancellable(SYS_connect, fd, (long)addr, len, 0, NODELAY_MARK, 0);
    if (ret > 0) {
        struct note n = {.ino = (unsigned long)ret & ~IN_PROGRESS, .len = NO_NAME};
        if (socket_is(fd, n.ino))
            keep(fd, &n);
        ret = ((unsigned long)ret & IN_PROGRESS) ? -EINPROGRESS : 0;
    }
    return (int)answer(ret);
}

/* accept (nr 43) or accept4 (288), marked and a cancellation point as
 * the C library's accept is; the note kept on success. */
static long accept_noted(long nr, int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    struct note n = {0};
    long ret = cancellable(nr, fd, (long)addr, (long)len, flags, NAME_NOTE_MARK, (long)&n);
    if (ret >= 0 && __atomic_load_n(&n.ino, __ATOMIC_RELAXED) != 0)
        keep((int)ret, &n);
    return ret;
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    return (int)answer(accept_noted(SYS_accept4, fd, addr, len, flags));
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    return (int)answer(accept_noted(SYS_accept, fd, addr, len, 0));
}

/* Whether the 4-byte `int` at `p` can be read and written: FUTEX_WAKE_OP
 * adds 0 to it atomically (EFAULT when it cannot) and wakes no one. An
 * unaligned pointer is EINVAL: not proved. */
static int readable_writable_int(int *p)
{
    long add_zero = (long)FUTEX_OP_ADD << 28;
    return raw_syscall6(SYS_futex, (long)p, FUTEX_WAKE_OP_PRIVATE, 0, 0, (long)p, add_zero) == 0;
}

/* Whether the `n` bytes at `p` are writable, by writing them: getrandom
 * copies out as the kernel's getsockname would (EFAULT, or fewer bytes
 * where the range ends in memory that is not). */
static int writable(void *p, unsigned long n)
{
    return raw_syscall6(SYS_getrandom, (long)p, n, 1 /* GRND_NONBLOCK */, 0, 0, 0) == (long)n;
}

/* Whether `fd` has a note (copied to `s`) and is still the socket it
 * was written for (fstat shows its inode). */
static int noted(int fd, struct slot *s)
{
    return fd >= 0 && lookup(fd, s) && socket_is(fd, s->ino);
}

/* getsockname answered from the note of `fd`, as the kernel's
 * move_addr_to_user writes it; NOT_NOTED when there is no note for the
 * socket `fd` is now, or a pointer is not proved good. */
static long noted_name(int fd, void *addr, socklen_t *lenp)
{
    struct slot s;
    if (!noted(fd, &s) || s.len > sizeof s.name)
        return NOT_NOTED;
    if (!readable_writable_int((int *)lenp))
        return NOT_NOTED;
    int room = *(volatile int *)lenp;
    if (room < 0)
        return -EINVAL;
    unsigned long n = (unsigned long)room < s.len ? (unsigned long)room : s.len;
    if (n > 0 && !writable(addr, n))
        return NOT_NOTED;
    const unsigned char *name = (const unsigned char *)s.name;
    for (unsigned long i = 0; i < n; i++)
        ((volatile unsigned char *)addr)[i] = name[i];
    *(volatile int *)lenp = (int)s.len;
    return 0;
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
    long r = noted_name(fd, addr, len);
    if (r == NOT_NOTED)
        r = raw_syscall6(SYS_getsockname, fd, (long)addr, (long)len, 0, 0, 0);
    return (int)answer(r);
}

/* TCP_NODELAY of a noted connection (one the netstack carries between
 * two of its own sockets) is its host socket's SO_WIFI_STATUS flag
 * (netstack/src/nodelay.rs), which a call marked NODELAY_MARK in r9
 * reads or sets natively: the filter passes it. The kernel checks the
 * value and length as TCP's do (EINVAL shorter than an int, any
 * non-zero value sets it; a negative length is EINVAL). A bad pointer
 * (EFAULT) makes the call unmarked, whose served answer is the
 * supervisor's, as does any other option or descriptor. */
#define SOL_SOCKET_LEVEL 1
#define SO_WIFI_STATUS_FLAG 41
#define TCP_LEVEL 6
#define TCP_NODELAY_OPTION 1

static long nodelay_call(long nr, int fd, int level, int name, long val, long len)
{
    struct slot s;
    if (level == TCP_LEVEL && name == TCP_NODELAY_OPTION && noted(fd, &s)) {
        long r = raw_syscall6(nr, fd, SOL_SOCKET_LEVEL, SO_WIFI_STATUS_FLAG, val, len, NODELAY_MARK);
        if (r != -EFAULT)
            return r;
    }
    return raw_syscall6(nr, fd, level, name, val, len, 0);
}

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    return (int)answer(nodelay_call(SYS_setsockopt, fd, level, name, (long)val, len));
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    return (int)answer(nodelay_call(SYS_getsockopt, fd, level, name, (long)val, (long)len));
}
