/*
 * The pool's client on its fast path, run before the C library starts.
 *
 * `supervisor run --pool SOCKET [--] COMMAND...` with nothing else on its
 * command line, stdin, stdout and stderr open and none of them a terminal
 * or a device the sandbox would have to copy, is the whole of an
 * autograder's or a notebook server's call. For it the binary's entry
 * point (`sv_entry`, set by build.rs) does the client's work here, with
 * raw system calls, and exits: glibc's start is never run. That start
 * costs about 0.3 ms on the VMs we measure on (its CPU feature probe
 * executes some sixty `cpuid` instructions, each a trap to the hypervisor
 * of about 3.7 us), more than half of the client's whole cost
 * (PERFORMANCE.md, 2026-12-05).
 *
 * Anything else returns before any state is changed, and `sv_entry`
 * jumps to the C library's `_start` as if nothing had happened: the Rust
 * client (`supervisor/src/pool/client.rs`) then does the same work, and
 * gives every error its line. That includes a pool that does not answer
 * (this path gives up before it has blocked a signal or sent a byte).
 *
 * What it does is what client.rs does for the same command line: the
 * request (`Q` + JSON, `supervisor/src/pool/protocol.rs`) carries the
 * command, the environment `run` builds (PATH, HOME, LANG, TERM, as the
 * C library's getenv would find them), no report, no trace, no timeout,
 * no terminal; stdin, stdout and stderr go with it as they are (a memory
 * device of the view's /dev is replaced by the sandbox with the view's
 * own node); the forwarded signals go on as `S` messages; the answer's
 * code is the exit status and its message the one line on stderr. The
 * protocol's prefixes, field names and sizes are `pool_wire.h`'s, which
 * build.rs writes from `supervisor/src/pool/wire.rs`, the Rust client's
 * own; tests/pool_fast.rs checks that both clients send the same bytes
 * and read the same answers alike.
 *
 * Rules that keep this safe to run before the C library: no call of any
 * function but the ones here (build.rs refuses an object that needs any
 * other symbol); no data with pointers in it (a static PIE is not
 * relocated yet); no thread-local storage, so no stack protector. The
 * system calls, constants and string helpers under it are
 * `fast_client_sys.h`'s.
 */

#include "pool_wire.h"
#include "fast_client_sys.h"

/* Longest message either side of the protocol reads. */
#define MAX_MESSAGE SV_MAX_MESSAGE

/* The command line this path serves: SOCKET and the command's argv. */
struct line {
    const char *pool;
    char **command;
    int count;
};

/* `run --pool SOCKET [--] COMMAND...` (or `--pool=SOCKET`), as clap reads
 * it; 0 for anything else. */
static int parse(int argc, char **argv, struct line *line)
{
    line->pool = 0;
    if (argc < 4 || !same(argv[1], "run"))
        return 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *value = after(a, "--pool=");
        if (same(a, "--pool") && i + 1 < argc)
            value = argv[++i];
        if (value) {
            if (line->pool || !*value || value[0] == '-')
                return 0;
            line->pool = value;
            continue;
        }
        if (same(a, "--"))
            i++;
        else if (a[0] == '-')
            return 0;
        line->command = argv + i;
        line->count = argc - i;
        return line->pool && line->count > 0 && length(line->pool) < 108;
    }
    return 0;
}

/* The kernel's struct stat on x86_64: the two fields read. */
struct kstat {
    u64 dev, ino, nlink;
    u32 mode, uid, gid, pad;
    u64 rdev;
    i64 rest[12];
};

/* Whether descriptor `fd` goes to the sandbox as it is: open, no O_PATH,
 * and no character device but the memory devices a view's /dev holds
 * (host_stdio.rs: null, zero, full, random, urandom). A terminal or any
 * other device is the Rust client's to reopen. */
