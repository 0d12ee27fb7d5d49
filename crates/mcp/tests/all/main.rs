//! The integration tests of `aibuddy-mcp`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-mcp --test all <name>::`.

// Kept apart, each its own binary: `tests/server_environment.rs` sets environment variables of the
// test process and installs the global tracing subscriber; `tests/oauth_sse.rs` counts token
// refreshes of a 2 s token, which a busy binary (the heavier tests beside it) made miss twice.

// Support modules shared by the test modules (each uses a subset).
#[path = "../common/mod.rs"]
mod common;
#[path = "../support/legacy_sse_server.rs"]
mod legacy_server;
#[path = "../support/oauth_fixture.rs"]
mod oauth_fixture;

// One module per former test file (tests/<name>.rs, one binary each before).
mod chaos;
mod config_vars;
mod conformance;
mod hostile_servers;
mod insufficient_scope;
mod legacy_sse;
mod misbehaving_servers;
mod oauth_needs_login;
mod oauth_refresh;
mod oauth_step_up;
mod prop_config;
mod prop_expand;
mod real_servers;
mod restart;
mod tool_filters;
