//! The DNS wire format, as much as a stub answering A and AAAA queries
//! needs (RFC 1035, EDNS0's OPT record from RFC 6891).
//!
//! Owns: parsing one query (header, one question, the requester's EDNS
//! payload size) from hostile bytes, and building the response. Never
//! panics and never loops: every read is bounds-checked, compression
//! pointers are followed at most [`MAX_JUMPS`] times, names stop at 255
//! bytes, and record counts are bounded by the bytes that carry them.
//! Does not own what to answer (dns.rs).

use std::net::IpAddr;

pub const HEADER_LEN: usize = 12;
pub const TYPE_A: u16 = 1;
pub const TYPE_AAAA: u16 = 28;
const TYPE_OPT: u16 = 41;
const CLASS_IN: u16 = 1;
/// Pointers followed in one name before it is called malformed.
pub const MAX_JUMPS: usize = 16;
const MAX_NAME_LEN: usize = 255;
/// UDP payload without EDNS, and the most we use with it (the 2020 DNS
/// flag day's fragment-safe size).
pub const UDP_PLAIN: usize = 512;
pub const UDP_EDNS_MAX: usize = 1232;
/// Records of the answer/authority/additional sections we look through
/// for an OPT record.
const MAX_EXTRA_RECORDS: usize = 32;

/// Response codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rcode {
    NoError = 0,
    FormErr = 1,
    ServFail = 2,
    NxDomain = 3,
    NotImp = 4,
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub id: u16,
    /// Recursion desired: echoed in the response.
    pub rd: bool,
    /// The question's labels as sent (their case is echoed back).
    pub labels: Vec<Vec<u8>>,
    pub qtype: u16,
    pub qclass: u16,
    /// The requester's EDNS UDP payload size, if it sent an OPT record.
    pub edns: Option<u16>,
}

/// Why a message gets no ordinary answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Not a query we can answer at all (too short, or a response): drop it.
    Drop,
    /// Answer with this header-only response (FORMERR, NOTIMP).
    Reply(Vec<u8>),
}

impl Query {
    /// The name in lower case without the final dot, if every byte is one
    /// a host name may hold (letters, digits, '-', '_'); `None` for names
    /// no rule can match.
    pub fn name(&self) -> Option<String> {
        let ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
        if !self.labels.iter().all(|l| l.iter().all(ok)) {
            return None;
        }
        let parts: Vec<String> = self
            .labels
            .iter()
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .collect();
        Some(parts.join("."))
    }

    /// Whether the class is IN.
    pub fn is_internet(&self) -> bool {
        self.qclass == CLASS_IN
    }
}

