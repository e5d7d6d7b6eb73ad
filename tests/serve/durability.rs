//! A finished result the daemon answered is kept under `--data-dir` and
//! read back by id, also after the daemon restarts.

use serde_json::json;

use crate::common::serve::Daemon;

#[test]
fn a_result_survives_a_restart() {
    let d = Daemon::start(&[]);
    let first = d
        .http()
        .post_json(
            "/v1/executions",
            &json!({"command": ["sh", "-c", "echo kept; exit 7"]}),
        )
        .json();
    let id = first["id"].as_str().unwrap().to_string();
    assert_eq!(d.http().get(&format!("/v1/executions/{id}")).json(), first);
    let (status, dir) = d.stop();
    assert!(status.success(), "{status:?}");
    let d = Daemon::start_in(dir, &[], None);
    let again = d.http().get(&format!("/v1/executions/{id}"));
    assert_eq!(again.status, 200);
    assert_eq!(again.json(), first);
    assert_eq!(first["exit_code"], 7);
    assert_eq!(first["stdout"], "kept\n");
}
