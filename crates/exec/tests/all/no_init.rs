//! The namespace path when the init program cannot be found: bubblewrap runs the shell under its
//! own reaper, the mounts and namespaces still confine it, and `confinement` says there is no
//! Landlock layer inside.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use aibuddy_exec::{Confinement, ExecRequest, NullSink, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn without_the_init_program_namespaces_still_apply_and_say_so() {
    let project = tempfile::tempdir().unwrap();
    // Visible in the sandbox (not under its private /tmp), or `denied` would prove nothing.
    let outside = support::visible_tempdir();
    let mut r = ExecRequest::new(
        format!(
            "touch {}/x || echo denied; echo $$",
            outside.path().display()
        ),
        project.path(),
    );
    r.init_program = Some("/nonexistent/aibuddy-exec-init".into());
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    assert_eq!(
        out.confinement,
        Confinement::Namespaces {
            landlock_abi: None,
            network_isolated: false,
            scopes: false
        }
    );
    assert_eq!(out.confinement.label(), "namespaces (no landlock)");
    let text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    assert!(text.contains("denied"), "{text}");
    assert!(!outside.path().join("x").exists());
    assert!(!out.killed_leftovers);

    // A timeout still ends the tree (at once: there is no init to forward SIGTERM).
    let mut r = ExecRequest::new("sleep 1091 & sleep 1091", project.path());
    r.init_program = Some("/nonexistent/aibuddy-exec-init".into());
    r.timeout = Duration::from_millis(500);
    let out = run(r, CancellationToken::new(), Arc::new(NullSink))
        .await
        .unwrap();
    assert!(out.timed_out);
    assert!(support::wait_no_process_with_args(
        &["sleep", "1091"],
        Duration::from_secs(5)
    ));
}