fn u16_at(msg: &[u8], pos: usize) -> Option<u16> {
    let b = msg.get(pos..pos.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// Parses a query message.
pub fn parse_query(msg: &[u8]) -> Result<Query, Reject> {
    let (Some(id), Some(flags)) = (u16_at(msg, 0), u16_at(msg, 2)) else {
        return Err(Reject::Drop);
    };
    if msg.len() < HEADER_LEN || flags & 0x8000 != 0 {
        return Err(Reject::Drop);
    }
    let rd = flags & 0x0100 != 0;
    let fail = |rcode| Reject::Reply(header_only(id, rd, rcode));
    if (flags >> 11) & 0xf != 0 {
        return Err(fail(Rcode::NotImp));
    }
    if u16_at(msg, 4) != Some(1) {
        return Err(fail(Rcode::FormErr));
    }
    let (labels, end) = read_name(msg, HEADER_LEN).ok_or_else(|| fail(Rcode::FormErr))?;
    let (Some(qtype), Some(qclass)) = (u16_at(msg, end), u16_at(msg, end + 2)) else {
        return Err(fail(Rcode::FormErr));
    };
    let extra: usize = [6, 8, 10]
        .iter()
        .map(|&at| usize::from(u16_at(msg, at).unwrap_or(0)))
        .sum();
    Ok(Query {
        id,
        rd,
        labels,
        qtype,
        qclass,
        edns: find_opt(msg, end + 4, extra),
    })
}

/// Reads a (possibly compressed) name at `pos`: its labels and the offset
/// just past it. `None` if malformed.
pub fn read_name(msg: &[u8], mut pos: usize) -> Option<(Vec<Vec<u8>>, usize)> {
    let mut labels = Vec::new();
    let mut end = None;
    let mut jumps = 0;
    let mut total = 1;
    loop {
        let len = usize::from(*msg.get(pos)?);
        match len & 0xc0 {
            0xc0 => {
                let target = (usize::from(u16_at(msg, pos)?)) & 0x3fff;
                end.get_or_insert(pos + 2);
                jumps += 1;
                if jumps > MAX_JUMPS || target >= pos {
                    return None;
                }
                pos = target;
            }
            0 if len == 0 => return Some((labels, *end.get_or_insert(pos + 1))),
            0 => {
                total += len + 1;
                if total > MAX_NAME_LEN {
                    return None;
                }
                labels.push(msg.get(pos + 1..pos + 1 + len)?.to_vec());
                pos += 1 + len;
            }
            _ => return None,
        }
    }
}

/// The UDP payload size of the first OPT record among the `count`
/// records from `pos`; `None` without one (or past a malformed record).
fn find_opt(msg: &[u8], mut pos: usize, count: usize) -> Option<u16> {
    for _ in 0..count.min(MAX_EXTRA_RECORDS) {
        let (_, end) = read_name(msg, pos)?;
        let rtype = u16_at(msg, end)?;
        let class = u16_at(msg, end + 2)?;
        let rdlen = usize::from(u16_at(msg, end + 8)?);
        if rtype == TYPE_OPT {
            return Some(class);
        }
        pos = end + 10 + rdlen;
    }
    None
}

fn flags(rd: bool, truncated: bool, rcode: Rcode) -> u16 {
    let mut f = 0x8000 | 0x0080 | rcode as u16; // QR, RA
    if rd {
        f |= 0x0100;
    }
    if truncated {
        f |= 0x0200;
    }
    f
}

/// A response with no question, for queries we cannot read.
pub fn header_only(id: u16, rd: bool, rcode: Rcode) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN);
    for v in [id, flags(rd, false, rcode), 0, 0, 0, 0] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

/// The response to `q`: its question echoed, then one record per address
/// (as many as fit in `limit` bytes; TC set if some did not), then an OPT
/// record if the query had one.
pub fn response(q: &Query, rcode: Rcode, addrs: &[IpAddr], ttl: u32, limit: usize) -> Vec<u8> {
    let mut question = Vec::new();
    for l in &q.labels {
        question.push(l.len() as u8);
        question.extend_from_slice(l);
    }
    question.push(0);
    question.extend_from_slice(&q.qtype.to_be_bytes());
    question.extend_from_slice(&q.qclass.to_be_bytes());
    let opt_len = if q.edns.is_some() { 11 } else { 0 };
    let mut room = limit.saturating_sub(HEADER_LEN + question.len() + opt_len);
    let mut answers = Vec::new();
    let mut count: u16 = 0;
    let mut truncated = false;
    for ip in addrs {
        let record = answer_record(*ip, ttl);
        if record.len() > room || count == u16::MAX {
            truncated = true;
            break;
        }
        room -= record.len();
        answers.extend_from_slice(&record);
        count += 1;
    }
    let mut out = Vec::with_capacity(HEADER_LEN + question.len() + answers.len() + opt_len);
    let arcount = u16::from(q.edns.is_some());
    for v in [q.id, flags(q.rd, truncated, rcode), 1, count, 0, arcount] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(&question);
    out.extend_from_slice(&answers);
    if q.edns.is_some() {
        out.push(0);
        out.extend_from_slice(&TYPE_OPT.to_be_bytes());
        out.extend_from_slice(&(UDP_EDNS_MAX as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    out
}

/// One A or AAAA record whose name points at the question (offset 12).
fn answer_record(ip: IpAddr, ttl: u32) -> Vec<u8> {
    let mut r = vec![0xc0, 0x0c];
    let (rtype, data) = match ip {
        IpAddr::V4(a) => (TYPE_A, a.octets().to_vec()),
        IpAddr::V6(a) => (TYPE_AAAA, a.octets().to_vec()),
    };
    r.extend_from_slice(&rtype.to_be_bytes());
    r.extend_from_slice(&CLASS_IN.to_be_bytes());
    r.extend_from_slice(&ttl.to_be_bytes());
    r.extend_from_slice(&(data.len() as u16).to_be_bytes());
    r.extend_from_slice(&data);
    r
}
