//! `--allow-net` rules and the egress verdict.
//!
//! A rule names a network (`203.0.113.0/24`, `[2001:db8::/32]`, a bare
//! address) or a DNS name (`index.example.net`, `*.example.org`), each with an
//! optional port or port range (`:443`, `:8000-8100`); without one every
//! port is allowed. Rules apply to TCP and UDP alike.
//!
//! - `*.example.org` matches every name below example.org (`a.example.org`,
//!   `a.b.example.org`) but not `example.org` itself, as egress allowlists
//!   (Squid's `.example.org` aside) and TLS wildcards do; add both rules to
//!   allow both.
//! - A name rule allows an address only if the DNS stub resolved an allowed
//!   name to it during this run ([`Resolved`]).
//! - The special ranges (special.rs: private, link-local with the metadata
//!   address, the host's loopback, multicast, ... and their IPv4-mapped,
//!   IPv4-compatible and NAT64 forms) are reachable only through a network
//!   rule lying inside the most specific such range holding the address:
//!   `10.0.0.0/8` or `10.1.2.3:5432` unlocks 10.1.2.3, `0.0.0.0/0` does
//!   not, and no name rule ever does (a name that resolves to a private
//!   address is refused: DNS rebinding gains nothing).
//!
//! Owns parsing and the verdict. Does not own resolving names (dns.rs) or
//! making the connection (the socket layer's egress seam).

mod cidr;
mod special;

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::RwLock;

pub use cidr::{canonical_ip, Cidr};

/// The transport a destination is reached by (the netstack's own).
pub use crate::name::Proto;

/// One `--allow-net` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    target: Target,
    ports: Option<PortRange>,
    text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Net(Cidr),
    Name(NamePattern),
}

/// A DNS name rule: one name, or every name below a domain.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NamePattern {
    Exact(String),
    Below(String),
}

/// An inclusive range of ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PortRange {
    first: u16,
    last: u16,
}

/// Longest name a rule may hold (RFC 1035's 253 characters, no final dot).
const MAX_NAME: usize = 253;

impl Rule {
    /// Parses one rule; the error names the rule and says what is wrong.
    pub fn parse(text: &str) -> Result<Rule, String> {
        parse_rule(text.trim()).map_err(|why| format!("rule {text:?}: {why}"))
    }

    /// Whether this is a DNS name rule (the sandbox then needs the stub).
    pub fn is_name(&self) -> bool {
        matches!(self.target, Target::Name(_))
    }

    /// The network of a network rule.
    pub fn net(&self) -> Option<&Cidr> {
        match &self.target {
            Target::Net(net) => Some(net),
            Target::Name(_) => None,
        }
    }

    /// Whether a name rule allows `name` (lower case, no final dot).
    pub fn allows_name(&self, name: &str) -> bool {
        match &self.target {
            Target::Name(NamePattern::Exact(n)) => n == name,
            Target::Name(NamePattern::Below(domain)) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            Target::Net(_) => false,
        }
    }

    fn allows_port(&self, port: u16) -> bool {
        self.ports
            .is_none_or(|r| (r.first..=r.last).contains(&port))
    }

    /// Whether this rule allows `ip`:`port`, given the names the stub
    /// resolved to `ip`.
    fn allows(&self, ip: IpAddr, port: u16, names: &[String]) -> bool {
        self.allows_port(port)
            && match &self.target {
                Target::Net(net) => net.contains(ip),
                Target::Name(_) => names.iter().any(|n| self.allows_name(n)),
            }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Rule, String> {
        Rule::parse(s)
    }
}

fn parse_rule(text: &str) -> Result<Rule, String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    let (host, ports) = split_ports(text)?;
    let bracketed = text.starts_with('[');
    let target = match parse_target(host)? {
        Target::Net(net) if bracketed && !host.contains(':') => {
            return Err(format!("{net} in brackets: brackets are for IPv6"))
        }
        Target::Name(_) if bracketed => return Err(format!("{host:?} is not an IPv6 address")),
        target => target,
    };
    Ok(Rule {
        target,
        ports: ports.map(parse_ports).transpose()?,
        text: text.to_string(),
    })
}

/// `[V6]:PORTS`, `[V6]`, a bare IPv6 address or network, or `HOST[:PORTS]`.
fn split_ports(text: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = text.strip_prefix('[') {
        let (inner, after) = rest.split_once(']').ok_or("'[' without a closing ']'")?;
        return match after {
            "" => Ok((inner, None)),
            _ => match after.strip_prefix(':') {
                Some(ports) => Ok((inner, Some(ports))),
                None => Err(format!("unexpected {after:?} after ']'")),
            },
        };
    }
    if text.matches(':').count() > 1 {
        return Ok((text, None));
    }
    Ok(match text.split_once(':') {
        Some((host, ports)) => (host, Some(ports)),
        None => (text, None),
    })
}

fn parse_target(host: &str) -> Result<Target, String> {
    if host.contains('/') {
        return Cidr::parse(host).map(Target::Net);
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Target::Net(Cidr::host(ip)));
    }
    if host.contains(':') {
        return Err(format!("{host:?} is not an IPv6 address"));
    }
    parse_name(host).map(Target::Name)
}

