/*
 * socket_adopt.c: the preload's socket. The supervisor makes a guest's
 * TCP or UDP socket a host AF_UNIX socket and installs it in the guest
 * (ADDFD), and the kernel then waits for the guest to take it before the
 * supervisor's worker goes on. Here an AF_INET or AF_INET6 stream or
 * datagram socket is made natively as an AF_UNIX socket of the same type
 * and flags (the filter passes AF_UNIX sockets), then handed over by the
 * socket call itself, marked: ADOPT_MARK in r10 and the descriptor in r8,
 * both ignored by the kernel (syscalls/src/handlers/net/adopt.rs). The
 * supervisor checks the socket and answers its number, installing
 * nothing. Its EBADF (a socket call's answer otherwise never) says it did
 * not take it: the socket is closed and the call made unmarked, as
 * without the preload. Any other error is the socket call's own. A socket
 * made here a moment ago is refused only where adoption cannot work (a
 * kernel without SO_NETNS_COOKIE, a guest outside the sandbox's network
 * namespace) or where another thread raced on its number; the process
 * then stops trying, so that no later socket pays two round trips.
 *
 * Nothing here is trusted: the supervisor checks what it is handed
 * (docs/network.md, "Sockets the guest makes").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "raw_syscall.h"

/* Must equal sandbox_syscalls::handlers::ADOPT_MARK (a unit test in
 * sandbox/src/launch/fast_reads.rs compares them). */
#define ADOPT_MARK 0x736f636bad0b7ed0UL

#define EXPORT __attribute__((visibility("default")))

/* The socket types the kernel takes, and the flags beside them. */
#define TYPE_MASK 0xf

/* Set at the first refusal: every later socket takes the unmarked call. */
static int refused;

/* Whether socket(domain, type) is one the supervisor may adopt. */
static int adoptable(int domain, int type)
{
    if (__atomic_load_n(&refused, __ATOMIC_RELAXED))
        return 0;
    int base = type & TYPE_MASK;
    int flags = type & ~TYPE_MASK;
    return (domain == AF_INET || domain == AF_INET6) && (base == SOCK_STREAM || base == SOCK_DGRAM) &&
           (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == 0;
}

/* The call made natively as AF_UNIX, then handed over; -EBADF when the
 * supervisor did not take it (or no socket could be made). */
static long adopted(int domain, int type, int protocol)
{
    long own = raw_syscall6(SYS_socket, AF_UNIX, type, 0, 0, 0, 0);
    if (own < 0)
        return -EBADF;
    long ret = raw_syscall6(SYS_socket, domain, type, protocol, (long)ADOPT_MARK, own, 0);
    if (ret < 0)
        raw_syscall6(SYS_close, own, 0, 0, 0, 0, 0);
    if (ret == -EBADF)
        __atomic_store_n(&refused, 1, __ATOMIC_RELAXED);
    return ret;
}

EXPORT int socket(int domain, int type, int protocol)
{
    long ret = -EBADF;
    if (adoptable(domain, type))
        ret = adopted(domain, type, protocol);
    if (ret == -EBADF)
        ret = raw_syscall6(SYS_socket, domain, type, protocol, 0, 0, 0);
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (int)ret;
}
