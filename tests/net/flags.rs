//! The network flags on the command line: bad `--allow-net` and
//! `--publish` values exit 125 with one line naming the value, `--help`
//! lists both, and a name rule makes the sandbox's /etc/resolv.conf name
//! the DNS stub (without one it names no server).

use crate::common;
use common::*;

fn sup(args: &[&str]) -> Out {
    Run::new(&["unused"]).supervisor_raw(args)
}

#[test]
fn bad_network_flags_exit_125_with_one_line() {
    let cases: &[(&str, &str)] = &[
        ("--allow-net", "10.0.0.1/8"),
        ("--allow-net", "1.2.3.4:0"),
        ("--allow-net", "1.2.3.4:90-80"),
        ("--allow-net", "a.*.org"),
        ("--allow-net", "[2001:db8::1"),
        ("--allow-net", "1.2.3.256"),
        ("--allow-net", ""),
        ("--publish", "8080"),
        ("--publish", "0:80"),
        ("--publish", "8080:80/sctp"),
        ("--publish", "localhost:8080:80"),
        ("--publish", "::1:8080:80"),
    ];
    let mut bad = Vec::new();
    for (flag, value) in cases {
        let out = sup(&["run", flag, value, "--", "/bin/true"]);
        let lines: Vec<&str> = out.stderr.lines().collect();
        let named = lines
            .first()
            .is_some_and(|l| l.contains(&format!("{value:?}")));
        if out.code != Some(125)
            || lines.len() != 1
            || !lines[0].starts_with("supervisor: ")
            || !named
        {
            bad.push(format!(
                "{flag} {value:?}: expected 125 and one \"supervisor: \" line naming it, got\n{}",
                out.dump()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[test]
fn help_lists_the_network_flags() {
    let out = sup(&["run", "--help"]);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    for text in [
        "--allow-net <RULE>",
        "--publish <[HOSTIP:]HOSTPORT:GUESTPORT[/udp]>",
        "*.example.org",
    ] {
        assert!(
            out.stdout.contains(text),
            "`run --help` lacks {text}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn good_network_flags_are_accepted() {
    // The flags act: the published ports are bound on the host, so they
    // must be free (this host may have no ::1; the IPv6 spelling is
    // covered by publish's unit tests).
    // A port found free may be taken by a parallel test before the
    // supervisor binds it: then try other ports, a few times.
    for attempt in 1.. {
        let out = publish_two_free_ports();
        if attempt < 5 && out.code == Some(125) && out.stderr.contains("is in use") {
            continue;
        }
        assert_eq!(out.code, Some(0), "{}", out.dump());
        break;
    }
}

/// `supervisor run` with egress rules and two `--publish` of ports that
/// were free a moment ago.
fn publish_two_free_ports() -> Out {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let tcp_spec = format!("127.0.0.1:{}:80", tcp.local_addr().expect("addr").port());
    let udp_spec = format!(
        "127.0.0.1:{}:53/udp",
        udp.local_addr().expect("addr").port()
    );
    drop((tcp, udp));
    Run::new(&["/bin/true"])
        .sup(&[
            "--allow-net",
            "203.0.113.0/24:8000-8100",
            "--allow-net",
            "[2001:db8::/32]:443",
            "--publish",
            &tcp_spec,
            "--publish",
            &udp_spec,
        ])
        .supervised()
}

#[test]
fn resolv_conf_names_the_stub_only_with_name_rules() {
    let cat = |rules: &[&str]| {
        let mut sup = Vec::new();
        for r in rules {
            sup.extend(["--allow-net", r]);
        }
        Run::new(&["/bin/cat", "/etc/resolv.conf"])
            .sup(&sup)
            .supervised()
            .ok("cat resolv.conf")
            .stdout
    };
    let servers = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("nameserver"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        servers(&cat(&["pkg.example.net:443"])),
        ["nameserver 127.0.0.53"]
    );
    assert_eq!(
        servers(&cat(&["*.example.org", "10.0.0.0/8"])),
        ["nameserver 127.0.0.53"]
    );
    assert!(servers(&cat(&[])).is_empty());
    assert!(servers(&cat(&["203.0.113.0/24"])).is_empty());
}
