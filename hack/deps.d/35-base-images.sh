#!/usr/bin/env bash
# Stand-in base images for the end-to-end test: Debian bookworm minbase root
# filesystems for amd64 and arm64 with python3 (the real base,
# linuxserver/code-server, cannot be pulled offline). Shaped like the real
# base where the image definition cares: user abc (uid/gid 911) with HOME
# /config. Cached as tarballs under $IMAGECTL_TEST_CACHE/base/.
#
# tools-<arch>.tar is the build-platform tools image (python3 + pip) in which
# wheels are cross-installed; only the amd64 one is made.
set -euo pipefail
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
out=$cache/base
mkdir -p "$out"
suite=bookworm
mirror=${IMAGECTL_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# Adds user abc (911:911, HOME /config) by editing the files directly, so no
# foreign-architecture binary runs.
hook='printf "abc:x:911:911::/config:/bin/false\n" >> "$1/etc/passwd";
      printf "abc:x:911:\n" >> "$1/etc/group";
      printf "abc:!:19000:0:99999:7:::\n" >> "$1/etc/shadow";
      mkdir -p "$1/config" "$1/app"; chown 911:911 "$1/config"'

make_tar() { # name arch packages
  local name=$1 arch=$2 pkgs=$3 dst=$out/$1-$2.tar
  if [ -s "$dst" ]; then echo "base: $dst cached"; return; fi
  local tmp; tmp=$(mktemp "$out/.$name-$arch.XXXXXX")
  echo "base: mmdebstrap $suite $arch ($pkgs)"
  local start=$SECONDS
  mmdebstrap --quiet --variant=minbase --architectures="$arch" --include="$pkgs" \
    --customize-hook="$hook" --format=tar "$suite" "$tmp" "$mirror"
  mv "$tmp" "$dst"
  echo "base: $dst in $((SECONDS - start)) s"
}
make_tar base amd64 python3,ca-certificates
make_tar base arm64 python3,ca-certificates
make_tar tools amd64 python3,python3-pip,ca-certificates
