/*
 * The freestanding layer under src/fast_client.c, the pool's client on
 * its fast path: the types, system call numbers and constants it uses,
 * the raw `syscall` instruction, the few string helpers it needs, and its
 * error lines and exit. Included by fast_client.c alone (one object, so
 * build.rs's check that it needs no symbol covers this too), and under the
 * same rules: no call of any function but these, no data with pointers,
 * no thread-local storage.
 */

#ifndef SV_FAST_CLIENT_SYS_H
#define SV_FAST_CLIENT_SYS_H

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef long i64;

enum {
    SYS_read = 0,
    SYS_write = 1,
    SYS_close = 3,
    SYS_fstat = 5,
    SYS_poll = 7,
    SYS_mmap = 9,
    SYS_rt_sigaction = 13,
    SYS_rt_sigprocmask = 14,
    SYS_socket = 41,
    SYS_connect = 42,
    SYS_sendmsg = 46,
    SYS_recvmsg = 47,
    SYS_fcntl = 72,
    SYS_exit_group = 231,
    SYS_signalfd4 = 289,
};

#define EINTR 4
#define EAGAIN 11
#define EPIPE 32
#define EMSGSIZE 90
#define ECONNRESET 104
#define AF_UNIX 1
#define SOCK_SEQPACKET 5
#define SOCK_CLOEXEC 0x80000
#define MSG_NOSIGNAL 0x4000
#define SOL_SOCKET 1
#define SCM_RIGHTS 1
#define F_GETFD 1
#define F_GETFL 3
#define O_PATH 0x200000
#define S_IFMT 0170000
#define S_IFCHR 0020000
#define POLLIN 1
#define SIG_BLOCK 0
#define SIG_SETMASK 2
#define SIGPIPE 13
#define SFD_CLOEXEC 0x80000
#define SFD_NONBLOCK 0x800

static i64 sys(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e, i64 f)
{
    i64 ret;
    register i64 r10 __asm__("r10") = d;
    register i64 r8 __asm__("r8") = e;
    register i64 r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

#define sys1(n, a) sys(n, (i64)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys(n, (i64)(a), (i64)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys(n, (i64)(a), (i64)(b), (i64)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys(n, (i64)(a), (i64)(b), (i64)(c), (i64)(d), 0, 0)

static u64 length(const char *s)
{
    u64 n = 0;
    while (s[n])
        n++;
    return n;
}

static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* `s` after `prefix`, or 0. */
static const char *after(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return s;
}

static void say(const char *s)
{
    u64 n = length(s);
    while (n) {
        i64 w = sys3(SYS_write, 2, s, n);
        if (w == -EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (u64)w;
    }
}

/* `v` in decimal, written to end just before `end` (20 bytes hold any
 * u64); where it starts. */
static char *decimal(u64 v, char *end)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

/* The words nix's `Errno::desc` gives the errors a send or a receive on
 * the connection may meet; others by number. */
static void say_error(i64 err)
{
    if (err == -EPIPE)
        say("Broken pipe");
    else if (err == -ECONNRESET)
        say("Connection reset by peer");
    else if (err == -EMSGSIZE)
        say("Message too long");
    else {
        char digits[21];
        digits[20] = 0;
        say("errno ");
        say(decimal((u64)-err, digits + 20));
    }
}

static void __attribute__((noreturn)) leave(int code)
{
    for (;;)
        sys1(SYS_exit_group, code);
}

#endif
