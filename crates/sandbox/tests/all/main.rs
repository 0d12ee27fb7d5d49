//! The integration tests of `aibuddy-sandbox`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-sandbox --test all <name>::`.

// Support modules shared by the test modules (each uses a subset).
#[path = "../common/mod.rs"]
mod common;
#[path = "../immutable_fs/mod.rs"]
mod immutable_fs;
#[path = "../ops_support/mod.rs"]
mod ops_support;

// One module per former test file (tests/<name>.rs, one binary each before).
mod cancellation;
mod hostile_paths;
mod hostile_project;
mod operations;
mod operations_host;
mod operations_walk;
mod prop_edits;
mod prop_paths;
mod symlink_race;
mod walk_skipped;
