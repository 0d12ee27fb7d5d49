//! The integration tests of `aibuddy-checkpoint`, gathered into one binary: each test binary links the
//! crate and its dependencies, and linking dominated the test run. One module per former
//! `tests/<name>.rs`; run one with `cargo test -p aibuddy-checkpoint --test all <name>::`.

// One module per former test file (tests/<name>.rs, one binary each before).
mod foldercache;
mod roundtrip;
