//! A row of the table ([`Entry`]) and the constructors the rows are
//! written with: each makes a class and, exactly when that class can trap
//! a call for service, its handler, so no row can name a handler the
//! filter never reaches or trap a call without one.
//!
//! Owns the row's type. Does not own the rows (`table.rs`) or what a
//! class means to the filter (`bpf.rs`).

use nix::errno::Errno;

use crate::handlers::Handler;
use crate::policy::{Cond, Fallback, Rule};

/// One syscall number's row of the table: its class, with the argument
/// checks BPF makes, and the handler of the calls the filter traps for
/// service. Made only by the constructors below, so a row has a handler
/// exactly when its class can trap a call for service.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The class, which the filter is compiled from.
    pub rule: Rule,
    handler: Option<Handler>,
}

impl Entry {
    /// The handler of the calls this row traps for service; `None` for a
    /// row that never does.
    pub fn handler(&self) -> Option<Handler> {
        self.handler
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("rule", &self.rule)
            .field("handler", &self.handler.map(|_| "fn"))
            .finish()
    }
}

/// Reaches the host kernel.
pub(super) const PASS: Entry = Entry {
    rule: Rule::Pass,
    handler: None,
};

/// Trapped, and answered `e` (counted as a denial).
pub(super) const fn deny(e: Errno) -> Entry {
    Entry {
        rule: Rule::Deny(e),
        handler: None,
    }
}

/// Answered `e` by the filter itself, uncounted (a C library's probe).
pub(super) const fn refuse(e: Errno) -> Entry {
    Entry {
        rule: Rule::Refuse(e),
        handler: None,
    }
}

/// Trapped, and serviced by `handler`.
pub(super) const fn serve(handler: Handler) -> Entry {
    Entry {
        rule: Rule::Service,
        handler: Some(handler),
    }
}

/// Serviced by `handler` when every condition holds; passes otherwise.
pub(super) const fn serve_if(conds: &'static [Cond], handler: Handler) -> Entry {
    Entry {
        rule: Rule::ServiceIf(conds),
        handler: Some(handler),
    }
}

/// Serviced by `handler` when every condition of either list holds;
/// passes otherwise.
pub(super) const fn serve_if_either(
    either: &'static [&'static [Cond]; 2],
    handler: Handler,
) -> Entry {
    Entry {
        rule: Rule::ServiceIfEither(either),
        handler: Some(handler),
    }
}

/// Passes when every condition holds; serviced by `handler` otherwise.
pub(super) const fn pass_if_else_serve(conds: &'static [Cond], handler: Handler) -> Entry {
    Entry {
        rule: Rule::PassIf(conds, Fallback::Service),
        handler: Some(handler),
    }
}

/// Passes when every condition holds; answered `e` otherwise.
pub(super) const fn pass_if_else_deny(conds: &'static [Cond], e: Errno) -> Entry {
    Entry {
        rule: Rule::PassIf(conds, Fallback::Deny(e)),
        handler: None,
    }
}
