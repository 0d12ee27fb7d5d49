//! The integration tests of `aibuddy-exec`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-exec --test all <name>::`.

// Kept apart, each its own binary: `tests/run.rs` sets environment variables of the test process;
// `tests/boundary.rs` and `tests/protected_paths.rs` kill a helper app and check what it leaves
// until the next app start, which any other test starting the helper would sweep first;
// `tests/nproc.rs` runs fork bombs, which as root exhaust the machine's processes for every test
// running beside them in the same binary (seen: "Cannot fork" in other tests).

// Support modules shared by the test modules (each uses a subset).
#[path = "../../../../tests/support/registry.rs"]
mod registry;
#[path = "../support/mod.rs"]
mod support;

// One module per former test file (tests/<name>.rs, one binary each before).
mod background;
mod credentials_hidden;
mod early_stop;
mod keyring_denied;
mod live;
mod netproxy;
mod no_init;
mod prop_projection;
mod spool;
mod syscalls_refused;
mod threaded_init;