fn parse_name(host: &str) -> Result<NamePattern, String> {
    let lower = host.to_ascii_lowercase();
    let lower = lower.strip_suffix('.').unwrap_or(&lower);
    let (below, name) = match lower.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, lower),
    };
    if name.is_empty() || name.len() > MAX_NAME {
        return Err("expected a network, an address or a DNS name".into());
    }
    for label in name.split('.') {
        check_label(label)?;
    }
    if name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!("{host:?} is neither an IP address nor a DNS name"));
    }
    Ok(match below {
        true => NamePattern::Below(name.to_string()),
        false => NamePattern::Exact(name.to_string()),
    })
}

fn check_label(label: &str) -> Result<(), String> {
    let ok_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    if label.is_empty() || label.len() > 63 {
        return Err(format!("{label:?} is not a DNS label (1 to 63 characters)"));
    }
    if label.contains('*') {
        return Err("'*' may only stand first, as in *.example.org".into());
    }
    if !label.bytes().all(ok_byte) || label.starts_with('-') || label.ends_with('-') {
        return Err(format!(
            "{label:?} is not a DNS label (letters, digits, '-', '_')"
        ));
    }
    Ok(())
}

fn parse_ports(text: &str) -> Result<PortRange, String> {
    let port = |s: &str| -> Result<u16, String> {
        match s.parse::<u16>() {
            Ok(p) if p > 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
            _ => Err(format!("port {s:?} must be a number from 1 to 65535")),
        }
    };
    let (first, last) = match text.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?),
        None => (port(text)?, port(text)?),
    };
    if first > last {
        return Err(format!("port range {text:?} runs backwards"));
    }
    Ok(PortRange { first, last })
}

/// Addresses the DNS stub handed out this run, with the names they were
/// the answer for. Thread-safe; bounded (addresses past the bound are not
/// recorded, so they stay undiallable by name).
#[derive(Debug, Default)]
pub struct Resolved {
    names: RwLock<HashMap<IpAddr, Vec<String>>>,
}

/// Most addresses [`Resolved`] remembers.
pub const MAX_RESOLVED: usize = 1 << 16;
/// Most names remembered for one address.
const MAX_NAMES_PER_ADDR: usize = 16;

impl Resolved {
    pub fn new() -> Resolved {
        Resolved::default()
    }

    /// Records that `name` resolved to each of `addrs`.
    pub fn record(&self, name: &str, addrs: &[IpAddr]) {
        let mut map = self.names.write().unwrap_or_else(|e| e.into_inner());
        for ip in addrs {
            let ip = canonical_ip(*ip);
            if map.len() >= MAX_RESOLVED && !map.contains_key(&ip) {
                continue;
            }
            let names = map.entry(ip).or_default();
            if names.len() < MAX_NAMES_PER_ADDR && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }

    /// The names `ip` was handed out for.
    pub fn names_of(&self, ip: IpAddr) -> Vec<String> {
        let map = self.names.read().unwrap_or_else(|e| e.into_inner());
        map.get(&canonical_ip(ip)).cloned().unwrap_or_default()
    }
}

/// A refused destination, with the reason the report gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    pub dst: SocketAddr,
    pub proto: Proto,
    pub reason: String,
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Denied {}

/// Every `--allow-net` rule of a run. Empty: no egress at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
    /// Every destination but loopback is allowed ([`AllowList::open`]).
    open: bool,
}

impl AllowList {
    pub fn new(rules: Vec<Rule>) -> AllowList {
        AllowList { rules, open: false }
    }

    /// Every destination that is not loopback, special ranges included,
    /// as runc's container reaches whatever its network namespace
    /// reaches; loopback (the sandbox's own) only where one of `rules`
    /// names it (an engine's DNS resolver at 127.0.0.11:53).
    pub fn open(rules: Vec<Rule>) -> AllowList {
        AllowList { rules, open: true }
    }

    /// Whether any rule names a DNS name (the sandbox then needs the stub).
    pub fn has_name_rules(&self) -> bool {
        self.rules.iter().any(Rule::is_name)
    }

    /// Whether the DNS stub may resolve `name` (lower case, no final dot).
    pub fn allows_name(&self, name: &str) -> bool {
        self.rules.iter().any(|r| r.allows_name(name))
    }

    /// Whether the sandbox may reach `dst` over `proto`.
    pub fn verdict(
        &self,
        dst: SocketAddr,
        proto: Proto,
        resolved: &Resolved,
    ) -> Result<(), Denied> {
        let ip = canonical_ip(dst.ip());
        if self.open && !ip.is_loopback() {
            return Ok(());
        }
        let names = resolved.names_of(ip);
        let mut matching = self
            .rules
            .iter()
            .filter(|r| r.allows(ip, dst.port(), &names));
        let deny = |reason: String| Denied { dst, proto, reason };
        match special::most_specific(ip) {
            Some(special) => {
                match matching.any(|r| r.net().is_some_and(|n| n.is_within(&special.net))) {
                    true => Ok(()),
                    false => Err(deny(format!(
                        "{ip} is {} and no rule names it",
                        special.what
                    ))),
                }
            }
            None => match matching.next() {
                Some(_) => Ok(()),
                None => Err(deny(format!(
                    "no rule allows {proto} {}",
                    SocketAddr::new(ip, dst.port())
                ))),
            },
        }
    }
}

#[cfg(test)]
#[path = "rules/tests.rs"]
mod tests;
