//! The integration tests of `aibuddy-provider`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-provider --test all <name>::`.

// Support modules shared by the test modules (each uses a subset).
#[path = "../common/mod.rs"]
mod common;

// One module per former test file (tests/<name>.rs, one binary each before).
mod deferral;
mod failures;
mod fake_provider_bin;
mod hostile;
mod invariants;
mod request_shapes;
mod routes_stream;
