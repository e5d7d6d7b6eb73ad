//! What keeps the host safe: escapes stay inside the view (symlinks,
//! `..`, dirfd and /proc tricks, races against path resolution), denied
//! calls and hostile arguments to every serviced call, the guest's
//! privileges and Landlock fence, the supervisor's confinement of itself,
//! and the same sandbox for an unprivileged invoker.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod confine;
mod denied;
mod escapes;
mod fence;
mod hostile;
mod ids;
mod ids_caps;
mod ids_search;
mod privileges;
mod races;
mod surface;
mod unprivileged;
