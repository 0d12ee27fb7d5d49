#!/usr/bin/env bash
# Desktop shell tests and the end-to-end window test, sharing ONE build of the shell:
#   1. ui/dist (Vite), embedded by the custom-protocol feature;
#   2. `cargo test -p aibuddy-desktop --features custom-protocol`: shell unit tests, tauri mock-runtime
#      command tests, the bindings staleness check, the no-display test, and (as a side effect, because
#      the crate has integration tests) target/debug/aibuddy-desktop, the real app;
#   3. that binary driven through tauri-driver + WebKitWebDriver under Xvfb: tests/e2e/window.test.mjs
#      (project, catalog, console, history) and tests/e2e/flows.test.mjs (an agent run against the
#      protocol-checking fake provider: approve, reject a write, answer a question, stop, history).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
step() { printf '\n--> %s\n' "$*"; }

step "web UI build (ui/dist, embedded in the app)"
npm run --silent build

step "desktop shell tests (mock runtime, bindings, no-display); builds the app once"
cargo test --locked -p aibuddy-desktop --features custom-protocol

step "CLI binary (reference listing for the window test)"
cargo build --locked -p aibuddy --bin aibuddy

step "command sandbox init (beside the app, as make run has it)"
cargo build --locked -p aibuddy-exec --bin aibuddy-exec-init

step "fake provider (scripted model server for the run flows)"
cargo build --locked -p aibuddy-provider --features testing --bin fake-provider

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
