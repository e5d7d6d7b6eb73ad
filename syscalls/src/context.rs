//! The state every serviced call shares: the view's resolver, the
//! guest's ids, its limits and the /proc files served under them, its
//! Landlock fence and its sockets, set up once by the supervisor before
//! the guest runs and read by many workers at once.
//!
//! Owns: [`Context`] and its set-up. Does not own: what the handlers
//! ([`crate::handlers`]) or the sandbox's /proc (the `procfs` crate,
//! through the [`procfs::Scope`] each call lends it) do with it.

use std::os::fd::OwnedFd;

use vfs::{IdMap, Resolver};

use procfs::GuestLimits;

/// What the handlers and the sandbox's /proc share: the view's resolver,
/// the id mapping, and what the guest is told of its limits. Immutable
/// once it serves, so `&Context` serves many workers.
#[derive(Debug)]
pub struct Context {
    pub(crate) fs: Resolver,
    pub(crate) ids: IdMap,
    pub(crate) limits: GuestLimits,
    /// The view's /proc files rewritten under [`Context::limits`].
    pub(crate) synthetic: procfs::Synthetic,
    /// Whether an open that creates nothing and names no synthetic file
    /// is answered CONTINUE (the kernel opens the object the VFS
    /// resolved) rather than with a descriptor of ours (ADDFD). See
    /// `handlers/open/`; tests of the VFS's resolution turn it off.
    pub(crate) continue_plain_opens: bool,
    /// What the guest's Landlock domain lets the kernel open for reading
    /// (`procfs/fence.rs`); `None` when the guest has no such domain.
    pub(crate) fence: Option<procfs::Fence>,
    /// The sandbox's sockets (`handlers/net/`).
    pub(crate) net: std::sync::Arc<netstack::Stack>,
    /// What makes the device nodes the guest asks for in its private
    /// file systems (`handlers/mknod.rs`); `None` when the supervisor
    /// cannot (no CAP_MKNOD): the kernel's EPERM.
    pub(crate) nodes: Option<std::sync::Arc<dyn crate::DeviceNodes>>,
    /// The regular files of the guest's stdio, whose reopen by name is
    /// served (`handed.rs`); recorded as the guest is let go.
    pub(crate) handed: std::sync::Arc<crate::Handed>,
}

impl Context {
    /// `root`: an `O_PATH` descriptor of the guest's root
    /// (`/proc/<init>/root`). `host_uid`/`host_gid`: the invoker's ids,
    /// which are also the guest's.
    pub fn new(root: OwnedFd, host_uid: u32, host_gid: u32) -> Context {
        let fs = Resolver::new(root);
        Context {
            synthetic: procfs::Synthetic::always(&fs),
            fs,
            ids: IdMap::new(host_uid, host_gid),
            limits: GuestLimits::default(),
            continue_plain_opens: true,
            fence: None,
            net: std::sync::Arc::default(),
            nodes: None,
            handed: std::sync::Arc::default(),
        }
    }

    /// The guest's id mapping ([`Context::new`]: the invoker's ids alone).
    /// With more than one id, no resolved directory is kept across calls
    /// ([`vfs::Resolver::keep_no_dirs`] says why). The /proc files that
    /// print ids for their opener's user namespace are served as the
    /// guest's reads them ([`procfs::Synthetic::set_ids`]).
    pub fn set_ids(&mut self, ids: IdMap) {
        if ids.count() > 1 {
            self.fs.keep_no_dirs();
        }
        self.synthetic.set_ids(&ids);
        self.ids = ids;
    }

    /// Makes the guest's device nodes with `nodes` (`handlers/mknod.rs`).
    pub fn set_device_nodes(&mut self, nodes: std::sync::Arc<dyn crate::DeviceNodes>) {
        self.nodes = Some(nodes);
    }

    /// Where the guest's stdio files are recorded
    /// ([`crate::Handed::record_own_stdio`]), for the one who lets the
    /// guest go, which may be after the context serves.
    pub fn handed(&self) -> std::sync::Arc<crate::Handed> {
        self.handed.clone()
    }

