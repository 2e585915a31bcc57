#!/usr/bin/env bash
# Stand-in base images for the end-to-end test: Debian bookworm minbase root
# filesystems for amd64 and arm64 with python3 (the real base,
# linuxserver/code-server, cannot be pulled offline). Shaped like the real
# base where the image definition cares: user abc (uid/gid 911) with HOME
# /config. Cached as tarballs under $IMAGECTL_TEST_CACHE/base/.
#
# The amd64 base also carries a real code-server laid out like linuxserver's
# (/app/code-server, an /init that starts it as the s6 service would; see
# hack/standin/code-server.sh), from the npm build of 20-node.sh, so that
# imagectl smoke image boots it. A stamp next to the tarball records what it
# was made with; a change rebuilds it.
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

standin=$(cd "$(dirname "$0")/../standin" && pwd)

make_tar() { # name arch packages [extra customize hook] [stamp]
  local name=$1 arch=$2 pkgs=$3 extra=${4:-} stamp=${5:-} dst=$out/$1-$2.tar
  if [ -s "$dst" ] && [ "$(cat "$dst.stamp" 2>/dev/null)" = "$stamp" ]; then echo "base: $dst cached"; return; fi
  local tmp; tmp=$(mktemp "$out/.$name-$arch.XXXXXX")
  echo "base: mmdebstrap $suite $arch ($pkgs)"
  local start=$SECONDS
  local hooks=(--customize-hook="$hook")
  [ -z "$extra" ] || hooks+=(--customize-hook="$extra")
  mmdebstrap --quiet --variant=minbase --architectures="$arch" --include="$pkgs" \
    "${hooks[@]}" --format=tar "$suite" "$tmp" "$mirror"
  mv "$tmp" "$dst"
  printf '%s' "$stamp" >"$dst.stamp"
  echo "base: $dst in $((SECONDS - start)) s"
}
cs_version=${CODE_SERVER_VERSION:-4.100.3}
cs_stamp="code-server $cs_version, node $(node --version 2>/dev/null), $(sha256sum "$standin/code-server.sh" | cut -c1-16)"
make_tar base amd64 python3,ca-certificates "IMAGECTL_TEST_CACHE='$cache' CODE_SERVER_VERSION='$cs_version' bash '$standin/code-server.sh' \"\$1\"" "$cs_stamp"
make_tar base arm64 python3,ca-certificates
make_tar tools amd64 python3,python3-pip,ca-certificates
