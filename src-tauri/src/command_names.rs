// The shell's commands, by name. This file is `include!`d by build.rs (to declare them in the app
// manifest, so each becomes a grantable `allow-<name>` permission) and by the crate (tests check that
// the capability grants exactly these and that each is registered). Keep it a single constant.

/// Every command the shell registers, in the order of `generate_handler!`.
pub const COMMANDS: &[&str] = &[
    "project_info",
    "list_tools",
    "call_tool",
    "cancel_call",
    "answer_confirm",
    "list_history",
    "show_call",
    "start_run",
    "stop_run",
    "continue_run",
    "list_runs",
    "show_run",
    "answer_ask_user",
    "history_page",
    "history_facets",
    "call_record",
    "raw_output_range",
    "save_raw_output",
];
