//! aibuddy core: the tool plane of an AI agent working inside a project folder.
//!
//! This crate knows nothing of Tauri, WebKit, clap or terminals; the desktop shell (`src-tauri`)
//! and the CLI (the `aibuddy` binary, `src/bin/aibuddy/`, built with the default `cli` feature)
//! are thin adapters over it. See `docs/architecture.md`.

pub mod agent;
pub mod app;
pub mod approvals;
pub mod call_record;
pub mod checkpoints;
pub mod confirm;
pub mod contract;
mod data_dir;
pub mod discovery;
pub mod events;
mod exec_request;
pub mod hooks;
pub mod host;
pub mod human;
pub mod logging;
pub mod pipeline;
pub mod plane;
pub mod processes;
pub mod registry;
pub mod results;
pub mod services;
pub mod settings;
pub mod settings_edit;
pub mod skills;
pub mod tools;
pub mod trust;
mod user_file;

/// Call first thing in `main` of every binary that may act as the command sandbox's init program
/// (`aibuddy-exec-init`): returns at once unless this process was started as that init.
pub use aibuddy_sandbox::aibuddy_exec::dispatch_init as dispatch_exec_init;
