//! What `supervisor run` does while the sandbox's init builds the view:
//! the limits' hooks (their cgroup made, for init to join before the
//! guest; rlimits once it is set up), and forking the socket factory
//! while this process is single-threaded (it idles until the first
//! socket call, and enters the sandbox's namespaces then:
//! `socket_factory.rs`), compiling the supervisor's own filter, which
//! would otherwise be compiled after the view is built, and measuring the
//! view while init drops its privileges.
//!
//! Owns: that ordering only. Does not own the factory itself
//! (`socket_factory.rs`), the limits (`limits/`), the filter
//! (`confine.rs`), or launch.

use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::unistd::Pid;

use crate::confine;
use crate::launch::{open_namespace, InitHooks, Namespaces};
use crate::limits::Enforcement;
use crate::socket_factory::SocketFactory;
use crate::sys::priority;

/// The hooks of one run.
pub struct RunHooks<'a> {
    limits: &'a Enforcement,
    /// `Schedule::nice_after_set_up`.
    nice: Option<i32>,
    factory: RefCell<Option<SocketFactory>>,
    /// `--allow-net` was given: which own filter to compile.
    egress: bool,
    /// The DNS stub's address, for the socket factory to put on the
    /// loopback when it brings it up.
    dns_stub: Option<Ipv4Addr>,
    own_filter: RefCell<Option<confine::OwnFilters>>,
    /// The init of the sandbox whose loopback this one shares, if any.
    shared_loopback: Option<Pid>,
    /// What measures the view once init is rooted in it.
    on_view_built: RefCell<Option<ViewMeasure<'a>>>,
}

/// Measures the view from its root (and whether it is fenced), while init
/// finishes its set-up ([`InitHooks::view_built`]).
pub type ViewMeasure<'a> = Box<dyn FnOnce(BorrowedFd<'_>, bool) -> Result<(), String> + 'a>;

impl<'a> RunHooks<'a> {
    /// `network`: whether `--allow-net` was given, and the DNS stub's
    /// address if a rule names a host; `nice`: the nice value the
    /// sandbox's tasks get once it is set up.
    pub fn new(
        limits: &'a Enforcement,
        (egress, dns_stub): (bool, Option<Ipv4Addr>),
        nice: Option<i32>,
    ) -> Self {
        RunHooks {
            limits,
            nice,
            factory: RefCell::new(None),
            egress,
            dns_stub,
            own_filter: RefCell::new(None),
            shared_loopback: None,
            on_view_built: RefCell::new(None),
        }
    }

    /// `measure` is called once init is rooted in the view.
    pub fn on_view_built(&mut self, measure: ViewMeasure<'a>) {
        *self.on_view_built.get_mut() = Some(measure);
    }

    /// The socket factory makes the netstack's sockets in the network
    /// namespace of the sandbox whose init is `init` (a shared loopback).
    pub fn share_loopback(&mut self, init: Option<Pid>) {
        self.shared_loopback = init;
    }

    /// The supervisor's own filters, compiled during the launch (or now,
    /// if the launch did not get that far).
    pub fn take_own_filter(&self) -> confine::OwnFilters {
        let compiled = self.own_filter.borrow_mut().take();
        compiled.unwrap_or_else(|| confine::compiled(self.egress))
    }

    /// The socket factory forked during the launch (once).
    pub fn take_factory(&self) -> Result<SocketFactory, String> {
        self.factory
            .borrow_mut()
            .take()
            .ok_or_else(|| "socket factory: not started".to_string())
    }
}

impl InitHooks for RunHooks<'_> {
    fn joins_late(&self) -> bool {
        self.limits.joins_late()
    }

    /// The limits' cgroup first: init waits for it once the view is built.
    fn cgroup_join(&self, init: Pid) -> Result<Vec<OwnedFd>, String> {
        self.limits.cgroup_join(init)
    }

    /// Still single-threaded (launch runs before any thread exists), with
    /// the id maps written: the factory may fork, holding the sandbox's
    /// user and network namespaces (`ns`: init joins the network one only
    /// once the view is built) to join them later.
    fn setting_up(&self, init: Pid, ns: Namespaces<'_>) -> Result<(), String> {
        // A shared loopback is another sandbox's: its namespaces, and its
        // init's list of the namespace's unix sockets.
        let factory = match self.shared_loopback {
            Some(owner) => {
                let userns = open_namespace(owner, "user")?;
                let netns = open_namespace(owner, "net")?;
                SocketFactory::start(owner, userns.as_fd(), netns.as_fd(), self.dns_stub)?
            }
            None => SocketFactory::start(init, ns.user, ns.net, self.dns_stub)?,
        };
        *self.factory.borrow_mut() = Some(factory);
        *self.own_filter.borrow_mut() = Some(confine::compiled(self.egress));
        Ok(())
    }

    /// Init drops its privileges meanwhile: the measure runs beside it.
    fn view_built(&self, root: BorrowedFd<'_>, fenced: bool) -> Result<(), String> {
        let measure = self.on_view_built.borrow_mut().take();
        measure.map_or(Ok(()), |measure| measure(root, fenced))
    }

    /// Before init forks the guest's main process, while this process
    /// has no thread: what is set now (the nice value the schedule asks
    /// for) every task made afterwards inherits.
    fn set_up(&self, init: Pid) -> Result<(), String> {
        self.limits.set_up(init)?;
        let Some(nice) = self.nice else {
            return Ok(());
        };
        // Our process group holds every task of the sandbox so far: this
        // process (no thread yet), init (waiting for the go), the socket
        // factory; what is made later (our threads, the guest's main
        // process) inherits the value.
        priority::set_group_nice(0, nice)
            .map_err(|e| format!("restoring the sandbox's priority: {}", e.desc()))
    }
}
