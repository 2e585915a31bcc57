#!/usr/bin/env bash
# Debian packages: runc (buildkitd's OCI worker), QEMU user emulation for arm64,
# mmdebstrap (stand-in base images), debugpy (the real debug adapter).
set -euo pipefail
pkgs=(runc qemu-user-static binfmt-support mmdebstrap arch-test python3-debugpy zstd curl jq ca-certificates)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
