#!/usr/bin/env bash
# Installs what the end-to-end window test needs beyond scripts/setup.sh: tauri-driver 2.x, built
# from crates.io into the repo-local .tools/ (gitignored). WebKitWebDriver comes from the apt package
# webkit2gtk-driver (setup.sh). Prints the path of tauri-driver on stdout. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$here/.tools"
bin="$root/bin/tauri-driver"

if [ -x "$bin" ] && "$bin" --help >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
# crates.io's newest tauri-driver is a 3.0 alpha; the 2.x line drives Tauri 2 apps.
echo "install-tauri-driver: cargo install tauri-driver@^2 into $root" >&2
cargo install tauri-driver --locked --version '^2' --root "$root" --quiet >&2
echo "$bin"
