#!/usr/bin/env bash
# Installs everything aibuddy needs on a fresh Debian machine (run as root, or with sudo available).
# Idempotent: each step checks first and does nothing when already satisfied.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

APT_PACKAGES=(
  libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libsoup-3.0-dev
  libjavascriptcoregtk-4.1-dev build-essential pkg-config libssl-dev xvfb webkit2gtk-driver file
  ripgrep fd-find imagemagick xauth chromium
  bubblewrap perl time
  # the container sandbox's tests (crates/container): Podman's Docker-compatible API service,
  # with runc as its runtime (crates/container/tests/all/support.rs); uidmap as on the machine
  # where they were written (podman's newuidmap/newgidmap)
  podman runc uidmap
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages (UI, Tauri CLI, test tooling, MCP servers used by the tests)
if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi
# MCP servers used by the tests (pinned, repo-local in .tools/mcp; quick when already installed)
bash scripts/install-mcp-servers.sh

touch "$here/.setup-done"
