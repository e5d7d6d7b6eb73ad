/*
 * The socket cases of hostile.c (included by it; not a separate program):
 * socket, bind and connect with hostile addresses, names and options,
 * accept and listen. The message calls are hostile_messages.h's.
 */

/* ---- sockets ------------------------------------------------------------- */

/* The address-length cases shared by bind and connect. */
/* The address cases shared by bind and connect: A (ALEN bytes) is a good
 * address for DOMAIN; OTHER (OLEN bytes) one of the other family. */
static void addr_cases(const char *call, long nr, int domain, int type, const void *a,
                       socklen_t alen, const void *other, socklen_t olen) {
    char nm[160];
    FOR_FDS(call, syscall(nr, F, a, alen));
    long lens[] = {0, 1, 2, -1L, 1000, 1L << 30, HIGH_BITS | alen, alen - 1, alen + 1};
    const char *ll[] = {"0", "1", "2", "minus1", "1000", "huge", "high_bits_len", "short", "long"};
    for (int i = 0; i < 9; i++) {
        int s = socket(domain, type | SOCK_NONBLOCK, 0);
        snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
        R(nm, syscall(nr, s, a, lens[i]));
        close(s);
    }
    for (int i = 0; i < NBUFS; i++) {
        int s = socket(domain, type | SOCK_NONBLOCK, 0);
        snprintf(nm, sizeof nm, "%s addr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, bufs[i].p, alen));
        close(s);
    }
    int s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s family=other", call);
    R(nm, syscall(nr, s, other, olen));
    close(s);
    char *mis = malloc(64);
    memcpy(mis + 3, a, alen);
    ((struct sockaddr *)(mis + 3))->sa_family = 0x7777;
    s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s family=unknown", call);
    R(nm, syscall(nr, s, mis + 3, alen));
    close(s);
    memcpy(mis + 3, a, alen);
    s = socket(domain, type | SOCK_NONBLOCK, 0);
    snprintf(nm, sizeof nm, "%s addr=misaligned", call);
    R(nm, syscall(nr, s, mis + 3, alen));
    free(mis);
    close(s);
}

static void sockname_cases(const char *call, long nr, int s) {
    struct sockaddr_storage a;
    socklen_t l;
    char nm[160];
    FOR_FDS(call, syscall(nr, F, &a, &l));
    for (int i = 0; i < NBUFS; i++) {
        l = sizeof a;
        snprintf(nm, sizeof nm, "%s addr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, bufs[i].p, &l));
        snprintf(nm, sizeof nm, "%s lenptr=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, &a, bufs[i].p));
    }
    int lens[] = {0, 1, -1, INT_MAX};
    const char *ll[] = {"0", "1", "minus1", "int_max"};
    for (int i = 0; i < 4; i++) {
        l = lens[i];
        snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
        R(nm, syscall(nr, s, &a, &l));
        printf("%s len=%s out_len: %d\n", call, ll[i], (int)l);
    }
    l = 64;
    snprintf(nm, sizeof nm, "%s addr=straddling_unmapped", call);
    R(nm, syscall(nr, s, edge, &l));
}

static void sockopt_cases(const char *call, long nr, int s, int level, int opt) {
    char nm[160];
    int v = 1;
    socklen_t vl = sizeof v;
    int get = nr == SYS_getsockopt;
    FOR_FDS(call, syscall(nr, F, level, opt, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s level=all_bits", call);
    R(nm, syscall(nr, s, ALL_BITS, opt, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s opt=all_bits", call);
    R(nm, syscall(nr, s, level, ALL_BITS, &v, get ? (long)&vl : (long)sizeof v));
    snprintf(nm, sizeof nm, "%s level_high_bits", call);
    vl = sizeof v;
    R(nm, syscall(nr, s, HIGH_BITS | (unsigned)level, opt, &v, get ? (long)&vl : (long)sizeof v));
    for (int i = 0; i < NBUFS; i++) {
        vl = sizeof v;
        snprintf(nm, sizeof nm, "%s val=%s", call, bufs[i].label);
        R(nm, syscall(nr, s, level, opt, bufs[i].p, get ? (long)&vl : (long)sizeof v));
    }
    if (get) {
        for (int i = 0; i < NBUFS; i++) {
            snprintf(nm, sizeof nm, "%s lenptr=%s", call, bufs[i].label);
            R(nm, syscall(nr, s, level, opt, &v, bufs[i].p));
        }
        int lens[] = {0, 1, -1, INT_MAX};
        const char *ll[] = {"0", "1", "minus1", "int_max"};
        for (int i = 0; i < 4; i++) {
            vl = lens[i];
            snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
            R(nm, syscall(nr, s, level, opt, &v, &vl));
            printf("%s len=%s out_len: %d\n", call, ll[i], (int)vl);
        }
    } else {
        long lens[] = {0, 1, -1L, INT_MAX, HIGH_BITS | 4};
        const char *ll[] = {"0", "1", "minus1", "int_max", "high_bits_4"};
        for (int i = 0; i < 5; i++) {
            snprintf(nm, sizeof nm, "%s len=%s", call, ll[i]);
            R(nm, syscall(nr, s, level, opt, &v, lens[i]));
        }
    }
}

static void t_socket(void) {
    RFD("socket domain=all_bits", syscall(SYS_socket, ALL_BITS, SOCK_STREAM, 0));
    RFD("socket domain=high_bits_inet", syscall(SYS_socket, HIGH_BITS | AF_INET, SOCK_STREAM, 0));
    RFD("socket type=all_bits", syscall(SYS_socket, AF_INET, ALL_BITS, 0));
    RFD("socket type=unknown", syscall(SYS_socket, AF_INET, 0xe, 0));
    RFD("socket type=unknown_flag", syscall(SYS_socket, AF_INET, SOCK_STREAM | 0x100, 0));
    RFD("socket protocol=all_bits", syscall(SYS_socket, AF_INET, SOCK_STREAM, ALL_BITS));
    RFD("socket protocol=udp_on_stream", syscall(SYS_socket, AF_INET, SOCK_STREAM, IPPROTO_UDP));
    RFD("socket protocol=255", syscall(SYS_socket, AF_INET, SOCK_DGRAM, 255));
    RFD("socket inet6 type=unknown", syscall(SYS_socket, AF_INET6, 0xe, 0));
    RFD("socket unix type=unknown", syscall(SYS_socket, AF_UNIX, 0xe, 0));
    RFD("socket unix type=raw", syscall(SYS_socket, AF_UNIX, SOCK_RAW, 0));
    RFD("socket domain=unknown", syscall(SYS_socket, 4242, SOCK_STREAM, 0));
}

static void t_bind_connect(void) {
    struct sockaddr_in a = loopback4(0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    addr_cases("bind tcp", SYS_bind, AF_INET, SOCK_STREAM, &a, sizeof a, &a6, sizeof a6);
    addr_cases("bind udp", SYS_bind, AF_INET, SOCK_DGRAM, &a, sizeof a, &a6, sizeof a6);
    addr_cases("bind tcp6", SYS_bind, AF_INET6, SOCK_STREAM, &a6, sizeof a6, &a, sizeof a);
    addr_cases("bind udp6", SYS_bind, AF_INET6, SOCK_DGRAM, &a6, sizeof a6, &a, sizeof a);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, sizeof a);
    int closed_port = port_of(l);
    close(l);
    struct sockaddr_in c = loopback4(closed_port);
    struct sockaddr_in6 c6 = a6;
    c6.sin6_port = c.sin_port;
    addr_cases("connect tcp", SYS_connect, AF_INET, SOCK_STREAM, &c, sizeof c, &c6, sizeof c6);
    addr_cases("connect udp", SYS_connect, AF_INET, SOCK_DGRAM, &c, sizeof c, &c6, sizeof c6);
    addr_cases("connect tcp6", SYS_connect, AF_INET6, SOCK_STREAM, &c6, sizeof c6, &c, sizeof c);
    addr_cases("connect udp6", SYS_connect, AF_INET6, SOCK_DGRAM, &c6, sizeof c6, &c, sizeof c);
    /* An IPv4 address on a UDP IPv6 socket: connected (v4-mapped). */
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    bind(rx, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in rxa = loopback4(port_of(rx));
    int u6 = socket(AF_INET6, SOCK_DGRAM, 0);
    R("connect udp6 v4_address", syscall(SYS_connect, u6, &rxa, sizeof rxa));
    R("connect udp6 v4_address send", send(u6, "xy", 2, 0));
    char got[8];
    R("connect udp6 v4_address received", recv(rx, got, sizeof got, 0));
    struct sockaddr_in6 pa;
    memset(&pa, 0, sizeof pa);
    socklen_t pl = sizeof pa;
    R("connect udp6 v4_address getpeername", syscall(SYS_getpeername, u6, &pa, &pl));
    printf("connect udp6 v4_address peer: family %d mapped %d len %d\n", pa.sin6_family,
           IN6_IS_ADDR_V4MAPPED(&pa.sin6_addr), (int)pl);
    int one = 1;
    int v6o = socket(AF_INET6, SOCK_DGRAM, 0);
    setsockopt(v6o, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    R("connect udp6 v6only v4_address", syscall(SYS_connect, v6o, &rxa, sizeof rxa));
    close(v6o), close(u6), close(rx);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    R("bind twice", syscall(SYS_bind, s, &a, sizeof a));
    close(s);
    /* Unix names: bind is serviced for them too. */
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    memset(u.sun_path, 'u', sizeof u.sun_path); /* no NUL */
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("bind unix path=no_nul", syscall(SYS_bind, s, &u, sizeof u));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("bind unix len=too_big", syscall(SYS_bind, s, &u, sizeof u + 1));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    strcpy(u.sun_path, "nosuchdir/sock");
    R("bind unix path=missing_dir", syscall(SYS_bind, s, &u, sizeof u));
    R("connect unix path=missing", syscall(SYS_connect, s, &u, sizeof u));
    close(s);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    R("connect unix len=family_only", syscall(SYS_connect, s, &u, 2));
    R("bind unix len=family_only_autobind", syscall(SYS_bind, s, &u, 2));
    close(s);
}

static void t_names_opts(void) {
    struct sockaddr_in a = loopback4(0);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    bind(t, (struct sockaddr *)&a, sizeof a);
    sockname_cases("getsockname", SYS_getsockname, t);
    sockname_cases("getpeername", SYS_getpeername, t);
    int lst = socket(AF_INET, SOCK_STREAM, 0);
    bind(lst, (struct sockaddr *)&a, sizeof a);
    listen(lst, 4);
    struct sockaddr_in to = loopback4(port_of(lst));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&to, sizeof to);
    sockname_cases("getpeername connected", SYS_getpeername, c);
    sockopt_cases("setsockopt tcp_nodelay", SYS_setsockopt, t, IPPROTO_TCP, TCP_NODELAY);
    sockopt_cases("setsockopt so_rcvbuf", SYS_setsockopt, t, SOL_SOCKET, SO_RCVBUF);
    sockopt_cases("setsockopt ip_ttl", SYS_setsockopt, t, IPPROTO_IP, IP_TTL);
    sockopt_cases("getsockopt tcp_nodelay", SYS_getsockopt, t, IPPROTO_TCP, TCP_NODELAY);
    sockopt_cases("getsockopt so_type", SYS_getsockopt, t, SOL_SOCKET, SO_TYPE);
    sockopt_cases("getsockopt so_error", SYS_getsockopt, t, SOL_SOCKET, SO_ERROR);
    sockopt_cases("getsockopt ip_ttl", SYS_getsockopt, t, IPPROTO_IP, IP_TTL);
    int t6 = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    sockopt_cases("setsockopt ipv6_v6only", SYS_setsockopt, t6, IPPROTO_IPV6, IPV6_V6ONLY);
    sockopt_cases("getsockopt ipv6_v6only", SYS_getsockopt, t6, IPPROTO_IPV6, IPV6_V6ONLY);
    sockopt_cases("setsockopt ipv6_unicast_hops", SYS_setsockopt, t6, IPPROTO_IPV6, IPV6_UNICAST_HOPS);
    sockopt_cases("getsockopt ipv6_unicast_hops", SYS_getsockopt, t6, IPPROTO_IPV6, IPV6_UNICAST_HOPS);
    sockopt_cases("getsockopt udp6 ip_ttl", SYS_getsockopt, t6, IPPROTO_IP, IP_TTL);
    bind(t6, (struct sockaddr *)&a6, sizeof a6);
    sockname_cases("getsockname udp6", SYS_getsockname, t6);
    sockname_cases("getpeername udp6", SYS_getpeername, t6);
    close(t6);
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    sockopt_cases("setsockopt unix so_rcvbuf", SYS_setsockopt, u, SOL_SOCKET, SO_RCVBUF);
    sockopt_cases("getsockopt unix so_type", SYS_getsockopt, u, SOL_SOCKET, SO_TYPE);
    char big[64];
    socklen_t bl = sizeof big;
    R("getsockopt tcp_congestion", syscall(SYS_getsockopt, t, IPPROTO_TCP, TCP_CONGESTION, big, &bl));
    R("setsockopt tcp_congestion name=no_nul_to_unmapped",
      syscall(SYS_setsockopt, t, IPPROTO_TCP, TCP_CONGESTION, edge, 64));
    R("setsockopt so_bindtodevice name=no_nul_to_unmapped",
      syscall(SYS_setsockopt, t, SOL_SOCKET, SO_BINDTODEVICE, edge, 64));
    R("setsockopt ip_add_membership val=short",
      syscall(SYS_setsockopt, t, IPPROTO_IP, IP_ADD_MEMBERSHIP, big, 2));
    close(u), close(t), close(c), close(lst);
}

static void t_accept_listen(void) {
    struct sockaddr_in a = loopback4(0), peer;
    socklen_t l;
    char nm[160];
    int lst = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    bind(lst, (struct sockaddr *)&a, sizeof a);
    listen(lst, 8);
    struct sockaddr_in to = loopback4(port_of(lst));
    l = sizeof peer;
    FOR_FDS("accept", syscall(SYS_accept, F, &peer, &l));
    FOR_FDS("accept4", syscall(SYS_accept4, F, &peer, &l, 0));
    l = sizeof peer;
    RFD("accept nothing_pending", syscall(SYS_accept, lst, &peer, &l));
    for (int i = 0; i < NBUFS; i++) {
        snprintf(nm, sizeof nm, "accept nothing_pending lenptr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, &peer, bufs[i].p));
        snprintf(nm, sizeof nm, "accept4 nothing_pending addr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept4, lst, bufs[i].p, &l, SOCK_CLOEXEC));
    }
    int notl = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    RFD("accept not_listening", syscall(SYS_accept, notl, &peer, &l));
    close(notl);
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    RFD("accept udp", syscall(SYS_accept, udp, &peer, &l));
    RFD("accept4 flags=all_bits", syscall(SYS_accept4, lst, &peer, &l, ALL_BITS));
    RFD("accept4 flags=unknown", syscall(SYS_accept4, lst, &peer, &l, 0x40));
    /* With a connection pending: hostile address buffers. */
    for (int i = 1; i < NBUFS; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        connect(c, (struct sockaddr *)&to, sizeof to);
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending addr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, bufs[i].p, &l));
        snprintf(nm, sizeof nm, "accept4 pending lenptr=%s", bufs[i].label);
        RFD(nm, syscall(SYS_accept4, lst, &peer, bufs[i].p, SOCK_CLOEXEC));
        /* Whatever is still queued is drained by the next case. */
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending drain_after %s", bufs[i].label);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        close(c);
    }
    int lens[] = {0, -1, INT_MAX};
    const char *ll[] = {"0", "minus1", "int_max"};
    for (int i = 0; i < 3; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        connect(c, (struct sockaddr *)&to, sizeof to);
        l = lens[i];
        snprintf(nm, sizeof nm, "accept pending len=%s", ll[i]);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        l = sizeof peer;
        snprintf(nm, sizeof nm, "accept pending len=%s drain", ll[i]);
        RFD(nm, syscall(SYS_accept, lst, &peer, &l));
        close(c);
    }
    FOR_FDS("listen", syscall(SYS_listen, F, 4));
    R("listen udp", syscall(SYS_listen, udp, 4));
    int t = socket(AF_INET, SOCK_STREAM, 0);
    R("listen backlog=minus1", syscall(SYS_listen, t, -1));
    R("listen backlog=huge", syscall(SYS_listen, t, ALL_BITS >> 1));
    R("listen again", syscall(SYS_listen, t, 4));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&to, sizeof to);
    R("listen connected", syscall(SYS_listen, c, 4));
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    R("listen unix unbound", syscall(SYS_listen, u, 4));
    int ud = socket(AF_UNIX, SOCK_DGRAM, 0);
    R("listen unix dgram", syscall(SYS_listen, ud, 4));
    l = sizeof peer;
    RFD("accept drain_last", syscall(SYS_accept, lst, &peer, &l));
    close(u), close(ud), close(c), close(t), close(udp), close(lst);
}
