#!/usr/bin/env bash
# test-image.sh PODMAN_ARGS...: makes the container image the tests of aibuddy-container run in,
# from this machine's own binaries (nothing is pulled from a registry), and prints its name.
#
# The root file system holds /bin/sh and a few coreutils with the libraries `ldd` names; it is
# packed as a reproducible tarball (sorted names, fixed times and owners), and the image is named
# by the tarball's SHA-256, so a second run finds it and imports nothing.
# The arguments are the global podman options of the store to use (e.g. --root DIR --runroot DIR).
set -euo pipefail
BINARIES=(sh dash cat sleep ls grep kill true false head tail wc yes env echo mkdir rm seq sed curl ln chmod find)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/tmp" "$root/proc" "$root/dev" \
  "$root/sys" "$root/etc" "$root/work"
chmod 1777 "$root/tmp"
# Debian's merged /usr: /bin and /lib are links into /usr, as on the host.
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
copy() { # copy a file to the same path under the root, links resolved into /usr
  local src="$1" dst
  dst="$(readlink -f "$src")"
  case "$dst" in /bin/* | /lib/* | /lib64/*) dst="/usr$dst" ;; esac
  mkdir -p "$root$(dirname "$dst")"
  [ -e "$root$dst" ] || cp -L "$src" "$root$dst"
  # the name the program was looked up by, when it differs (e.g. /lib64/ld-linux -> /usr/lib64)
  case "$src" in /usr/*) ;; *) src="/usr$src" ;; esac
  if [ "$src" != "$dst" ] && [ ! -e "$root$src" ]; then
    mkdir -p "$root$(dirname "$src")"
    ln -s "$dst" "$root$src"
  fi
}
for b in "${BINARIES[@]}"; do
  p="$(type -P "$b" 2>/dev/null || true)" # the file, also for names bash has as builtins
  [ -n "$p" ] || continue
  copy "$p"
  # the name asked for (`sh`) may be a link to another binary (`dash`)
  [ -e "$root/usr/bin/$b" ] || ln -s "$(readlink -f "$p")" "$root/usr/bin/$b"
  for lib in $(ldd "$p" 2>/dev/null | grep -o '/[^ ]*' || true); do copy "$lib"; done
done
# The libraries of the bridge program bound into the containers (aibuddy-container-bridge or
# aibuddy-exec-init: libc and libgcc_s; the CLI itself: libm, libssl and libcrypto too, the last
# two already there for curl), as any glibc image has them.
for name in libgcc_s.so.1 libm.so.6; do
  for lib in $(ldconfig -p | grep -o "/[^ ]*/${name//./\\.}\$" | head -n 1); do copy "$lib"; done
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$work/rootfs.tar" .
sum="$(sha256sum "$work/rootfs.tar" | cut -c1-16)"
name="localhost/aibuddy-test-rootfs:$sum"
if ! podman "$@" image exists "$name"; then
  podman "$@" import -q --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/usr/bin:/bin' \
    "$work/rootfs.tar" "$name" >/dev/null
fi
echo "$name"
