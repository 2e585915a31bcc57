#!/usr/bin/env bash
# with-buildkitd.sh CMD [ARG...]: run CMD with BUILDKIT_HOST set to a fresh
# rootful buildkitd (its own root and socket in a temporary directory, QEMU
# binfmt for linux/arm64), stopped and removed when CMD ends. make test runs
# go test under it, so the build package's BuildKit integration tests run
# (under IMAGECTL_REQUIRE_TOOLS=1 they fail without BUILDKIT_HOST instead of
# skipping). Registries on 127.0.0.1 are reached over plain HTTP, as
# BuildKit does for localhost.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_init gotest
bash hack/deps.d/30-buildkit.sh >&2
bkver=$(go list -m -f '{{.Version}}' github.com/moby/buildkit)
bkbin=$IMAGECTL_TEST_CACHE/bin/buildkit-$bkver
reg=localhost:5000 # no registry of its own: the tests start theirs on 127.0.0.1
e2e_buildkitd buildkitd
export BUILDKIT_HOST=unix://$work/buildkitd.sock
rc=0
"$@" || rc=$?
exit $rc
