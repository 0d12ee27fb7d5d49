#!/usr/bin/env bash
# `make package`: the desktop app as a Debian package, built by the Tauri bundler from the root
# tauri.conf.json. The bundled skills ship as resources (`bundle.resources`) in
# /usr/lib/aibuddy/skills, where the installed app finds them through Tauri's resource dir; the
# command sandbox's init program ships beside the app in /usr/bin.
#
#   scripts/package.sh            release build (what `make package` ships)
#   scripts/package.sh --debug    debug build: the binaries of the one test build (scripts/build-tests.sh,
#                                 which `make test` has run already); the package test uses it so
#                                 `make test` pays no release build and no second feature resolution
#
# Why not plain `tauri build`: the Tauri CLI takes the folder of tauri.conf.json (the repository
# root) as the app crate, and the root package is the CLI `aibuddy`, so it would bundle the wrong
# binary. The binaries are built here with cargo exactly as `make run` builds them, then
# `tauri bundle` runs on a staged app folder naming the desktop binary, with the root config's
# paths made absolute.
#
# Progress goes to stderr; the last line of stdout is the path of the .deb.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

profile=release
cargo_flags=(--release)
bundle_flags=()
case "${1:-}" in
  --debug) profile=debug; cargo_flags=(); bundle_flags+=(--debug) ;;
  "") ;;
  *) echo "usage: scripts/package.sh [--debug]" >&2; exit 2 ;;
esac
target_dir="${CARGO_TARGET_DIR:-$here/target}"
export CARGO_TARGET_DIR="$target_dir"

if [ "$profile" = debug ]; then
  echo "==> desktop app and sandbox init (debug: the test build)" >&2
  bash scripts/build-tests.sh >&2
else
  {
    echo "==> web UI (ui/dist, embedded in the app)"
    npm run --silent build
    echo "==> desktop app and sandbox init ($profile)"
    cargo build --locked "${cargo_flags[@]}" -p aibuddy-desktop --features custom-protocol
    cargo build --locked "${cargo_flags[@]}" -p aibuddy-exec --bin aibuddy-exec-init
  } >&2
fi

stage="$target_dir/package-app"
rm -rf "$stage"
mkdir -p "$stage"
version="$(node -p 'require("./tauri.conf.json").version')"
cat > "$stage/Cargo.toml" <<TOML
# Staged by scripts/package.sh for \`tauri bundle\` only: names the desktop binary; never compiled.
[package]
name = "aibuddy-desktop"
version = "$version"
edition = "2021"

[[bin]]
name = "aibuddy-desktop"
path = "main.rs"

[workspace]
TOML
echo "fn main() {}" > "$stage/main.rs"
STAGE="$stage" INIT_BIN="$target_dir/$profile/aibuddy-exec-init" node - <<'JS'
// The root config with every path absolute (the bundler resolves them from the staged folder).
const fs = require("node:fs");
const path = require("node:path");
const root = process.cwd();
const conf = JSON.parse(fs.readFileSync("tauri.conf.json", "utf8"));
const abs = (p) => path.resolve(root, p);
conf.build = { frontendDist: abs(conf.build.frontendDist) };
conf.bundle.icon = conf.bundle.icon.map(abs);
conf.bundle.resources = Object.fromEntries(Object.entries(conf.bundle.resources).map(([from, to]) => [abs(from), to]));
conf.bundle.linux ??= {};
conf.bundle.linux.deb ??= {};
conf.bundle.linux.deb.files = { ...(conf.bundle.linux.deb.files ?? {}), "/usr/bin/aibuddy-exec-init": process.env.INIT_BIN };
fs.writeFileSync(path.join(process.env.STAGE, "tauri.conf.json"), JSON.stringify(conf, null, 2));
JS

out="$target_dir/$profile/bundle/deb"
rm -f "$out"/*.deb
echo "==> tauri bundle (deb)" >&2
TAURI_APP_PATH="$stage" TAURI_FRONTEND_PATH="$here" \
  npx --no-install tauri bundle "${bundle_flags[@]}" --bundles deb --ci >&2

shopt -s nullglob
debs=("$out"/*.deb)
if [ "${#debs[@]}" -ne 1 ]; then
  echo "package: expected one .deb in $out, found ${#debs[@]}" >&2
  exit 1
fi
echo "package: ${debs[0]} ($(du -h "${debs[0]}" | cut -f1))" >&2
echo "${debs[0]}"
