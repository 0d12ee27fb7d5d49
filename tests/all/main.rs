//! The integration tests of the core and the CLI (`aibuddy`), gathered into one binary: each test
//! binary links the whole core, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test --test all <name>::`.

// Support modules shared by the test modules (each uses a subset).
#[path = "../agent_common/mod.rs"]
mod agent_common;
#[path = "../support/mod.rs"]
mod support;
// The real engine of the container sandbox's tests (podman's API service, the local image).
#[cfg(feature = "container")]
#[path = "../../crates/container/tests/all/support.rs"]
#[allow(dead_code, unused_macros)]
mod container_engine;

// One module per former test file (tests/<name>.rs, one binary each before).
mod agent_ask_user;
mod agent_background;
mod agent_compaction;
mod agent_elicitation;
mod agent_failures;
mod agent_heartbeat;
mod agent_kill9;
mod agent_late_servers;
mod agent_loop;
mod agent_provider_drift;
mod agent_responses;
mod agent_resume;
mod agent_stop_reasons;
mod agent_usage_events;
mod attack_mcp_cwd;
mod attack_trust;
mod attack_trust_files;
mod cli;
mod cli_ask_user;
mod cli_auth;
mod cli_background;
mod cli_call_startup;
mod cli_closed_stdout;
mod cli_early_stop;
mod cli_first_request_search;
mod cli_mcp;
mod cli_network;
mod cli_protected_paths;
mod cli_run;
mod cli_signals;
mod cli_subagent;
mod compaction_events;
mod compaction_runs;
mod discovery_cli;
mod discovery_mcp_bridge;
mod discovery_presentation;
mod discovery_real_servers;
mod discovery_search_recall;
mod execute_secrets;
mod execute_timeout;
mod hooks;
mod images;
mod instructions;
mod mcp_hostile_calls;
mod module_cycles;
mod pipeline;
mod prop_parsing;
#[cfg(feature = "container")]
mod sandbox_container_cli;
#[cfg(feature = "container")]
mod sandbox_container_engine;
mod sandbox_fs_tools;
mod settings_trust;
mod skills_catalog;
mod skills_confinement;
mod skills_view_skill;
mod store_cli;
mod store_pipeline;
mod terminal_mcp;
mod terminal_safety;
mod trust_cli;
mod trust_session;
