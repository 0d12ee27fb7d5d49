#!/usr/bin/env bash
# The package test: builds the .deb (scripts/package.sh), unpacks it into a temp root with
# `dpkg -x` (`dpkg -i` would install into this machine and needs root), checks its layout, then
# starts the installed binary under Xvfb through tauri-driver (tests/e2e/package.test.mjs): the
# window comes up on the sample project and the bundled skills load from the package's resource dir.
#
#   scripts/test-package.sh            the debug .deb (the binaries of the test build, scripts/build-tests.sh)
#   PACKAGE_PROFILE=release scripts/test-package.sh    the release .deb `make package` ships
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
step() { printf '\n--> %s\n' "$*"; }

case "${PACKAGE_PROFILE:-debug}" in
  debug) flag=--debug ;;
  release) flag= ;;
  *) echo "test-package: PACKAGE_PROFILE is debug or release" >&2; exit 2 ;;
esac

step "the .deb (${PACKAGE_PROFILE:-debug})"
deb="$(bash scripts/package.sh $flag | tail -n 1)"

root="$(mktemp -d "${TMPDIR:-/tmp}/aibuddy-deb-XXXXXX")"
trap 'rm -rf "$root"' EXIT
step "unpack into $root (dpkg -x)"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
dpkg -x "$deb" "$root"
bin="$root/usr/bin/aibuddy-desktop"
[ -x "$bin" ] || { echo "test-package: no executable usr/bin/aibuddy-desktop in the package" >&2; exit 1; }
for skill in skills/*/; do
  name="$(basename "$skill")"
  cmp -s "$skill/SKILL.md" "$root/usr/lib/aibuddy/skills/$name/SKILL.md" \
    || { echo "test-package: skill $name is missing or differs in usr/lib/aibuddy/skills" >&2; exit 1; }
done
[ -f "$root/usr/share/applications/aibuddy.desktop" ] || { echo "test-package: no .desktop entry" >&2; exit 1; }

step "tauri-driver"
driver="$(bash scripts/install-tauri-driver.sh)"
command -v WebKitWebDriver >/dev/null || { echo "test-package: WebKitWebDriver not found (apt package webkit2gtk-driver)" >&2; exit 1; }

step "the installed app under Xvfb"
export INSTALLED_BIN="$bin" INSTALL_ROOT="$root" TAURI_DRIVER="$driver" E2E_ARTIFACTS="$here/target/e2e"
xvfb-run --auto-servernum --server-args="-screen 0 1280x860x24" \
  node --test --test-reporter=spec tests/e2e/package.test.mjs
echo "test-package: $deb installs and starts; screenshot: $here/target/e2e-screenshots/package-catalog.png"
