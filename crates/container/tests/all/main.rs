//! The integration tests of `aibuddy-container`, in one binary, against a real engine (Podman's
//! API service started by `support`). Run one with `cargo test -p aibuddy-container --test all NAME`.

#[path = "../../../../tests/support/registry.rs"]
mod registry;
mod support;

pub mod engine_faults;
mod exec;
mod files;
mod network;
mod sink;
mod sync;
