//! The network: the netstack's loopback TCP and UDP, ping sockets,
//! ancillary data, queues and waits as natively, where TCP and the host's
//! `AF_UNIX` sockets part; sockets crossing processes (SCM_RIGHTS, fork,
//! exec, dup) and what /proc, `ss` and the peer options show of them;
//! egress by `--allow-net` and its DNS stub (a connected UDP relay's
//! port unreachable: `egress_refused.rs`; a connected UDP socket's
//! refusal, loopback and relayed, as poll and each call see it:
//! `udp_refused.rs`), `--publish`, the network
//! flags on the command line; the socket factory's confinement and the
//! sandbox's own network namespace; a Jupyter kernel as a whole-program
//! check; sends that take a msghdr (`sendpath.rs`); the guest's count of
//! its sockets in `/proc/net/sockstat` (`sockstat.rs`); TCP_NODELAY of
//! local connections without a round trip (`nodelay.rs`).
//!
//! The guest scripts and host-side drivers the modules run are the
//! `*.py` files beside them.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod ancillary;
mod crossing;
mod egress;
mod egress_crossing;
mod egress_refused;
mod factory;
mod flags;
mod gaps;
mod jupyter;
mod loopback;
mod netns;
mod nodelay;
mod pending;
mod ping;
mod publish;
mod queues;
mod reuseport;
mod sendpath;
mod sockadopt;
mod socknames;
mod sockstat;
mod udp;
mod udp_refused;
mod waits;

/// Runs `run` natively and supervised (in a network namespace of its own
/// when `isolate`: root may not be given the host's), fails unless the
/// transcripts are equal, and unless the native one holds every one of
/// `needles` (what the script says it covers).
fn transcript_matches_native(run: common::Run, isolate: bool, needles: &[&str]) {
    let native = run.native().ok("native");
    let mut sandboxed = run;
    if isolate {
        sandboxed.wrap = vec!["unshare".into(), "-n".into()];
    }
    let sandboxed = sandboxed.supervised().ok("sandboxed");
    assert_eq!(sandboxed.stdout, native.stdout, "{}", sandboxed.dump());
    for needle in needles {
        assert!(
            native.stdout.contains(needle),
            "{needle}: {}",
            native.dump()
        );
    }
}
