//! config.json's parsing against documents: what is read, what is
//! refused and with which message, what is left unread.

use super::*;
use serde_json::json;

fn spec(v: serde_json::Value) -> Result<Spec, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

fn with_process(process: serde_json::Value) -> Result<Spec, String> {
    spec(json!({"ociVersion": "1.0.2", "process": process}))
}

#[test]
fn the_fields_read_come_through() {
    let s = spec(json!({
        "ociVersion": "1.0.2",
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "h",
        "mounts": [{"destination": "/d", "type": "bind", "source": "/s", "options": ["ro"]}],
        "process": {
            "terminal": true, "user": {"uid": 1, "gid": 2, "additionalGids": [3]},
            "args": ["sh"], "env": ["A=b"], "cwd": "/w",
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 9, "soft": 8}]
        },
        "hooks": {"poststop": [{"path": "/h", "args": ["h", "x"], "timeout": 5}]},
        "annotations": {"k": "v"},
        "linux": {
            "cgroupsPath": "/c", "maskedPaths": ["/m"], "readonlyPaths": ["/r"],
            "resources": {"memory": {"limit": 10, "swap": 20}, "cpu": {"shares": 1, "quota": 2, "period": 3}, "pids": {"limit": 4}},
            "seccomp": {"defaultAction": "SCMP_ACT_ALLOW"}
        },
        "vm": {"anything": "not read"}
    }))
    .unwrap();
    let root = s.root().as_ref().unwrap();
    assert_eq!(
        (root.path(), root.readonly()),
        (&PathBuf::from("rootfs"), Some(true))
    );
    let p = s.process().as_ref().unwrap();
    assert_eq!((p.terminal(), p.cwd()), (Some(true), &PathBuf::from("/w")));
    assert_eq!((p.user().uid(), p.user().gid()), (1, 2));
    assert_eq!(p.user().additional_gids(), &Some(vec![3]));
    let rl = &p.rlimits().as_ref().unwrap()[0];
    assert_eq!(
        (rl.typ(), rl.hard(), rl.soft()),
        (PosixRlimitType::RlimitNofile, 9, 8)
    );
    let m = &s.mounts().as_ref().unwrap()[0];
    assert_eq!(
        (m.typ().as_deref(), m.options().as_ref().map(Vec::len)),
        (Some("bind"), Some(1))
    );
    let hook = &s.hooks().as_ref().unwrap().poststop().as_ref().unwrap()[0];
    assert_eq!(
        (hook.path(), hook.timeout()),
        (&PathBuf::from("/h"), Some(5))
    );
    let linux = s.linux().as_ref().unwrap();
    let res = linux.resources().as_ref().unwrap();
    assert_eq!(res.memory().unwrap().swap(), Some(20));
    assert_eq!(res.cpu().unwrap().period(), Some(3));
    assert_eq!(res.pids().unwrap().limit(), 4);
    assert_eq!(linux.cgroups_path(), &Some(PathBuf::from("/c")));
    assert_eq!(s.annotations().as_ref().unwrap()["k"], "v");
}

#[test]
fn what_runc_refuses_in_the_fields_read_is_refused() {
    let process = |extra: serde_json::Value| {
        let mut p = json!({"user": {"uid": 0, "gid": 0}, "cwd": "/"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        with_process(p)
    };
    assert!(process(json!({})).is_ok());
    for bad in [
        json!({"args": "sh"}),
        json!({"terminal": "yes"}),
        json!({"user": {"uid": -1, "gid": 0}}),
        json!({"rlimits": [{"type": "RLIMIT_BOGUS", "hard": 1, "soft": 1}]}),
        json!({"rlimits": [{"hard": 1, "soft": 1}]}),
    ] {
        assert!(process(bad.clone()).is_err(), "{bad}");
    }
    assert!(with_process(json!({"cwd": "/"})).is_err(), "no user");
    assert!(with_process(json!({"user": {}})).is_err(), "no cwd");
    assert!(spec(json!({"mounts": [{"type": "tmpfs"}]})).is_err());
    assert!(spec(json!({"hooks": {"prestart": [{"args": []}]}})).is_err());
    assert!(spec(json!({"linux": {"resources": {"memory": {"limit": "1G"}}}})).is_err());
}

#[test]
fn a_cpu_affinity_must_be_a_cpu_list() {
    let affinity = |list: &str| {
        with_process(json!({
            "user": {}, "cwd": "/",
            "execCPUAffinity": {"initial": "0", "final": list}
        }))
    };
    for good in ["0", "0-1,0", "3,5-7,12"] {
        assert!(affinity(good).is_ok(), "{good}");
    }
    for bad in ["", "0-x", "1-2-3", "1,", ",1", "-1", "1-", " 1", "١"] {
        let err = affinity(bad).unwrap_err();
        assert!(
            err.contains(&format!("Invalid execCPUAffinity format: {bad}")),
            "{bad}: {err}"
        );
    }
}

#[test]
fn the_default_config_is_one_the_runtime_reads() {
    let s: Spec = serde_json::from_str(include_str!("../default_config.json")).unwrap();
    let p = s.process().as_ref().unwrap();
    assert_eq!(
        (p.args(), p.terminal()),
        (&Some(vec!["sh".into()]), Some(true))
    );
    assert_eq!(s.root().as_ref().unwrap().path(), &PathBuf::from("rootfs"));
}

#[test]
fn a_hook_serializes_as_it_was_read() {
    let text = r#"{"path":"/h","args":["h","x"],"timeout":5}"#;
    let hook: Hook = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&hook).unwrap(), text);
}
