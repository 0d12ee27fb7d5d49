// The aibuddy desktop app: opens one project folder in a window.
//
//     aibuddy-desktop [PROJECT_DIR] [--data-dir DIR]
//
// Without PROJECT_DIR the window opens on the welcome view (recent projects, the folder dialog).
//
// Hide the console window on Windows release builds; no effect elsewhere.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aibuddy::app::{App, AppOptions, default_data_dir};
use aibuddy::plane::{MCP_CONNECT_WAIT_ENV, PlaneOptions, connect_wait};
use aibuddy_desktop::{Args, NO_DISPLAY_MESSAGE, ShellState, has_display};
use clap::Parser;
use tauri::Manager;

/// The bundled skills inside the app's resource dir (`bundle.resources` in tauri.conf.json).
const SKILLS_RESOURCE: &str = "skills";

/// The bundled skills folder: the person's `AIBUDDY_SKILLS_DIR` first, else the installed app's
/// resource dir when it holds the skills (a .deb puts them in `/usr/lib/aibuddy/skills`), else
/// `None`: the library's default search (beside the executable, or the source tree for a
/// development build).
fn bundled_skills(
    env_override: Option<PathBuf>,
    in_resources: Option<PathBuf>,
    is_dir: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    env_override.or_else(|| in_resources.filter(|dir| is_dir(dir)))
}

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
    let context = aibuddy_desktop::context();
    let resources =
        tauri::utils::platform::resource_dir(context.package_info(), &tauri::Env::default());
    let skills = bundled_skills(
        std::env::var_os(aibuddy::skills::SKILLS_DIR_ENV).map(Into::into),
        resources.ok().map(|dir| dir.join(SKILLS_RESOURCE)),
        Path::is_dir,
    );
    tracing::info!(dir = ?skills, "bundled skills folder (None: next to the executable or the source tree)");
    let plane = PlaneOptions {
        bundled_skills: skills,
        mcp_connect_wait: connect_wait(std::env::var(MCP_CONNECT_WAIT_ENV).ok().as_deref()),
        mcp_token_vault: Some(std::sync::Arc::new(aibuddy::plane::KeyringVault)),
        // The window runs agents: the first `tool_search` should not wait for the index.
        prewarm_search: true,
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
    let app = match builder.build(context) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_then_the_resource_dir_when_it_holds_skills() {
        let env = Some(PathBuf::from("/env/skills"));
        let res = Some(PathBuf::from("/usr/lib/aibuddy/skills"));
        assert_eq!(bundled_skills(env.clone(), res.clone(), |_| true), env);
        assert_eq!(bundled_skills(None, res.clone(), |_| true), res);
        // A development build: no resource dir with skills, so the library searches.
        assert_eq!(bundled_skills(None, res, |_| false), None);
        assert_eq!(bundled_skills(None, None, |_| true), None);
    }
}
