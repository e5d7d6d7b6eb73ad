//! The OCI runtime (`supervisor oci`): its commands driven as containerd
//! drives runc, without an engine (`cli`, with its `exec`, `limits`
//! and `rootfs` cases), pause/resume of a guest mid-notification, and
//! the real engines using it as their runtime: Docker, Podman (also
//! rootless) and containerd, also through its CRI plugin as the kubelet
//! drives it (`cri`, with the tests' own CRI client), each
//! skipping with a printed reason when the engine is not installed;
//! and scripts/compare's OCI columns (`compare_script`).
//!
//! This process becomes a child subreaper at the first container `cli`
//! creates (as an engine's shim is), so that the container's monitor is
//! reparented to it. Every other test here waits for its own children by
//! pid and none counts this process's children; orphans of the engines
//! (their shims) then end as zombies of this process instead of init's,
//! which nothing here looks at.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod cli;
mod compare_script;
mod containerd;
mod cri;
mod docker;
mod networks;
mod pause;
mod podman;
mod pods;
mod rootless;
