//! The integration tests of the desktop shell (`aibuddy-desktop`), gathered into one binary: each
//! test binary links the whole core and Tauri, and linking dominated the test run. One module per
//! former `tests/<name>.rs`; run one with `cargo test -p aibuddy-desktop --test all <name>::`.

// Support modules shared by the test modules (each uses a subset).
#[path = "../fake_run/mod.rs"]
mod fake_run;
#[path = "../../../tests/support/registry.rs"]
mod registry;
#[path = "../support/mod.rs"]
mod support;

// One module per former test file (tests/<name>.rs, one binary each before).
mod bindings;
mod calls;
mod command_table;
mod commands;
mod elicitation;
mod first_run;
mod history;
mod history_browser;
mod mcp_login;
mod projects;
mod run_call_stop;
mod runs;
mod settings;
mod startup;
mod sync_card;
mod trust;