static int sendable(int fd)
{
    struct kstat st;
    if (sys2(SYS_fcntl, fd, F_GETFD) < 0)
        return 0;
    i64 flags = sys2(SYS_fcntl, fd, F_GETFL);
    if (flags < 0 || (flags & O_PATH) || sys2(SYS_fstat, fd, &st) < 0)
        return 0;
    if ((st.mode & S_IFMT) != S_IFCHR)
        return 1;
    u64 major = ((st.rdev >> 8) & 0xfff) | ((st.rdev >> 32) & ~0xfffUL);
    u64 minor = (st.rdev & 0xff) | ((st.rdev >> 12) & ~0xffUL);
    return major == 1 && (minor == 3 || minor == 5 || minor == 7 || minor == 8 || minor == 9);
}

/* A bounded writer of the request. */
struct out {
    char *buf;
    u64 len, cap;
};

static void put(struct out *o, const char *s, u64 n)
{
    for (u64 i = 0; i < n; i++) {
        if (o->len < o->cap)
            o->buf[o->len] = s[i];
        o->len++;
    }
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, length(s));
}

/* Bytes as serde_json writes a Vec<u8>: [104,105]. */
static void put_bytes(struct out *o, const char *s, u64 n)
{
    put(o, "[", 1);
    for (u64 i = 0; i < n; i++) {
        char digits[3];
        const char *d = decimal((unsigned char)s[i], digits + 3);
        if (i)
            put(o, ",", 1);
        put(o, d, (u64)(digits + 3 - d));
    }
    put(o, "]", 1);
}

/* One of the variables `run` passes on, as getenv finds it (the first). */
static int put_env(struct out *o, char **envp, const char *name, int first)
{
    for (char **e = envp; *e; e++) {
        const char *value = after(*e, name);
        if (value && *value == '=') {
            value++;
            put(o, first ? "[" : ",[", first ? 1 : 2);
            put_bytes(o, name, length(name));
            put(o, ",", 1);
            put_bytes(o, value, length(value));
            put(o, "]", 1);
            return 1;
        }
    }
    return 0;
}

/* `Q` + the JSON of protocol.rs's Request, as serde_json writes it; its
 * length, or 0 when it does not fit (the Rust client then says so). */
static u64 request(char *buf, const struct line *line, char **envp)
{
    struct out o = {buf, 0, MAX_MESSAGE};
    char prefix = SV_REQUEST;
    put(&o, &prefix, 1);
    puts_(&o, "{\"" SV_REQUEST_COMMAND "\":[");
    for (int i = 0; i < line->count; i++) {
        if (i)
            put(&o, ",", 1);
        put_bytes(&o, line->command[i], length(line->command[i]));
    }
    puts_(&o, "],\"" SV_REQUEST_ENV "\":[");
    int first = 1;
    first &= !put_env(&o, envp, "PATH", first);
    first &= !put_env(&o, envp, "HOME", first);
    first &= !put_env(&o, envp, "LANG", first);
    first &= !put_env(&o, envp, "TERM", first);
    puts_(&o, "],\"" SV_REQUEST_REPORT "\":false,\"" SV_REQUEST_TRACE "\":false,\"" SV_REQUEST_TIMEOUT
              "\":null,\"" SV_REQUEST_TERMINAL "\":null}");
    return o.len <= o.cap ? o.len : 0;
}

struct iovec_ {
    void *base;
    u64 len;
};

struct msghdr_ {
    void *name;
    u32 namelen;
    struct iovec_ *iov;
    u64 iovlen;
    void *control;
    u64 controllen;
    int flags;
};

/* A control message with three descriptors (CMSG_SPACE(12) bytes). */
struct rights {
    u64 len;
    int level, type;
    int fds[3];
    int pad;
};

static i64 send_request(int conn, char *msg, u64 len)
{
    struct iovec_ iov = {msg, len};
    struct rights r = {16 + 3 * sizeof(int), SOL_SOCKET, SCM_RIGHTS, {0, 1, 2}, 0};
    struct msghdr_ m = {0, 0, &iov, 1, &r, sizeof r, 0};
    return sys3(SYS_sendmsg, conn, &m, MSG_NOSIGNAL);
}

