#!/usr/bin/env bash
# The one debug build that every test suite of `make test` runs on:
#   1. ui/dist (Vite), which the desktop's custom-protocol feature embeds;
#   2. every target of the workspace (libraries, binaries, tests, benches, examples; the desktop with
#      the custom-protocol feature) in ONE cargo invocation, so ONE feature resolution.
# One resolution matters: `cargo build -p X` resolves features for X alone, and every such
# invocation after the test build recompiled dozens of crates (the CLI, the sandbox init, the fake
# provider and the app, ~2.5 min on CI). The window test (scripts/test-e2e.sh) and the package test
# (scripts/test-package.sh) start the binaries this build leaves in target/debug.
#
# scripts/test.sh runs it once and exports AIBUDDY_TEST_BUILD=done; the other scripts call it only
# when that is not set (run on their own, they build the same set).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

if [ "${AIBUDDY_TEST_BUILD:-}" = done ]; then
  exit 0
fi
printf -- '--> web UI build (ui/dist, embedded in the app)\n'
npm run --silent build
printf -- '--> every target of the workspace, one feature resolution\n'
cargo test --locked --workspace --all-targets --features aibuddy-desktop/custom-protocol --no-run
