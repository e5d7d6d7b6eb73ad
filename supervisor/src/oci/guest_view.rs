//! What a container's guest is told of its limits (/proc/meminfo, nproc,
//! the /proc/sys sizes): the bundle's `linux.resources` figures
//! (`Bundle::guest_view`), with the memory in use and the memory limit
//! read from the container's cgroup at each open, so that an `update`
//! (`docker update --memory`) shows in the next read of /proc/meminfo.
//!
//! Owns: which cgroup files give those two figures and reading them.
//! Does not own the limits' enforcement (`resources.rs`), the
//! directories (`cgroup.rs`), or the texts served (the syscalls crate).

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::cgroup::ContainerCgroup;
use crate::run::{GuestView, Reading};

/// `view` (the bundle's figures) with readers of the container's memory
/// cgroup, when it has one. The files are opened now, before the
/// monitor confines itself.
pub fn with_cgroup(mut view: GuestView, cgroup: &ContainerCgroup) -> GuestView {
    if view.memory.is_none() {
        return view;
    }
    let v2 = cgroup.v2.is_some();
    let Some(dir) = cgroup.dir_of("memory") else {
        return view;
    };
    let open = |v1: &str, v2_name: &str| File::open(dir.join(if v2 { v2_name } else { v1 })).ok();
    view.memory_usage = open("memory.usage_in_bytes", "memory.current").map(reader);
    view.memory_limit_now = open("memory.limit_in_bytes", "memory.max").map(reader);
    view
}

/// Reads the number at the start of `file` at each call ("max", v2's
/// no limit, is `u64::MAX`: the host's memory).
fn reader(file: File) -> Reading {
    Box::new(move || {
        let mut buf = [0u8; 64];
        let n = file.read_at(&mut buf, 0).ok()?;
        parse_figure(buf.get(..n)?)
    })
}

fn parse_figure(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    match text {
        "max" => Some(u64::MAX),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_figure;

    #[test]
    fn figures_are_numbers_or_max() {
        assert_eq!(parse_figure(b"67108864\n"), Some(64 << 20));
        assert_eq!(parse_figure(b"max\n"), Some(u64::MAX));
        assert_eq!(parse_figure(b""), None);
        assert_eq!(parse_figure(b"\xff"), None);
    }
}