    /// The guest's id mapping.
    pub fn ids(&self) -> &IdMap {
        &self.ids
    }

    /// The refused connections, for the report.
    pub fn net_denials(&self) -> std::sync::Arc<netstack::DenialLog> {
        self.net.denials()
    }

    /// Plugs in the way out of the sandbox (the default refuses all).
    /// Call it before [`Context::net`] hands the stack out; later it is
    /// EBUSY.
    pub fn set_egress(
        &mut self,
        egress: Box<dyn netstack::Egress>,
    ) -> Result<(), nix::errno::Errno> {
        let net = std::sync::Arc::get_mut(&mut self.net).ok_or(nix::errno::Errno::EBUSY)?;
        net.set_egress(egress);
        Ok(())
    }

    /// Names the netstack's sockets behind `token` (another sandbox's,
    /// to share its loopback); same rule as [`Context::set_egress`].
    pub fn set_net_token(&mut self, token: &str) -> Result<(), nix::errno::Errno> {
        let net = std::sync::Arc::get_mut(&mut self.net).ok_or(nix::errno::Errno::EBUSY)?;
        net.namer = netstack::Namer::new(token);
        Ok(())
    }

    /// Makes the netstack's host sockets from `sockets` (the sandbox's
    /// network namespace); same rule as [`Context::set_egress`].
    pub fn set_sockets(
        &mut self,
        sockets: std::sync::Arc<dyn netstack::UnixSockets>,
    ) -> Result<(), nix::errno::Errno> {
        let net = std::sync::Arc::get_mut(&mut self.net).ok_or(nix::errno::Errno::EBUSY)?;
        net.set_sockets(sockets);
        Ok(())
    }

    /// The sandbox's socket layer, for what serves it from outside the
    /// trap: the DNS stub's sockets, `--publish` connections.
    pub fn net(&self) -> std::sync::Arc<netstack::Stack> {
        self.net.clone()
    }

    /// Tell the guest about its limits from now on. Call it before the
    /// context serves any call. Looks up the view's `/proc/meminfo` and
    /// `/proc/cpuinfo` (when a memory or cpu limit is set) to recognise
    /// opens of them.
    pub fn set_limits(&mut self, limits: GuestLimits) {
        self.synthetic.set_limits(&self.fs, &limits);
        self.limits = limits;
    }

    /// Readies what the first served global /proc file would open on
    /// the guest's time (`procfs::warm`): for a sandbox set up before its
    /// command is known.
    pub fn warm_procfs(&self) {
        procfs::warm(&self.proc());
    }

    /// What serving a /proc file reads of this context.
    pub(crate) fn proc(&self) -> procfs::Scope<'_> {
        procfs::Scope {
            fs: &self.fs,
            net: &self.net,
            synthetic: &self.synthetic,
            limits: &self.limits,
        }
    }

    /// The guest is in a Landlock domain that fences its reads
    /// (`procfs/src/fence.rs`): read opens the kernel would refuse are served. Call
    /// it before the guest runs, while the view's root holds what init
    /// granted.
    pub fn fence_reads(&mut self) -> Result<(), nix::errno::Errno> {
        self.fence = Some(procfs::Fence::new(&self.fs)?);
        Ok(())
    }

    /// Always answer opens with a descriptor the supervisor opened
    /// (never CONTINUE): for tests that check what the VFS resolves.
    pub fn install_every_open(&mut self) {
        self.continue_plain_opens = false;
    }

    /// [`Context::new`] with another policy for the cache of resolved
    /// directories (the default caches the sandbox's own tmpfs
    /// and overlay layers; tests on a host disk use `All`).
    pub fn with_cache_policy(
        root: OwnedFd,
        host_uid: u32,
        host_gid: u32,
        policy: vfs::CachePolicy,
    ) -> Context {
        Context {
            fs: Resolver::with_cache(root, policy),
            ids: IdMap::new(host_uid, host_gid),
            limits: GuestLimits::default(),
            synthetic: Default::default(),
            continue_plain_opens: true,
            fence: None,
            net: std::sync::Arc::default(),
            nodes: None,
            handed: std::sync::Arc::default(),
        }
    }
}
