#!/usr/bin/env bash
# The end-to-end window test: the real app (target/debug/aibuddy-desktop, with the custom-protocol
# feature, ui/dist embedded) driven through tauri-driver + WebKitWebDriver under Xvfb:
# tests/e2e/window.test.mjs (project, catalog, console, history) and tests/e2e/flows.test.mjs (agent
# runs against the protocol-checking fake provider: approve, reject a write, answer a question,
# stop, history). The binaries come from the one test build (scripts/build-tests.sh; `make test`
# has run it already, run alone this script runs it). The desktop shell's own tests (mock runtime,
# bindings, no-display) are part of the workspace's `cargo test` in scripts/test.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
step() { printf '\n--> %s\n' "$*"; }

step "the test build (ui/dist and every Rust target; skipped when make test built it)"
bash scripts/build-tests.sh

step "tauri-driver"
driver="$(bash scripts/install-tauri-driver.sh)"
native="$(command -v WebKitWebDriver || true)"
if [ -z "$native" ]; then
  echo "test-e2e: WebKitWebDriver not found (apt package webkit2gtk-driver; scripts/setup.sh installs it)" >&2
  exit 1
fi

step "end-to-end: the real window under Xvfb"
target_dir="${CARGO_TARGET_DIR:-$here/target}"
export AIBUDDY_DESKTOP_BIN="$target_dir/debug/aibuddy-desktop"
export AIBUDDY_CLI_BIN="$target_dir/debug/aibuddy"
export FAKE_PROVIDER_BIN="$target_dir/debug/fake-provider"
export TAURI_DRIVER="$driver"
export E2E_ARTIFACTS="$here/target/e2e"
xvfb-run --auto-servernum --server-args="-screen 0 1280x860x24" \
  node --test --test-concurrency=1 --test-reporter=spec tests/e2e/window.test.mjs tests/e2e/flows.test.mjs
echo "test-e2e: screenshots of the window: $E2E_ARTIFACTS/window.png, $here/target/e2e-screenshots/{window,flow}-*.png"
