//! Unit tests of the container's cgroup (`cgroup.rs`): which directory
//! holds what, without a host cgroup.

use super::*;

#[test]
fn the_sandbox_alone_is_in_the_directory_pause_freezes() {
    let v2 = ContainerCgroup {
        v1: Vec::new(),
        v2: Some(PathBuf::from("/u/c1")),
        systemd_unit: None,
    };
    // Parents first: removal goes in reverse, leaves before the container's.
    let dirs = ["/u/c1", "/u/c1/monitor", "/u/c1/sandbox"].map(PathBuf::from);
    assert_eq!(v2.dirs(), dirs);
    assert_eq!(v2.sandbox_dir(), Some(PathBuf::from("/u/c1/sandbox")));
    // The pids limit counts the sandbox's leaf, not the monitor's.
    assert_eq!(v2.pids_dir(), Some(PathBuf::from("/u/c1/sandbox")));
    let v1 = ContainerCgroup {
        v1: vec![
            (vec!["memory".into()], PathBuf::from("/m/c1")),
            (vec!["freezer".into()], PathBuf::from("/f/c1")),
        ],
        v2: None,
        systemd_unit: None,
    };
    assert_eq!(v1.sandbox_dir(), Some(PathBuf::from("/f/c1")));
    let no_freezer = ContainerCgroup {
        v1: vec![(vec!["memory".into()], PathBuf::from("/m/c1"))],
        v2: None,
        systemd_unit: None,
    };
    assert_eq!(no_freezer.sandbox_dir(), None);
}

#[test]
fn under_v1_the_monitor_stays_out_of_freezer_and_pids() {
    let v1 = ContainerCgroup {
        v1: vec![
            (vec!["memory".into()], PathBuf::from("/m/c1")),
            (vec!["pids".into()], PathBuf::from("/p/c1")),
            (vec!["cpu".into(), "cpuacct".into()], PathBuf::from("/c/c1")),
            (vec!["freezer".into()], PathBuf::from("/f/c1")),
        ],
        v2: None,
        systemd_unit: None,
    };
    assert_eq!(
        v1.v1_sandbox_only(),
        [Path::new("/p/c1"), Path::new("/f/c1")]
    );
    let v2 = ContainerCgroup {
        v1: Vec::new(),
        v2: Some(PathBuf::from("/u/c1")),
        systemd_unit: None,
    };
    assert!(v2.v1_sandbox_only().is_empty());
}
