//! The guest's network ([`NetConfig`]): egress rules, published ports,
//! an OCI container's open egress and published listeners, and the
//! loopback it may share with another sandbox.
//!
//! Owns that part of the configuration's shape. Does not own the network
//! stack (`netstack`).

use serde::{Deserialize, Serialize};

use super::text;

/// The guest's network.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Egress rules (none: no egress).
    #[serde(with = "text::list")]
    pub allow: Vec<netstack::rules::Rule>,
    /// Guest listeners reachable from the host.
    #[serde(with = "text::list")]
    pub publish: Vec<netstack::publish::PublishSpec>,
    /// Egress to every destination but loopback that the supervisor's
    /// network namespace reaches (an OCI container's, as under runc);
    /// `allow` then names only the loopback destinations that are the
    /// namespace's (the engine's DNS resolver).
    #[serde(default)]
    pub open: bool,
    /// Every TCP listener the guest opens on a wildcard address, and every
    /// UDP socket it binds to one (with a port), is also published on the
    /// same port of the supervisor's network namespace's wildcard address
    /// (an OCI container's interfaces).
    #[serde(default)]
    pub publish_listeners: bool,
    /// The token of the netstack's names (`None`: a random one); an OCI
    /// container's is chosen by `create` and kept in its state, so that
    /// containers joining its network namespace can share its loopback.
    #[serde(default)]
    pub token: Option<String>,
    /// Another sandbox's loopback this one shares (the containers of one
    /// pod): the netstack's sockets are made in that sandbox's network
    /// namespace, named with its token (`token` must be it).
    #[serde(default)]
    pub shared_loopback: Option<SharedLoopback>,
}

/// The sandbox whose loopback another shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedLoopback {
    /// Its init's host pid (its user and network namespaces are opened
    /// through /proc at launch; its /proc/<pid>/net/unix lists the
    /// shared names).
    pub init: i32,
}

impl NetConfig {
    /// Whether the supervisor dials out for the guest (its confinement
    /// then allows internet sockets).
    pub fn has_egress(&self) -> bool {
        self.open || !self.allow.is_empty()
    }
}
