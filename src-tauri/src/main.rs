// The aibuddy desktop app: opens one project folder in a window.
//
//     aibuddy-desktop [PROJECT_DIR] [--data-dir DIR]
//
// Without PROJECT_DIR the window opens on the welcome view (recent projects, the folder dialog).
//
// Hide the console window on Windows release builds; no effect elsewhere.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

use aibuddy::app::{App, AppOptions, default_data_dir};
use aibuddy::plane::{MCP_CONNECT_WAIT_ENV, PlaneOptions, connect_wait};
use aibuddy_desktop::{Args, NO_DISPLAY_MESSAGE, ShellState, has_display};
use clap::Parser;
use tauri::Manager;

fn main() -> ExitCode {
    // Before argument parsing: bubblewrap may start this binary as a command sandbox's init.
    aibuddy::dispatch_exec_init();
    let args = Args::parse();

    // Before GTK: it would abort with a bare "cannot open display".
    let x11 = std::env::var("DISPLAY").ok();
    let wayland = std::env::var("WAYLAND_DISPLAY").ok();
    if cfg!(target_os = "linux") && !has_display(x11.as_deref(), wayland.as_deref()) {
        eprintln!("{NO_DISPLAY_MESSAGE}");
        return ExitCode::from(2);
    }

    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let _log_guard = aibuddy::logging::init_file(&data_dir);

    // The shell is an edge: it reads the environment and hands the plane its options.
    aibuddy::skills::set_bundled_dir(
        std::env::var_os(aibuddy::skills::SKILLS_DIR_ENV).map(Into::into),
    );
    let plane = PlaneOptions {
        mcp_connect_wait: connect_wait(std::env::var(MCP_CONNECT_WAIT_ENV).ok().as_deref()),
        mcp_token_vault: Some(std::sync::Arc::new(aibuddy::plane::KeyringVault)),
        ..PlaneOptions::default()
    };
    // Without a project on the command line the window opens on the welcome view (recent projects,
    // the folder dialog). With one, startup stops here, with every problem listed, when the project
    // cannot be opened or the registry is inconsistent.
    let state = match args.project {
        None => ShellState::empty(data_dir, plane),
        Some(project) => {
            let opened = App::open_with(AppOptions { project, data_dir }, plane.clone());
            let app = match tauri::async_runtime::block_on(opened) {
                Ok(app) => app,
                Err(error) => {
                    tracing::error!(%error, "startup stopped");
                    eprintln!("aibuddy-desktop: {error}");
                    return ExitCode::from(1);
                }
            };
            tracing::info!(project = %app.project_root.display(), "desktop app starting");
            let root = app.project_root.display().to_string();
            let state = ShellState::new(app).with_plane(plane);
            aibuddy_desktop::projects::remember(&state, &root);
            state
        }
    };

    let builder = aibuddy_desktop::wire(tauri::Builder::default(), state);
    let app = match builder.build(aibuddy_desktop::context()) {
        Ok(app) => app,
        Err(error) => {
            tracing::error!(%error, "the window could not start");
            eprintln!("aibuddy-desktop: the window could not start: {error}");
            return ExitCode::from(1);
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            aibuddy_desktop::on_exit(&handle.state::<ShellState>());
        }
    });
    ExitCode::SUCCESS
}
