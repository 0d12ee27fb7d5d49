#!/usr/bin/env bash
# UI tests: type check (tsc + svelte-check), vitest unit/component tests, then the built UI in headless
# Chromium (playwright-core, Debian's chromium) with the Tauri IPC and run events mocked
# (@tauri-apps/api/mocks) and the app's CSP enforced. Screenshots: target/ui, target/e2e-screenshots.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
step() { printf '\n--> %s\n' "$*"; }

# Install when missing or when package-lock.json changed since the last install (as setup.sh does).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

step "type check (tsc, then svelte-check over the components)"
npm run --silent typecheck

step "vitest"
npm test --silent

# `make test` built ui/dist from these sources already (scripts/build-tests.sh).
if [ "${AIBUDDY_TEST_BUILD:-}" != done ]; then
  step "web UI build (ui/dist)"
  npm run --silent build
fi

step "built UI in headless Chromium (IPC and run events mocked)"
chromium_bin="$(command -v chromium || true)"
if [ -z "$chromium_bin" ]; then
  echo "test-ui: installing Debian's chromium for the browser test"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null \
    || { "${sudo_cmd[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
  chromium_bin="$(command -v chromium)"
fi
CHROMIUM_BIN="$chromium_bin" node --test --test-reporter=spec --test-concurrency=1 \
  ui/browser-test/panel.test.mjs ui/browser-test/run.test.mjs ui/browser-test/perf.test.mjs ui/browser-test/project.test.mjs ui/browser-test/settings.test.mjs ui/browser-test/catalog.test.mjs \
  ui/browser-test/history.test.mjs ui/browser-test/elicitation.test.mjs ui/browser-test/run-follow.test.mjs ui/browser-test/first-run.test.mjs
