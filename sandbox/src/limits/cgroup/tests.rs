//! Unit tests of the cgroup code (`cgroup.rs`).

use super::*;

const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 31 0:40 /docker/abc /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio
";
const CGROUP: &str = "\
8:pids:/
4:memory:/process_api/2ed2
2:cpuacct:/
1:cpu:/
7:blkio:/docker/abc/inner
0::/
";

#[test]
fn v1_hierarchies_are_found_beneath_our_own_cgroup() {
    let host = Host::parse(CGROUP, MOUNTINFO);
    assert_eq!(
        host.place(Controller::Memory),
        Some(Place::V1("/sys/fs/cgroup/memory/process_api/2ed2".into()))
    );
    assert_eq!(
        host.place(Controller::Pids),
        Some(Place::V1("/sys/fs/cgroup/pids".into()))
    );
    assert_eq!(
        host.place(Controller::CpuAcct),
        Some(Place::V1("/sys/fs/cgroup/cpuacct".into()))
    );
    // A mount whose root is a sub-cgroup: paths are relative to it.
    assert_eq!(
        host.v1
            .iter()
            .find(|(n, _)| n[0] == "blkio")
            .map(|(_, d)| d),
        Some(&PathBuf::from("/sys/fs/cgroup/blkio/inner"))
    );
}

#[test]
fn a_cgroup_outside_the_mount_root_is_not_used() {
    let host = Host::parse("7:blkio:/elsewhere\n", MOUNTINFO);
    assert!(host.v1.is_empty());
    let host = Host::parse("4:memory:/a/../..\n", MOUNTINFO);
    assert!(host.v1.is_empty());
}

#[test]
fn a_pure_v2_host_places_accounting_in_v2() {
    let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    let host = Host::parse("0::/user.slice/session-1.scope\n", mountinfo);
    // CPU accounting needs no delegated controller: every v2 cgroup has cpu.stat.
    assert_eq!(
        host.place(Controller::CpuAcct),
        Some(Place::V2(
            "/sys/fs/cgroup/user.slice/session-1.scope".into()
        ))
    );
    // The memory controller is not delegated to this (nonexistent) cgroup.
    assert_eq!(host.place(Controller::Memory), None);
}

/// A trap worker stuck in the sandbox's v1 cpu group (blocked in a
/// guest's call when the guest died) does not keep the group from being
/// removed: removal moves our own threads up first.
#[test]
fn a_thread_of_ours_left_in_the_cpu_group_does_not_keep_it() {
    let name = format!("unit-evict-{}", std::process::id());
    let cg = SandboxCgroup::create(&Host::discover(), &[Controller::Cpu], &name);
    let Some((guest_tasks, _ours)) = cg.worker_cpu_files() else {
        eprintln!("skipped: no v1 cpu hierarchy of its own here");
        cg.remove();
        return;
    };
    let dir = cg.dirs()[0].clone();
    let (joined_tx, joined_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let stuck = thread::spawn(move || {
        let _ = nix::unistd::write(&guest_tasks, b"0");
        let _ = joined_tx.send(());
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
    });
    joined_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread joined");
    let members = fs::read_to_string(dir.join("tasks")).unwrap_or_default();
    assert!(
        !members.trim().is_empty(),
        "the thread is in {}",
        dir.display()
    );
    cg.remove();
    let gone = !dir.exists();
    let _ = release_tx.send(());
    let _ = stuck.join();
    assert!(gone, "{} left behind", dir.display());
}

/// A directory left with the name a supervisor would take (a killed
/// supervisor's with our pid) makes the plan take the next free name,
/// which no hierarchy holds yet.
#[test]
fn a_leftover_with_our_name_gives_way() {
    let host = Host::discover();
    let wanted = [Controller::Memory, Controller::Pids, Controller::CpuAcct];
    let stem = format!("unit-free-{}", std::process::id());
    let taken = CgroupPlan::named(&host, &wanted, &stem);
    let Some(first) = taken.dirs().first().cloned() else {
        eprintln!("skipped: no cgroup hierarchy of ours here");
        return;
    };
    if fs::create_dir(&first).is_err() {
        eprintln!("skipped: cannot make a cgroup here");
        return;
    }
    let plan = CgroupPlan::free(&host, &wanted, &stem);
    let _ = fs::remove_dir(&first);
    assert_eq!(plan.dirs().len(), taken.dirs().len());
    for dir in plan.dirs() {
        assert!(
            dir.file_name() == Some(OsStr::new(&format!("{stem}-1"))),
            "{}",
            dir.display()
        );
        assert!(!dir.exists(), "{} exists", dir.display());
    }
}
