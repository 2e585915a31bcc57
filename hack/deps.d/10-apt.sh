#!/usr/bin/env bash
# Debian packages: runc (buildkitd's OCI worker), QEMU user emulation for arm64,
# mmdebstrap and arch-test (stand-in base images: mmdebstrap needs arch-test
# for a foreign architecture, but only recommends it), debugpy (the real debug
# adapter), pip for python3 (imagectl matrix refresh locks the Python closures
# with pip's own resolver; Debian bookworm's 23.0.1 is enough), gcc (cgo, which
# make race's -race needs; new machines have it, checked here all the same),
# filelock for python3 (rayjobs/testdata/gen-golden.sh imports Ray's own
# packaging.py, which imports it), and the tools the test scripts call (curl,
# jq, zstd).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apt_install runc qemu-user-static binfmt-support mmdebstrap arch-test python3-debugpy python3-filelock python3-pip gcc libc6-dev zstd curl jq ca-certificates
