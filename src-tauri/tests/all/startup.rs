//! Startup of the real binary, before any window: with no display it says so, points to
//! `xvfb-run make run`, and exits non-zero before touching GTK; a project that cannot be opened stops
//! startup with the reason.

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

#[test]
fn a_missing_project_stops_startup_with_the_reason() {
    let data = tempfile::tempdir().unwrap();
    let missing = data.path().join("no-such-project");
    let output = Command::new(env!("CARGO_BIN_EXE_aibuddy-desktop"))
        .arg(&missing)
        .arg("--data-dir")
        .arg(data.path())
        // A display is named (it need not exist): opening the project fails before GTK starts.
        .env("DISPLAY", ":4242")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("cannot be opened"), "stderr: {stderr}");
    assert!(stderr.contains("no-such-project"), "stderr: {stderr}");
}
