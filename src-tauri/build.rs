//! Tauri build step: reads the single root `tauri.conf.json` and declares the app's own commands, so
//! `capabilities/` can grant each of them by name (`allow-<command>`) and nothing else.

include!("src/command_names.rs");

fn main() {
    // `include!` is invisible to cargo's change tracking.
    println!("cargo:rerun-if-changed=src/command_names.rs");
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        // A build script reports failure by panicking; the message names the cause.
        panic!("tauri build step failed: {error:#}");
    }
}