static void send_signal(int conn, u32 signo)
{
    char msg[5] = {SV_SIGNAL, (char)signo, (char)(signo >> 8), (char)(signo >> 16), (char)(signo >> 24)};
    struct iovec_ iov = {msg, 5};
    struct msghdr_ m = {0, 0, &iov, 1, 0, 0, 0};
    sys3(SYS_sendmsg, conn, &m, MSG_NOSIGNAL);
}

/* The signals `run` forwards (launch/init.rs FORWARDED): HUP, INT, QUIT,
 * USR1, USR2, TERM, WINCH. */
#define BIT(s) (1UL << ((s)-1))
static const u64 FORWARDED = BIT(1) | BIT(2) | BIT(3) | BIT(10) | BIT(12) | BIT(15) | BIT(28);

/* Passes signals on until the answer is there; its length, or -errno. */
static i64 wait_for_answer(int conn, int sigfd, char *buf)
{
    for (;;) {
        struct {
            int fd;
            short events, revents;
        } fds[2] = {{conn, POLLIN, 0}, {sigfd, POLLIN, 0}};
        i64 r = sys3(SYS_poll, fds, 2, -1);
        if (r < 0 && r != -EINTR)
            return r;
        if (fds[1].revents) {
            u32 info[32];
            while (sys3(SYS_read, sigfd, info, sizeof info) == (i64)sizeof info)
                send_signal(conn, info[0]);
        }
        if (fds[0].revents) {
            struct iovec_ iov = {buf, MAX_MESSAGE};
            struct msghdr_ m = {0, 0, &iov, 1, 0, 0, 0};
            for (;;) {
                i64 n = sys3(SYS_recvmsg, conn, &m, 0);
                if (n != -EINTR)
                    return n;
            }
        }
    }
}

/* The answer's JSON (protocol.rs's Answer, as serde_json writes it):
 * `code` and `message`. The message, unescaped, goes to `line` (which
 * holds at least as many bytes as the JSON). 0 if it is not that. */
static int read_answer(const char *json, u64 n, int *code, char *line, int *has_line)
{
    static const char code_key[] = "\"" SV_ANSWER_CODE "\":";
    static const char message_key[] = "\"" SV_ANSWER_MESSAGE "\":";
    const u64 code_len = sizeof code_key - 1, message_len = sizeof message_key - 1;
    const char *end = json + n;
    const char *p = 0;
    for (const char *s = json; s + code_len <= end; s++)
        if (after(s, code_key)) {
            p = s + code_len;
            break;
        }
    if (!p)
        return 0;
    int negative = p < end && *p == '-';
    p += negative;
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    i64 v = 0;
    while (p < end && *p >= '0' && *p <= '9' && v < 100000000)
        v = v * 10 + (*p++ - '0');
    *code = (int)(negative ? -v : v);
    *has_line = 0;
    for (const char *s = json; s + message_len <= end; s++) {
        if (!after(s, message_key))
            continue;
        s += message_len;
        if (s < end && *s != '"')
            return 1; /* null */
        u64 k = 0;
        for (s++; s < end && *s != '"'; s++) {
            char c = *s;
            if (c == '\\' && s + 1 < end) {
                c = *++s;
                if (c == 'n')
                    c = '\n';
                else if (c == 't')
                    c = '\t';
                else if (c == 'r')
                    c = '\r';
                else if (c == 'u' && s + 4 < end) {
                    /* serde_json escapes only control characters so. */
                    u32 u = 0;
                    for (int i = 1; i <= 4; i++) {
                        char h = s[i];
                        u = u * 16 + (u32)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                    }
                    s += 4;
                    c = u < 0x80 ? (char)u : '?';
                } else if (c == 'b' || c == 'f')
                    c = ' ';
            }
            line[k++] = c;
        }
        line[k] = 0;
        *has_line = 1;
        return 1;
    }
    return 1;
}

