#!/usr/bin/env bash
# Installs cargo-fuzz (from crates.io, pinned) for `make fuzz` and the fuzz smoke of `make test`.
# Idempotent: does nothing when the pinned version is already installed. Needs the nightly
# toolchain (cargo fuzz builds with -Zsanitizer); installs it with rustup when it is missing.
# Install location: $CARGO_FUZZ_ROOT (default: the default cargo bin dir, ~/.cargo/bin).
set -euo pipefail

CARGO_FUZZ_VERSION="${CARGO_FUZZ_VERSION:-0.13.2}"

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "install-fuzz: installing the nightly toolchain"
  rustup toolchain install nightly --profile minimal
fi

root_args=()
bin="cargo-fuzz"
if [ -n "${CARGO_FUZZ_ROOT:-}" ]; then
  root_args=(--root "$CARGO_FUZZ_ROOT")
  bin="$CARGO_FUZZ_ROOT/bin/cargo-fuzz"
  export PATH="$CARGO_FUZZ_ROOT/bin:$PATH"
fi

if command -v "$bin" >/dev/null 2>&1 && "$bin" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
  exit 0
fi

echo "install-fuzz: cargo install cargo-fuzz $CARGO_FUZZ_VERSION (a few minutes the first time)"
# Its own target dir, so a CARGO_TARGET_DIR set for the project's build is not polluted.
tmp_target="$(mktemp -d)"
trap 'rm -rf "$tmp_target"' EXIT
CARGO_TARGET_DIR="$tmp_target" cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked "${root_args[@]}"
