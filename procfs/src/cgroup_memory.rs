//! The sandbox cgroup's memory as `/proc/meminfo`'s lines tell it: the
//! figures of the cgroup's `memory.stat` (v2's names, or v1's
//! hierarchical `total_` ones) under the name of each meminfo line they
//! make, in bytes.
//!
//! Does not own: reading the file (the engine's counters, or the
//! outside cgroup's readers in `outside.rs`), or the rest of meminfo's
//! text (`limit_texts.rs`).

/// The meminfo lines a cgroup tells, each with the `memory.stat` keys
/// (v2's names; v1's `total_` ones are renamed to them: `v2_name`) whose
/// sum it is. A line whose keys the cgroup's version lacks is 0: the
/// cgroup charges no such memory to the sandbox by that name (v1 tells
/// no slab, stacks or page tables apart), and the host's figure is the
/// host's, not the sandbox's.
const LINES: &[(&str, &[&str])] = &[
    ("Buffers", &[]),
    ("Cached", &["file"]),
    ("Active", &["active_anon", "active_file"]),
    ("Inactive", &["inactive_anon", "inactive_file"]),
    ("Active(anon)", &["active_anon"]),
    ("Inactive(anon)", &["inactive_anon"]),
    ("Active(file)", &["active_file"]),
    ("Inactive(file)", &["inactive_file"]),
    ("Unevictable", &["unevictable"]),
    ("Dirty", &["file_dirty"]),
    ("Writeback", &["file_writeback"]),
    ("AnonPages", &["anon"]),
    ("Mapped", &["file_mapped"]),
    ("Shmem", &["shmem"]),
    ("KReclaimable", &["slab_reclaimable"]),
    ("Slab", &["slab"]),
    ("SReclaimable", &["slab_reclaimable"]),
    ("SUnreclaim", &["slab_unreclaimable"]),
    ("KernelStack", &["kernel_stack"]),
    ("PageTables", &["pagetables"]),
    ("SecPageTables", &["sec_pagetables"]),
    ("NFS_Unstable", &[]),
    ("Bounce", &[]),
    ("WritebackTmp", &[]),
    ("Percpu", &["percpu"]),
    ("AnonHugePages", &["anon_thp"]),
    ("ShmemHugePages", &["shmem_thp"]),
    ("ShmemPmdMapped", &[]),
    ("FileHugePages", &["file_thp"]),
    ("FilePmdMapped", &[]),
];

/// How many memory.stat figures `slot` keeps.
const SLOTS: usize = 21;

/// Where the figure of v2's memory.stat key `key` is kept, if `LINES`
/// reads it.
fn slot(key: &str) -> Option<usize> {
    Some(match key {
        "anon" => 0,
        "file" => 1,
        "shmem" => 2,
        "file_mapped" => 3,
        "file_dirty" => 4,
        "file_writeback" => 5,
        "active_anon" => 6,
        "inactive_anon" => 7,
        "active_file" => 8,
        "inactive_file" => 9,
        "unevictable" => 10,
        "slab" => 11,
        "slab_reclaimable" => 12,
        "slab_unreclaimable" => 13,
        "kernel_stack" => 14,
        "pagetables" => 15,
        "sec_pagetables" => 16,
        "percpu" => 17,
        "anon_thp" => 18,
        "shmem_thp" => 19,
        "file_thp" => 20,
        _ => return None,
    })
}

/// v2's name of v1's hierarchical figure `total_NAME` (given NAME).
fn v2_name(v1: &str) -> &str {
    match v1 {
        "cache" => "file",
        "rss" => "anon",
        "rss_huge" => "anon_thp",
        "mapped_file" => "file_mapped",
        "dirty" => "file_dirty",
        "writeback" => "file_writeback",
        same => same,
    }
}

/// One `memory.stat` text, read as meminfo's lines: the figures `LINES`
/// reads, taken in one pass.
pub struct CgroupMemory {
    figures: [u64; SLOTS],
}

impl CgroupMemory {
    /// The cgroup's `memory.stat` text; `None` when it is neither v2's
    /// (which has `file`) nor v1's (which has `total_cache`).
    pub fn new(stat: &str) -> Option<CgroupMemory> {
        let (mut v2, mut v1) = ([0; SLOTS], [0; SLOTS]);
        let (mut is_v2, mut is_v1) = (false, false);
        for (key, value) in stat.lines().filter_map(|l| l.split_once(' ')) {
            let (figures, name) = match key.strip_prefix("total_") {
                Some(name) => {
                    is_v1 |= name == "cache";
                    (&mut v1, v2_name(name))
                }
                None => {
                    is_v2 |= key == "file";
                    (&mut v2, key)
                }
            };
            if let Some(at) = slot(name) {
                figures[at] = value.trim().parse().unwrap_or(0);
            }
        }
        match (is_v2, is_v1) {
            (true, _) => Some(CgroupMemory { figures: v2 }),
            (false, true) => Some(CgroupMemory { figures: v1 }),
            _ => None,
        }
    }

    /// The bytes meminfo's line `key` shows for the cgroup; `None` for a
    /// line the cgroup does not tell.
    pub fn line(&self, key: &str) -> Option<u64> {
        let (_, keys) = LINES.iter().find(|(k, _)| *k == key)?;
        Some(
            keys.iter()
                .filter_map(|k| slot(k))
                .map(|at| self.figures[at])
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_and_v1_names_make_the_same_lines() {
        let v2 = "anon 100\nfile 300\nshmem 40\nslab 8\nslab_reclaimable 5\n\
slab_unreclaimable 3\nactive_anon 60\ninactive_anon 80\nactive_file 200\ninactive_file 60\n";
        let m = CgroupMemory::new(v2).unwrap();
        assert_eq!(m.line("Cached"), Some(300));
        assert_eq!(m.line("Shmem"), Some(40));
        assert_eq!(m.line("Active"), Some(260));
        assert_eq!(m.line("SReclaimable"), Some(5));
        assert_eq!(m.line("Buffers"), Some(0));
        assert_eq!(m.line("MemTotal"), None);
        let v1 = "cache 1\nrss 2\nshmem 3\ntotal_cache 300\ntotal_rss 100\ntotal_shmem 40\n\
total_active_anon 60\ntotal_active_file 200\n";
        let m = CgroupMemory::new(v1).unwrap();
        assert_eq!(m.line("Cached"), Some(300));
        assert_eq!(m.line("AnonPages"), Some(100));
        assert_eq!(m.line("Shmem"), Some(40));
        assert_eq!(m.line("Active"), Some(260));
        assert_eq!(m.line("SReclaimable"), Some(0));
        assert!(CgroupMemory::new("nonsense\n\u{0}file").is_none());
    }
}
