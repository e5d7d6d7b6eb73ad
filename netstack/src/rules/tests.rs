//! Tests of rules.rs: parsing, port ranges, wildcards, name rules through
//! `Resolved`, and every special range in every form.

use super::*;

fn list(rules: &[&str]) -> AllowList {
    AllowList::new(rules.iter().map(|r| Rule::parse(r).unwrap()).collect())
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn tcp(l: &AllowList, dst: &str) -> Result<(), Denied> {
    l.verdict(sa(dst), Proto::Tcp, &Resolved::new())
}

#[test]
fn rule_forms() {
    let l = list(&[
        "203.0.113.0/24:8000-8100",
        "198.51.100.7:443",
        "[2001:db8::/32]:443",
        "192.0.2.1",
        "2001:db8:1::1",
        "[2001:db8:2::/48]",
    ]);
    assert!(tcp(&l, "203.0.113.9:8000").is_ok());
    assert!(tcp(&l, "203.0.113.9:8100").is_ok());
    assert!(tcp(&l, "203.0.113.9:8101").is_err());
    assert!(tcp(&l, "203.0.113.9:7999").is_err());
    assert!(tcp(&l, "198.51.100.7:443").is_ok());
    assert!(tcp(&l, "[::ffff:198.51.100.7]:443").is_ok());
    assert!(tcp(&l, "198.51.100.7:80").is_err());
    assert!(tcp(&l, "198.51.100.8:443").is_err());
    assert!(tcp(&l, "[2001:db8:ffff::5]:443").is_ok());
    assert!(tcp(&l, "[2001:db8:ffff::5]:80").is_err());
    assert!(tcp(&l, "192.0.2.1:1").is_ok());
    assert!(tcp(&l, "192.0.2.1:65535").is_ok());
    assert!(tcp(&l, "[2001:db8:1::1]:22").is_ok());
    assert!(tcp(&l, "[2001:db8:2:ff::1]:22").is_ok());
    assert!(tcp(&l, "[2001:db9::1]:443").is_err());
    assert_eq!(
        tcp(&l, "203.0.113.9:80").unwrap_err().reason,
        "no rule allows tcp 203.0.113.9:80"
    );
    let d = l
        .verdict(sa("[2001:db9::1]:53"), Proto::Udp, &Resolved::new())
        .unwrap_err();
    assert_eq!(d.reason, "no rule allows udp [2001:db9::1]:53");
    assert_eq!(d.proto, Proto::Udp);
}

#[test]
fn no_rules_no_egress() {
    let l = AllowList::default();
    assert!(tcp(&l, "8.8.8.8:53").is_err());
    assert!(!l.has_name_rules());
    assert!(!l.allows_name("pkg.example.net"));
}

#[test]
fn bad_rules_name_themselves() {
    for (rule, want) in [
        ("", "empty"),
        ("10.0.0.1/8", "did you mean 10.0.0.0/8?"),
        ("1.2.3.4:0", "from 1 to 65535"),
        ("1.2.3.4:70000", "from 1 to 65535"),
        ("1.2.3.4:+5", "from 1 to 65535"),
        ("1.2.3.4:", "from 1 to 65535"),
        ("1.2.3.4:90-80", "runs backwards"),
        ("1.2.3.4:80-", "from 1 to 65535"),
        ("1.2.3.256", "neither an IP address nor a DNS name"),
        ("[2001:db8::1", "closing ']'"),
        ("[2001:db8::1]443", "after ']'"),
        ("[pkg.example.net]:443", "not an IPv6 address"),
        ("2001:db8::/129", "from 0 to 128"),
        ("*", "may only stand first"),
        ("[10.0.0.0/8]", "brackets are for IPv6"),
        ("*.", "may only stand first"),
        ("*..", "expected a network"),
        ("a.*.org", "may only stand first"),
        ("-bad.org", "DNS label"),
        ("bad..org", "DNS label"),
        ("exa mple.org", "DNS label"),
        ("pkg.example.net:https", "from 1 to 65535"),
    ] {
        let e = Rule::parse(rule).unwrap_err();
        assert!(
            e.starts_with(&format!("rule {rule:?}: ")) && e.contains(want),
            "{rule:?}: {e}"
        );
    }
    let long = format!("{}.org", "a.".repeat(130));
    assert!(Rule::parse(&long).is_err());
}

#[test]
fn wildcards_match_subdomains_not_the_apex() {
    let l = list(&["*.example.org", "pkg.example.net:443", "Files.Example.COM."]);
    assert!(l.has_name_rules());
    assert!(l.allows_name("a.example.org"));
    assert!(l.allows_name("a.b.example.org"));
    assert!(!l.allows_name("example.org"));
    assert!(!l.allows_name("badexample.org"));
    assert!(!l.allows_name("example.org.evil.com"));
    assert!(l.allows_name("pkg.example.net"));
    assert!(!l.allows_name("www.pkg.example.net"));
    assert!(l.allows_name("files.example.com"));
}

#[test]
fn name_rules_allow_only_what_the_stub_resolved() {
    let l = list(&["pkg.example.net:443", "*.example.org"]);
    let resolved = Resolved::new();
    let dst = sa("203.0.113.200:443");
    assert!(l.verdict(dst, Proto::Tcp, &resolved).is_err());
    resolved.record("pkg.example.net", &[dst.ip()]);
    assert!(l.verdict(dst, Proto::Tcp, &resolved).is_ok());
    assert!(l
        .verdict(sa("203.0.113.200:80"), Proto::Tcp, &resolved)
        .is_err());
    let v6: SocketAddr = sa("[2001:db8::223]:443");
    resolved.record("cdn.example.org", &[v6.ip()]);
    assert!(l.verdict(v6, Proto::Tcp, &resolved).is_ok());
    assert!(l
        .verdict(sa("[2001:db8::223]:8080"), Proto::Udp, &resolved)
        .is_ok());
    // A name the rules do not allow, recorded anyway, allows nothing.
    resolved.record("evil.com", &["203.0.113.66".parse().unwrap()]);
    assert!(l
        .verdict(sa("203.0.113.66:443"), Proto::Tcp, &resolved)
        .is_err());
}

#[test]
fn names_never_unlock_special_ranges() {
    let l = list(&["internal.example.org"]);
    let resolved = Resolved::new();
    resolved.record("internal.example.org", &["10.1.2.3".parse().unwrap()]);
    let d = l
        .verdict(sa("10.1.2.3:80"), Proto::Tcp, &resolved)
        .unwrap_err();
    assert_eq!(
        d.reason,
        "10.1.2.3 is private (RFC 1918) and no rule names it"
    );
}

/// One address inside each special range, and the rule that names it.
const SPECIAL: &[(&str, &str)] = &[
    ("0.1.2.3", "0.0.0.0/8"),
    ("10.9.8.7", "10.0.0.0/8"),
    ("100.64.1.1", "100.64.0.0/10"),
    ("100.127.255.254", "100.64.0.0/10"),
    ("127.0.0.1", "127.0.0.0/8"),
    ("127.255.0.1", "127.0.0.0/8"),
    ("169.254.169.254", "169.254.169.254"),
    ("169.254.0.1", "169.254.0.0/16"),
    ("172.16.0.1", "172.16.0.0/12"),
    ("172.31.255.255", "172.16.0.0/12"),
    ("192.168.1.1", "192.168.0.0/16"),
    ("224.0.0.251", "224.0.0.0/4"),
    ("239.255.255.250", "239.255.255.250"),
    ("240.0.0.1", "240.0.0.0/4"),
    ("255.255.255.255", "255.255.255.255"),
];

const SPECIAL_V6: &[(&str, &str)] = &[
    ("::", "[::]"),
    ("::1", "::1"),
    ("fc00::1", "fc00::/7"),
    ("fd12:3456::1", "[fd00::/8]"),
    ("fe80::1", "fe80::/10"),
    ("febf::1", "fe80::/10"),
    ("ff02::1", "ff00::/8"),
];

fn v4_forms(v4: &str) -> Vec<(String, String)> {
    let a: std::net::Ipv4Addr = v4.parse().unwrap();
    let bits = u32::from(a);
    let compat = std::net::Ipv6Addr::from(u128::from(bits));
    let nat64 = std::net::Ipv6Addr::from((0x64_ff9b_u128 << 96) | u128::from(bits));
    vec![
        ("plain".into(), v4.to_string()),
        ("mapped".into(), a.to_ipv6_mapped().to_string()),
        ("compatible".into(), compat.to_string()),
        ("nat64".into(), nat64.to_string()),
    ]
}

#[test]
fn special_ranges_denied_in_every_form_even_under_allow_all() {
    let l = list(&["0.0.0.0/0", "::/0"]);
    let mut all: Vec<(String, String)> = SPECIAL.iter().flat_map(|(a, _)| v4_forms(a)).collect();
    all.extend(SPECIAL_V6.iter().map(|(a, _)| ("v6".into(), a.to_string())));
    for (form, ip) in all {
        let dst = SocketAddr::new(ip.parse().unwrap(), 443);
        let e = l.verdict(dst, Proto::Tcp, &Resolved::new());
        let reason = e.as_ref().map_err(|d| d.reason.clone()).unwrap_err();
        assert!(
            reason.ends_with("and no rule names it"),
            "{form} {ip}: {reason}"
        );
    }
    // The world is allowed.
    assert!(tcp(&l, "203.0.113.9:443").is_ok());
    assert!(tcp(&l, "[2001:db8::1]:443").is_ok());
    assert!(tcp(&l, "[::ffff:8.8.8.8]:53").is_ok());
    assert!(tcp(&l, "[64:ff9b::808:808]:53").is_ok());
    assert_eq!(
        tcp(&l, "169.254.169.254:80").unwrap_err().reason,
        "169.254.169.254 is link-local (metadata) and no rule names it"
    );
}

#[test]
fn explicit_rules_unlock_special_ranges() {
    for (ip, rule) in SPECIAL.iter().chain(SPECIAL_V6) {
        let l = list(&[rule]);
        assert!(
            tcp(&l, &SocketAddr::new(ip.parse().unwrap(), 80).to_string()).is_ok(),
            "{rule} -> {ip}"
        );
    }
    // IPv4-mapped destinations are the IPv4 address: the IPv4 rule names them.
    assert!(tcp(&list(&["10.0.0.0/8"]), "[::ffff:10.1.1.1]:80").is_ok());
    assert!(tcp(&list(&["[::ffff:10.0.0.0/104]"]), "10.1.1.1:80").is_ok());
    // Other embeddings need a rule in their own form.
    assert!(tcp(&list(&["10.0.0.0/8"]), "[::10.1.1.1]:80").is_err());
    assert!(tcp(&list(&["[::10.0.0.0/104]"]), "[::10.1.1.1]:80").is_ok());
    assert!(tcp(
        &list(&["[64:ff9b::a9fe:a9fe]"]),
        "[64:ff9b::169.254.169.254]:80"
    )
    .is_ok());
    // A rule wider than the range does not name it.
    assert!(tcp(&list(&["8.0.0.0/5"]), "10.1.1.1:80").is_err());
    assert!(tcp(&list(&["240.0.0.0/4"]), "255.255.255.255:80").is_err());
    assert!(tcp(&list(&["::/0"]), "[::1]:80").is_err());
    // Naming a range does not lift the port restriction.
    assert!(tcp(&list(&["10.0.0.0/8:5432"]), "10.1.1.1:80").is_err());
}

#[test]
fn resolved_is_bounded() {
    let r = Resolved::new();
    for i in 0..(MAX_RESOLVED as u32 + 10) {
        r.record("x.org", &[IpAddr::V4(i.into())]);
    }
    assert_eq!(r.names_of(IpAddr::V4(0.into())), vec!["x.org".to_string()]);
    let past = IpAddr::V4((MAX_RESOLVED as u32 + 5).into());
    assert!(r.names_of(past).is_empty());
}

mod random {
    use super::*;
    use proptest::prelude::*;

    fn any_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<u32>().prop_map(|a| IpAddr::V4(a.into())),
            any::<u128>().prop_map(|a| IpAddr::V6(a.into())),
            // The embeddings, so special ranges are hit often.
            any::<u32>().prop_map(|a| IpAddr::V6(u128::from(a).into())),
            any::<u32>().prop_map(|a| IpAddr::V6(((0xffff_u128 << 32) | u128::from(a)).into())),
            any::<u32>().prop_map(|a| IpAddr::V6(((0x64_ff9b_u128 << 96) | u128::from(a)).into())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn parsing_never_panics(text in "\\PC{0,40}", near in "[0-9a-f:./\\[\\]*-]{0,40}") {
            let _ = Rule::parse(&text);
            let _ = Rule::parse(&near);
        }

        /// Under allow-everything rules, exactly the special addresses are refused.
        #[test]
        fn allow_all_refuses_exactly_the_special(ip in any_ip(), port in 1u16..) {
            let l = list(&["0.0.0.0/0", "::/0"]);
            let verdict = l.verdict(SocketAddr::new(ip, port), Proto::Udp, &Resolved::new());
            prop_assert_eq!(verdict.is_ok(), special::most_specific(ip).is_none());
        }

        /// An open list (a container's egress) allows every address but
        /// loopback, special ranges included; loopback only as its rules
        /// name it.
        #[test]
        fn an_open_list_refuses_only_loopback(ip in any_ip(), port in 1u16..) {
            let l = AllowList::open(vec![Rule::parse("127.0.0.11:53").unwrap()]);
            let verdict = l.verdict(SocketAddr::new(ip, port), Proto::Tcp, &Resolved::new());
            let named = canonical_ip(ip) == IpAddr::from([127, 0, 0, 11]) && port == 53;
            prop_assert_eq!(verdict.is_ok(), !canonical_ip(ip).is_loopback() || named);
        }

        /// A host rule for an address allows it, special or not, and no other port.
        #[test]
        fn a_host_rule_names_its_address(ip in any_ip(), port in 1u16..) {
            let rule = Rule::parse(&SocketAddr::new(ip, port).to_string()).unwrap();
            let l = AllowList::new(vec![rule]);
            prop_assert!(l.verdict(SocketAddr::new(ip, port), Proto::Tcp, &Resolved::new()).is_ok());
            prop_assert!(l.verdict(SocketAddr::new(ip, port ^ 1), Proto::Tcp, &Resolved::new()).is_err(), "another port");
        }
    }
}
