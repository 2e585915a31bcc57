#!/usr/bin/env bash
# buildkitd and buildctl built from the Go module at the version go.mod pins
# (the same version as the client library imagectl links), cached under
# $IMAGECTL_TEST_CACHE/bin/buildkit-<version>/; plus QEMU binfmt handlers so a
# rootful buildkitd lists linux/arm64 as a worker platform.
set -euo pipefail
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
repo=$(cd "$(dirname "$0")/../.." && pwd)
ver=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/moby/buildkit)
dir=$cache/bin/buildkit-$ver
if [ -x "$dir/buildkitd" ] && [ -x "$dir/buildctl" ]; then
  echo "buildkit $ver: cached in $dir"
else
  mkdir -p "$cache/bin"
  tmp=$(mktemp -d "$cache/bin/.buildkit-$ver.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "buildkit $ver: building buildkitd and buildctl (about 2 minutes on 2 cores)"
  (cd "$repo" && go build -trimpath -o "$tmp/" github.com/moby/buildkit/cmd/buildkitd github.com/moby/buildkit/cmd/buildctl)
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi

# QEMU user emulation through binfmt_misc (the handlers come from
# qemu-user-static + binfmt-support, installed by 10-apt.sh).
sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  $sudo_ mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  $sudo_ update-binfmts --enable qemu-aarch64 || $sudo_ update-binfmts --enable
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  echo "30-buildkit.sh: binfmt handler qemu-aarch64 is not registered; linux/arm64 RUN steps cannot be emulated" >&2
  exit 1
fi
echo "binfmt: qemu-aarch64 $(head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64)"
