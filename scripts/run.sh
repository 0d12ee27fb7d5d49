#!/usr/bin/env bash
# `make run [PROJECT=/path]`: builds the web UI and the desktop app, then opens the window on PROJECT
# (default: examples/sample-project). Needs a display: on a headless machine use `xvfb-run make run`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

project="${1:-$here/examples/sample-project}"

# Say so before spending minutes on a build whose window could not open.
if [ "$(uname -s)" = "Linux" ] && [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  cat >&2 <<'MSG'
make run: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set).
The desktop window needs an X11 or Wayland display. On a headless machine run it under a virtual one:
    xvfb-run make run
The headless CLI needs no display: cargo run --bin aibuddy -- tools list
MSG
  exit 2
fi

if [ ! -d "$project" ]; then
  echo "make run: project folder not found: $project" >&2
  exit 2
fi
project="$(cd "$project" && pwd)"

echo "==> building the web UI (ui/dist)"
npm run --silent build

# custom-protocol embeds ui/dist in the binary (no Vite dev server needed).
echo "==> building the desktop app"
cargo build --locked -p aibuddy-desktop --features custom-protocol
# The command sandbox's init program, beside the app binary (the app can act as it too, but it
# links WebKit and would start slower for every command).
cargo build --locked -p aibuddy-exec --bin aibuddy-exec-init

echo "==> opening $project"
exec "$here/target/debug/aibuddy-desktop" "$project"
