#!/usr/bin/env bash
# Installs the real MCP servers the aibuddy-mcp tests run against into a repo-local, git-ignored folder:
#   .tools/mcp/node   npm servers + the official conformance harness (pinned versions below)
#   .tools/mcp/venv   Python servers (python3 -m venv, pinned versions below)
# Idempotent: a stamp file records the pinned set; when it matches and the binaries exist, nothing is done.
# Tests find the servers through AIBUDDY_MCP_TOOLS (default: <repo>/.tools/mcp).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${AIBUDDY_MCP_TOOLS:-$here/.tools/mcp}"

# Pinned versions. Bump deliberately; the stamp below makes a bump reinstall.
NPM_PACKAGES=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-github@2025.4.8"
  # 0.1.14+ imports fs.globSync (Node >= 22); 0.1.13 is the newest release that runs on Node 20.
  "@modelcontextprotocol/conformance@0.1.13"
)
PIP_PACKAGES=(
  "mcp-server-time==2026.10.19"
  "mcp-server-git==2026.10.19"
  "mcp-server-fetch==2026.10.24"
)

stamp_text="$(printf '%s\n' "${NPM_PACKAGES[@]}" "${PIP_PACKAGES[@]}" "node=$(node --version 2>/dev/null || echo none)" "python=$(python3 --version 2>&1)")"
stamp="$dest/.installed"

bins_present() {
  [ -x "$dest/node/node_modules/.bin/mcp-server-everything" ] &&
    [ -x "$dest/node/node_modules/.bin/mcp-server-filesystem" ] &&
    [ -x "$dest/node/node_modules/.bin/mcp-server-memory" ] &&
    [ -x "$dest/node/node_modules/.bin/mcp-server-github" ] &&
    [ -x "$dest/node/node_modules/.bin/conformance" ] &&
    [ -x "$dest/venv/bin/mcp-server-time" ] &&
    [ -x "$dest/venv/bin/mcp-server-git" ] &&
    [ -x "$dest/venv/bin/mcp-server-fetch" ]
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] && bins_present; then
  exit 0
fi

for tool in node npm python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-mcp-servers: '$tool' is required but not installed" >&2
    exit 1
  fi
done

mkdir -p "$dest/node"
echo "install-mcp-servers: npm servers into $dest/node"
if [ ! -f "$dest/node/package.json" ]; then
  printf '{\n  "name": "aibuddy-mcp-test-servers",\n  "private": true\n}\n' >"$dest/node/package.json"
fi
npm install --prefix "$dest/node" --no-audit --no-fund --loglevel=error --save-exact "${NPM_PACKAGES[@]}"
# `npx <package>` (tests/all/attack_mcp_cwd.rs runs it offline, as a person's global install) reads the
# package's abbreviated registry metadata before it looks at the global tree; `npm install` caches
# only the full form. One `npx --no-install` from an empty folder caches it (and then declines).
warm="$(mktemp -d)"
(cd "$warm" && timeout 120 npx --no-install @modelcontextprotocol/server-everything </dev/null >/dev/null 2>&1) || true
rmdir "$warm" 2>/dev/null || true

echo "install-mcp-servers: python servers into $dest/venv"
if [ ! -x "$dest/venv/bin/python" ]; then
  if ! python3 -m venv "$dest/venv" 2>/dev/null; then
    echo "install-mcp-servers: python3 -m venv failed; installing python3-venv" >&2
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$dest/venv"
    python3 -m venv "$dest/venv"
  fi
fi
"$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PIP_PACKAGES[@]}"

if ! bins_present; then
  echo "install-mcp-servers: install finished but some server executables are missing" >&2
  exit 1
fi
printf '%s' "$stamp_text" >"$stamp"
echo "install-mcp-servers: done"
