//! Tauri build step: reads the single root `tauri.conf.json` and declares the app's own commands, so
//! `capabilities/` can grant each of them by name (`allow-<command>`) and nothing else. The names
//! come from the one command table, `src/command_table.rs`, read by `src/table_names.rs`.

#[path = "src/table_names.rs"]
mod table_names;

const TABLE: &str = "src/command_table.rs";

fn main() {
    println!("cargo:rerun-if-changed={TABLE}");
    println!("cargo:rerun-if-changed=src/table_names.rs");
    // A build script reports failure by panicking; each message names the cause.
    let source = match std::fs::read_to_string(TABLE) {
        Ok(source) => source,
        Err(error) => panic!("cannot read the command table {TABLE}: {error}"),
    };
    let names = match table_names::command_names(&source) {
        Ok(names) => names,
        Err(error) => panic!("cannot read the command names of {TABLE}: {error}"),
    };
    // tauri-build keeps the names for the whole build step: leaked once, in a short-lived process.
    let names: Vec<&'static str> = names.into_iter().map(|n| &*n.leak()).collect();
    let names: &'static [&'static str] = names.leak();
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(names));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri build step failed: {error:#}");
    }
}
