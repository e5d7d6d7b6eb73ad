//! The sandbox's way in and out, set up for one run: egress by the
//! `--allow-net` rules (`netstack::outbound`), the DNS stub serving
//! 127.0.0.53:53 inside the sandbox's address space when a rule names a
//! host, and the `--publish` listeners relaying host clients to the
//! guest's listeners.
//!
//! Owns: the order (publishers bound before launch; egress, stub and
//! publishers started before the trap serves), the stub's sockets and
//! threads, and publishing the guest's listeners as they open
//! (`publish_listeners`: an OCI container's listeners on its network
//! namespace's interfaces). Does not own: the rules, the stub's answers, relays or the
//! socket layer (all in `netstack`).

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::thread;

use netstack::dns::{DnsStub, SystemResolver, STUB_ADDR, STUB_PORT};
use netstack::outbound::Outbound;
use netstack::publish::{ConnectGuest, PublishSpec, Publisher, Serving};
use netstack::rules::{AllowList, Resolved};
use netstack::{Proto, Stack};
use parking_lot::Mutex;

use crate::config::NetConfig;
use nix::sys::socket::{self, Backlog, SockType, UnixAddr};
use sandbox_syscalls::Context;

/// Binds every `--publish` host socket. Call it before launch (no thread
/// may exist then; binding starts none), so a taken port fails the run
/// before the guest exists.
pub fn bind_publishers(specs: &[PublishSpec]) -> Result<Vec<Publisher>, String> {
    specs.iter().map(Publisher::bind).collect()
}

/// What serves the sandbox's network from outside the trap, until
/// [`Network::finish`].
pub struct Network {
    published: Vec<Serving>,
    /// The guest's listeners published on their own ports
    /// (`publish_listeners`).
    listeners: Option<Arc<Listeners>>,
}

impl Network {
    /// Plugs egress into `ctx` (when rules are given, or `net.open`),
    /// starts the DNS stub (when a rule names a host), serves the
    /// publishers and, with `net.publish_listeners`, publishes each guest
    /// listener as it opens.
    pub fn start(
        net: &NetConfig,
        publishers: Vec<Publisher>,
        ctx: &mut Context,
    ) -> Result<Network, String> {
        let rules = &net.allow;
        if net.has_egress() {
            let allow = match net.open {
                true => AllowList::open(rules.to_vec()),
                false => AllowList::new(rules.to_vec()),
            };
            let allow = Arc::new(allow);
            let resolved = Arc::new(Resolved::new());
            let (namer, sockets) = (ctx.net().namer.clone(), ctx.net().sockets());
            let outbound = Outbound::new(allow.clone(), resolved.clone(), namer, sockets);
            ctx.set_egress(Box::new(outbound))
                .map_err(|e| format!("cannot plug in egress: {e}"))?;
            if allow.has_name_rules() {
                let stub = DnsStub::new(allow, resolved, Box::new(SystemResolver));
                serve_stub(&ctx.net(), Arc::new(stub))
                    .map_err(|e| format!("cannot start the DNS stub: {e}"))?;
            }
        }
        let stack = ctx.net();
        let weak = Arc::downgrade(&stack);
        let connect_guest: ConnectGuest = Arc::new(move |port: u16, proto: Proto| {
            let stack = weak.upgrade().ok_or(io::ErrorKind::NotConnected)?;
            stack
                .connect_from_host(port, proto)
                .map_err(io::Error::from)
        });
        let published = publishers
            .into_iter()
            .map(|p| p.serve(connect_guest.clone()))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| format!("cannot serve --publish: {e}"))?;
        let listeners = match net.publish_listeners {
            true => {
                let listeners = Arc::new(Listeners {
                    connect_guest,
                    serving: Mutex::new(HashMap::new()),
                });
                let hook = listeners.clone();
                stack
                    .on_listen(Box::new(move |local, proto| hook.publish(local, proto)))
                    .map_err(|e| format!("cannot publish the guest's listeners: {e}"))?;
                Some(listeners)
            }
            false => None,
        };
        Ok(Network {
            published,
            listeners,
        })
    }

    /// Stops accepting on the published ports (the guest has ended).
    pub fn finish(self) {
        for serving in self.published {
            serving.stop();
        }
        if let Some(listeners) = self.listeners {
            let serving = std::mem::take(&mut *listeners.serving.lock());
            for (_, serving) in serving {
                serving.stop();
            }
        }
    }
}

