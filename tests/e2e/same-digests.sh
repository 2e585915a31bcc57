#!/usr/bin/env bash
# same-digests.sh REV: does a refactoring change what is built? Builds the
# end-to-end test's first image (both platforms, pushed and signed) with the
# imagectl of git revision REV and with this tree's, in ONE environment (the
# same registry, package index and gallery ports, stand-in bases,
# SOURCE_DATE_EPOCH and revision label; BuildKit's cache pruned and a fresh
# VSIX cache in between), and fails unless the index and platform manifest
# digests are the same. Both binaries are built without -ldflags, so both
# call themselves "dev" (the version is part of the inputs digest).
#
#   bash tests/e2e/same-digests.sh 0bb34f4
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 REV" >&2; exit 2; }
old_rev=$1
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_init digests
git rev-parse --verify -q "$old_rev^{commit}" >/dev/null || fail "$old_rev: not a commit of this repository"
e2e_tools
git worktree add -q --detach "$work/old-tree" "$old_rev"
(cd "$work/old-tree" && go build -o "$work/bin/imagectl-old" ./cmd/imagectl)
git worktree remove --force "$work/old-tree"
e2e_registry
python3 tests/e2e/mkwheels.py "$work/pyindex"
e2e_serve_index "$work/pyindex"
e2e_gallery
e2e_buildkitd buildkitd
export BUILDKIT_HOST=unix://$work/buildkitd.sock
e2e_bases
e2e_config "$work/cfg" anyscalecompute.ray-distributed-debugger@0.1.6
e2e_keys
export SOURCE_DATE_EPOCH=1752537600
rev=same-digests
new=$imagectl
imagectl=$work/bin/imagectl-old
VSIX_CACHE=$work/cache-old build old "$work/cfg"
"$bkbin/buildctl" --addr "$BUILDKIT_HOST" prune --all >/dev/null
imagectl=$new
VSIX_CACHE=$work/cache-new build new "$work/cfg" --force
for n in old new; do
  jq -c '{ref: .ref, platforms: [.platforms[] | {platform, digest}]}' "$work/$n.json" >"$work/$n.digests"
  log "$n: $(cat "$work/$n.digests")"
done
cmp -s "$work/old.digests" "$work/new.digests" || fail "the imagectl of $old_rev and this tree's build different images"
log "PASS: $old_rev and this tree build the same index and platform manifests"