static int __attribute__((noreturn)) conclude(i64 n, const char *buf, char *line)
{
    int code = 125, has_line = 0;
    if (n <= 0 || buf[0] != SV_ANSWER) {
        say("supervisor: the pool's sandbox ended without an answer");
        if (n < 0) {
            say(": ");
            say_error(n);
        }
        say("\n");
        leave(125);
    }
    if (!read_answer(buf + 1, (u64)n - 1, &code, line, &has_line)) {
        say("supervisor: a malformed answer from the pool\n");
        leave(125);
    }
    if (has_line) {
        say("supervisor: ");
        say(line);
        say("\n");
    }
    leave(code);
}

struct sockaddr_un_ {
    u16 family;
    char path[108];
};

/* A connection to the pool, or -1 (the Rust client says why). */
static int connect_to(const char *pool)
{
    struct sockaddr_un_ addr;
    u64 n = length(pool);
    int sock = (int)sys3(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return -1;
    addr.family = AF_UNIX;
    for (u64 i = 0; i <= n; i++)
        addr.path[i] = pool[i];
    for (;;) {
        i64 r = sys3(SYS_connect, sock, &addr, 2 + n);
        if (r == 0)
            return sock;
        if (r != -EINTR)
            break;
    }
    sys1(SYS_close, sock);
    return -1;
}

/* Called by sv_entry with the process's first stack: returns only when
 * this is not the fast path, with nothing changed. */
__attribute__((used, visibility("hidden"))) void sv_fast_client(i64 *stack)
{
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    char **envp = argv + argc + 1;
    struct line line;
    if (!parse(argc, argv, &line) || !sendable(0) || !sendable(1) || !sendable(2))
        return;
    /* The request, then the answer: one mapping, touched as far as used. */
    char *buf = (char *)sys(SYS_mmap, 0, 2 * MAX_MESSAGE + 1, 3, 0x22, -1, 0);
    if ((i64)buf < 0 && (i64)buf > -4096)
        return;
    u64 len = request(buf, &line, envp);
    if (!len)
        return;
    u64 forwarded = FORWARDED, saved = 0;
    if (sys4(SYS_rt_sigprocmask, SIG_BLOCK, &forwarded, &saved, 8) < 0)
        return;
    int sigfd = (int)sys4(SYS_signalfd4, -1, &forwarded, 8, SFD_CLOEXEC | SFD_NONBLOCK);
    int conn = sigfd < 0 ? -1 : connect_to(line.pool);
    if (conn < 0) {
        if (sigfd >= 0)
            sys1(SYS_close, sigfd);
        sys4(SYS_rt_sigprocmask, SIG_SETMASK, &saved, 0, 8);
        return;
    }
    /* From here the command is ours to finish. As Rust's runtime does:
     * a closed stderr or pipe is an error to ignore, not a death. */
    struct {
        u64 handler, flags, restorer, mask;
    } ignore = {1, 0, 0, 0};
    sys4(SYS_rt_sigaction, SIGPIPE, &ignore, 0, 8);
    i64 sent = send_request(conn, buf, len);
    if (sent < 0) {
        say("supervisor: sending the command: ");
        say_error(sent);
        say("\n");
        leave(125);
    }
    char *answer = buf + MAX_MESSAGE;
    conclude(wait_for_answer(conn, sigfd, answer), answer, buf);
}

/* The entry point (build.rs: `--entry=sv_entry`): the fast path, else the
 * C library's `_start` with the stack and %rdx as the kernel (or the
 * dynamic loader) left them. */
__asm__(".text\n"
        ".globl sv_entry\n"
        ".type sv_entry,@function\n"
        "sv_entry:\n"
        "    mov %rsp, %rbx\n"
        "    mov %rdx, %r12\n"
        "    mov %rsp, %rdi\n"
        "    and $-16, %rsp\n"
        "    call sv_fast_client\n"
        "    mov %rbx, %rsp\n"
        "    mov %r12, %rdx\n"
        "    jmp _start\n"
        ".size sv_entry, .-sv_entry\n");
