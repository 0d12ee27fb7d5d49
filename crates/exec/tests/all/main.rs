//! The integration tests of `aibuddy-exec`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-exec --test all <name>::`.

// Kept apart: `tests/run.rs` (its own binary: it sets environment variables of the test process).

// Support modules shared by the test modules (each uses a subset).
#[path = "../support/mod.rs"]
mod support;

// One module per former test file (tests/<name>.rs, one binary each before).
mod boundary;
mod credentials_hidden;
mod early_stop;
mod keyring_denied;
mod live;
mod netproxy;
mod no_init;
mod nproc;
mod prop_projection;
mod protected_paths;
mod spool;
mod syscalls_refused;
mod threaded_init;
