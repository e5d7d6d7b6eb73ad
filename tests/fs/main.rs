//! The file system the guest sees and the serviced path calls: the view
//! and its mounts (`--rootfs`, `--ro`, `--rw`, `--tmpfs`, `--mask`,
//! `--remount-ro`, the `--disk` quota), path calls compared with native
//! runs (fsprobe, the names made and the attributes set by path), the
//! sandbox's caches of resolved paths, blocking FIFO opens, fast reads
//! and the static programs that go without them (and the trampoline of
//! their rewritten sites, turned against by a hostile one), device nodes and set-id
//! bits of the guest's own files,
//! and what the guest shares with the host (devices, sockets and FIFOs
//! beneath the current directory, inotify on host file systems).
//!
//! The guest scripts the modules run are the `*.py` files beside them.
//! Not here: escapes out of the view (`tests/security/`), /proc
//! (`tests/procfs/`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod device_nodes;
mod dircache;
mod fast_reads;
mod fast_reads_any_libc;
mod fifo;
mod fsprobe;
mod host_shared;
mod host_sockets;
mod host_watch;
mod ldso_opens;
mod ldso_start;
mod make_names;
mod mounts;
mod path_attrs;
mod remount_ro;
mod root_writes;
mod rw_mounts;
mod static_reads;
mod trampoline_hostile;
mod view;