/// Most guest ports (TCP and UDP together) published on the namespace's
/// address at once; listeners on more ports stay the sandbox's own.
pub const MAX_PUBLISHED_LISTENERS: usize = 256;

/// The guest's listeners published on the supervisor's network namespace
/// (a container's interfaces): each wildcard TCP port the guest listens
/// on, and each wildcard UDP port it binds, gets a host socket on
/// `0.0.0.0` and the same port and protocol, relaying to the guest's as
/// `--publish` does (UDP: a guest socket per host peer), for the rest of
/// the run.
struct Listeners {
    connect_guest: ConnectGuest,
    serving: Mutex<HashMap<(u16, Proto), Serving>>,
}

impl Listeners {
    /// The guest listens on `local` (TCP), or bound a UDP socket there:
    /// published when it is a wildcard address (a guest listener on
    /// loopback stays the sandbox's), not yet published for that protocol,
    /// and there is room. A port the namespace has taken (or a failure)
    /// leaves the guest's socket its own: the guest's listen or bind
    /// succeeds either way, as it would in the container's namespace.
    fn publish(&self, local: SocketAddr, proto: Proto) {
        if !local.ip().is_unspecified() || local.port() == 0 {
            return;
        }
        let key = (local.port(), proto);
        let mut serving = self.serving.lock();
        if serving.contains_key(&key) || serving.len() >= MAX_PUBLISHED_LISTENERS {
            return;
        }
        let spec = PublishSpec {
            host: SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), local.port()),
            guest_port: local.port(),
            proto,
        };
        let started = Publisher::bind(&spec)
            .ok()
            .and_then(|p| p.serve(self.connect_guest.clone()).ok());
        if let Some(s) = started {
            serving.insert(key, s);
        }
    }
}

/// Binds the stub's datagram socket and stream listener to the names of
/// udp and tcp 127.0.0.53:53 and serves each on a thread. The threads
/// end with the process.
fn serve_stub(net: &Stack, stub: Arc<DnsStub>) -> Result<(), nix::Error> {
    let addr = SocketAddr::new(STUB_ADDR.into(), STUB_PORT);
    let udp = bound(net, Proto::Udp, addr)?;
    let tcp = bound(net, Proto::Tcp, addr)?;
    socket::listen(&tcp, Backlog::new(64)?)?;
    let tcp = UnixListener::from(tcp);
    let datagrams = stub.clone();
    spawn("dns-stub-udp", move || {
        let _ = datagrams.serve_datagrams(udp.as_fd());
    })?;
    spawn("dns-stub-tcp", move || accept_loop(&tcp, &stub))?;
    Ok(())
}

/// A host unix socket bound to the netstack name of `proto` `addr`.
fn bound(net: &Stack, proto: Proto, addr: SocketAddr) -> Result<OwnedFd, nix::Error> {
    let ty = match proto {
        Proto::Tcp => SockType::Stream,
        Proto::Udp => SockType::Datagram,
    };
    // Made where the guest's sockets are (the sandbox's namespace).
    let fd = net.sockets().socket(ty)?;
    let name = net.namer.encode(proto, addr, false);
    socket::bind(fd.as_raw_fd(), &UnixAddr::new_abstract(&name)?)?;
    Ok(fd)
}

/// Serves each TCP connection to the stub on a thread of its own.
fn accept_loop(listener: &UnixListener, stub: &Arc<DnsStub>) {
    loop {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
            Err(_) => return,
        };
        let stub = stub.clone();
        let _ = spawn("dns-stub-conn", move || {
            let _ = stub.serve_stream(conn);
        });
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), nix::Error> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|_| nix::Error::EAGAIN)
}
