//! The integration tests of `aibuddy-store`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-store --test all <name>::`.

// One module per former test file (tests/<name>.rs, one binary each before).
mod calls;
mod durability;
mod history_query;
mod history_scope;
mod migrations;
mod recovery;
mod run_durability;
mod runs;
