//! `linux.resources` (memory, pids, cpu) written into a container's
//! cgroup (`cgroup.rs`), at `create` and by `update`.
//!
//! Owns: which file each limit goes to under v1 and v2, and the pids
//! limit's allowance for the runtime's own tasks. Does not own where the
//! directories are or who is in them (`cgroup.rs`).

use super::config::LinuxResources;

use super::cgroup::{write, ContainerCgroup};

/// The runtime's own tasks in the v1 pids directory: the anchor (which
/// joins it so that the shim, which finds the container's cgroups by the
/// anchor's pid, reads the right `pids.current`) and the sandbox's init.
/// `pids.max` is the container's limit plus these, so that the guest may
/// start as many processes as under runc.
pub(super) const V1_PIDS_OVERHEAD: i64 = 2;

/// The runtime's own tasks in the v2 `sandbox` leaf, where `pids.max`
/// goes: the anchor (as under v1) and the sandbox's init (the monitor is
/// in the `monitor` leaf beside it).
pub(super) const V2_PIDS_OVERHEAD: i64 = 2;

impl ContainerCgroup {
    /// Writes the memory, pids and cpu parts of `res`.
    pub fn set_resources(&self, res: &LinuxResources) -> Result<(), String> {
        let v2 = self.v2.is_some();
        if let (Some(mem), Some(dir)) = (res.memory(), self.dir_of("memory")) {
            if let Some(limit) = mem.limit().filter(|l| *l > 0) {
                if v2 {
                    write(dir, "memory.max", &limit.to_string())?;
                    // The anchor's leaf too: the engine's shim reads the
                    // limit where the anchor is (`docker stats`).
                    if let Some(leaf) = self.pids_dir().filter(|l| l.join("memory.max").exists()) {
                        write(&leaf, "memory.max", &limit.to_string())?;
                    }
                } else {
                    // memsw must stay >= the limit: lower it after, raise it first.
                    let _ = write(dir, "memory.memsw.limit_in_bytes", "-1");
                    write(dir, "memory.limit_in_bytes", &limit.to_string())?;
                    if let Some(swap) = mem.swap().filter(|s| *s >= limit) {
                        let _ = write(dir, "memory.memsw.limit_in_bytes", &swap.to_string());
                    }
                }
            }
        }
        if let (Some(pids), Some(dir)) = (res.pids(), self.pids_dir()) {
            let max = match pids.limit() {
                n if n > 0 => n.saturating_add(self.pids_overhead()).to_string(),
                _ => "max".to_string(),
            };
            write(&dir, "pids.max", &max)?;
        }
        if let (Some(cpu), Some(dir)) = (res.cpu(), self.dir_of("cpu")) {
            let period = cpu.period().unwrap_or(100_000);
            if let Some(quota) = cpu.quota().filter(|q| *q > 0) {
                if v2 {
                    write(dir, "cpu.max", &format!("{quota} {period}"))?;
                } else {
                    write(dir, "cpu.cfs_period_us", &period.to_string())?;
                    write(dir, "cpu.cfs_quota_us", &quota.to_string())?;
                }
            }
            if let (Some(shares), false) = (cpu.shares().filter(|s| *s > 0), v2) {
                let _ = write(dir, "cpu.shares", &shares.to_string());
            }
        }
        Ok(())
    }

    /// The runtime's own tasks counted by [`ContainerCgroup::pids_dir`]'s
    /// `pids.max`, beside the container's limit.
    pub(super) fn pids_overhead(&self) -> i64 {
        match self.v2 {
            Some(_) => V2_PIDS_OVERHEAD,
            None => V1_PIDS_OVERHEAD,
        }
    }
}

/// Whether `res` limits memory, pids or CPU time.
pub(super) fn has_limits(res: &LinuxResources) -> bool {
    let memory = (res.memory().as_ref()).is_some_and(|m| m.limit().is_some_and(|l| l > 0));
    let pids = (res.pids().as_ref()).is_some_and(|p| p.limit() > 0);
    let cpu = (res.cpu().as_ref()).is_some_and(|c| c.quota().is_some_and(|q| q > 0));
    memory || pids || cpu
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> LinuxResources {
        serde_json::from_str(json).expect("resources json")
    }

    #[test]
    fn limits_are_memory_pids_or_cpu_quota() {
        assert!(!has_limits(&parse("{}")));
        assert!(!has_limits(&parse(r#"{"cpu": {"shares": 512}}"#)));
        assert!(!has_limits(&parse(r#"{"pids": {"limit": 0}}"#)));
        assert!(has_limits(&parse(r#"{"memory": {"limit": 67108864}}"#)));
        assert!(has_limits(&parse(r#"{"pids": {"limit": 4}}"#)));
        assert!(has_limits(&parse(r#"{"cpu": {"quota": 50000}}"#)));
    }
}
