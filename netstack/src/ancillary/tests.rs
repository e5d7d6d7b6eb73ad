use super::*;

fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
    let mut m = (cmsg_len(data.len()) as u64).to_ne_bytes().to_vec();
    m.extend_from_slice(&level.to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(data);
    m.resize(cmsg_space(data.len()), 0);
    m
}

#[test]
fn layout_fits_and_truncates_like_put_cmsg() {
    let msgs = vec![
        (SOL_IPV6, libc::IPV6_HOPLIMIT, 2i32.to_ne_bytes().to_vec()),
        (SOL_IPV6, libc::IPV6_TCLASS, 0i32.to_ne_bytes().to_vec()),
    ];
    let (all, cut) = layout(&msgs, 64);
    assert!(!cut);
    assert_eq!(all.len(), 2 * cmsg_space(4));
    assert_eq!(
        all[..cmsg_space(4)],
        cmsg(SOL_IPV6, libc::IPV6_HOPLIMIT, &2i32.to_ne_bytes())
    );
    // Room for the first only, and a header's worth less one byte.
    let (one, cut) = layout(&msgs, cmsg_space(4) + HDR - 1);
    assert!(cut);
    assert_eq!(one.len(), cmsg_space(4));
    // The first cut inside its data: cmsg_len is what was written.
    let (part, cut) = layout(&msgs, cmsg_len(4) - 1);
    assert!(cut);
    assert_eq!(part.len(), cmsg_len(4) - 1);
    assert_eq!(part[..8], ((cmsg_len(4) - 1) as u64).to_ne_bytes());
    let (none, cut) = layout(&msgs, HDR - 1);
    assert!(cut && none.is_empty());
    assert_eq!(layout(&[], 0), (Vec::new(), false));
}

#[test]
fn sent_messages_set_the_stamp() {
    let base = Stamp::default();
    let mut c = cmsg(SOL_IPV6, libc::IPV6_HOPLIMIT, &2i32.to_ne_bytes());
    c.extend(cmsg(SOL_IPV6, libc::IPV6_TCLASS, &(-1i32).to_ne_bytes()));
    let s = parse_sent(libc::AF_INET6, &c, base).unwrap();
    assert_eq!((s.hops, s.class), (2, 0));
    let bad = cmsg(SOL_IPV6, libc::IPV6_HOPLIMIT, &256i32.to_ne_bytes());
    assert_eq!(parse_sent(libc::AF_INET6, &bad, base), Err(Errno::EINVAL));
    let short = cmsg(SOL_IPV6, libc::IPV6_HOPLIMIT, &[1, 0]);
    assert_eq!(parse_sent(libc::AF_INET6, &short, base), Err(Errno::EINVAL));
    let mut lying = cmsg(SOL_IPV6, libc::IPV6_HOPLIMIT, &2i32.to_ne_bytes());
    lying[..8].copy_from_slice(&(u64::MAX).to_ne_bytes());
    assert_eq!(parse_sent(libc::AF_INET6, &lying, base), Err(Errno::EINVAL));
    let ttl = cmsg(SOL_IP, libc::IP_TTL, &9i32.to_ne_bytes());
    assert_eq!(parse_sent(libc::AF_INET, &ttl, base).unwrap().hops, 9);
    let tos = cmsg(SOL_IP, libc::IP_TOS, &[0x10]);
    assert_eq!(parse_sent(libc::AF_INET, &tos, base).unwrap().class, 0x10);
    let mut info = Ipv6Addr::LOCALHOST.octets().to_vec();
    info.extend_from_slice(&0i32.to_ne_bytes());
    let pi = cmsg(SOL_IPV6, libc::IPV6_PKTINFO, &info);
    assert_eq!(parse_sent(libc::AF_INET6, &pi, base), Ok(base));
    // Fewer bytes than a header: no messages.
    assert_eq!(parse_sent(libc::AF_INET6, &[0; 8], base), Ok(base));
}

#[test]
fn unix_messages_are_found_and_accepted() {
    let rights = cmsg(libc::SOL_SOCKET, libc::SCM_RIGHTS, &3i32.to_ne_bytes());
    let mut both = cmsg(SOL_IP, libc::IP_TTL, &9i32.to_ne_bytes());
    both.extend(rights.clone());
    assert_eq!(carries_unix(&both), Ok(true));
    assert_eq!(
        parse_sent(libc::AF_INET, &both, Stamp::default())
            .unwrap()
            .hops,
        9
    );
    let creds = cmsg(libc::SOL_SOCKET, libc::SCM_CREDENTIALS, &[0; 12]);
    assert_eq!(carries_unix(&creds), Ok(true));
    let ttl = cmsg(SOL_IP, libc::IP_TTL, &9i32.to_ne_bytes());
    assert_eq!(carries_unix(&ttl), Ok(false));
    assert_eq!(carries_unix(&[]), Ok(false));
    let mut lying = rights;
    lying[..8].copy_from_slice(&99u64.to_ne_bytes());
    assert_eq!(carries_unix(&lying), Err(Errno::EINVAL));
    let unknown = cmsg(libc::SOL_SOCKET, 99, &0i32.to_ne_bytes());
    assert_eq!(
        parse_sent(libc::AF_INET, &unknown, Stamp::default()),
        Err(Errno::EINVAL)
    );
}

#[test]
fn stamps_match_sender_and_payload_oldest_first() {
    let st = Stamps::default();
    let a = Stamp { hops: 2, class: 0 };
    let b = Stamp { hops: 3, class: 4 };
    st.record(b"x", fingerprint(b"hi"), a);
    st.record(b"x", fingerprint(b"hi"), b);
    assert_eq!(st.take(b"y", fingerprint(b"hi"), false), Stamp::default());
    assert_eq!(st.take(b"x", fingerprint(b"hi"), true), a);
    assert_eq!(st.take(b"x", fingerprint(b"hi"), false), a);
    assert_eq!(st.take(b"x", fingerprint(b"hi"), false), b);
    assert_eq!(st.take(b"x", fingerprint(b"hi"), false), Stamp::default());
    for i in 0..(MAX_STAMPS + 10) {
        st.record(b"z", i as u64, a);
    }
    assert_eq!(st.queue.lock().len(), MAX_STAMPS);
}

#[test]
fn messages_in_kernel_order() {
    let want = Wanted {
        pktinfo: true,
        hops: true,
        class: true,
    };
    let dst = IpAddr::from([127, 0, 0, 1]);
    let v4 = messages(libc::AF_INET, want, dst, Stamp::default());
    let kinds: Vec<i32> = v4.iter().map(|m| m.1).collect();
    assert_eq!(kinds, [libc::IP_PKTINFO, libc::IP_TTL, libc::IP_TOS]);
    assert_eq!(v4[0].2.len(), 12);
    assert_eq!(v4[2].2, [0]);
    let v6 = messages(libc::AF_INET6, want, dst, Stamp::default());
    assert_eq!(v6[0].2.len(), 20);
    assert_eq!(v6[0].2[..16], Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets());
    assert_eq!(v6[1].2, 64i32.to_ne_bytes());
}

#[test]
fn destination_of_wildcard_receivers_is_the_senders() {
    let any: SocketAddr = "0.0.0.0:5".parse().unwrap();
    let exact: SocketAddr = "127.0.0.2:5".parse().unwrap();
    let from: SocketAddr = "127.0.0.9:7".parse().unwrap();
    assert_eq!(destination(exact, Some(from)), exact.ip());
    assert_eq!(destination(any, Some(from)), from.ip());
}

use std::net::Ipv4Addr;
