//! Started with no display, the real binary says so, points to `xvfb-run make run`, and exits
//! non-zero before touching GTK.

use std::process::Command;

#[test]
fn without_a_display_the_app_explains_and_exits_non_zero() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_aibuddy-desktop"))
        .arg(project.path())
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no display found"), "stderr: {stderr}");
    assert!(stderr.contains("xvfb-run make run"), "stderr: {stderr}");
}
