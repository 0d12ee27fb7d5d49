#!/usr/bin/env bash
# RUSTC_WORKSPACE_WRAPPER of `make test` (scripts/test.sh): the workspace's own crates are compiled
# by clippy-driver, which is rustc with clippy's lints registered (clippy's README: a drop-in
# replacement for rustc). So the lints ride on the one test build, instead of `cargo clippy`
# building every dependency a second time in check mode (4.5 of the 26 minutes of a fresh clone's
# `make test` on CI). Dependencies are compiled by plain rustc, as under `cargo clippy`.
# Warnings are errors, as with `cargo clippy -- -D warnings`. `make lint` still runs cargo clippy.
set -euo pipefail
exec clippy-driver "$@" -D warnings
