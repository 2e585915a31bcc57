#!/usr/bin/env bash
# same-digests.sh REV: does a refactoring change what is built? Builds the
# end-to-end test's first image (both platforms, pushed and signed) with the
# imagectl of git revision REV and with this tree's, in ONE environment (the
# same registry, package index and gallery ports, stand-in bases,
# SOURCE_DATE_EPOCH and revision label; BuildKit's cache pruned and a fresh
# VSIX cache in between), and fails unless the index and platform manifest
# digests are the same; then that the SBOM this tree's scanner attaches
# lists the same packages as the one REV's build attached (the new build
# signs with another key, so it scans again instead of keeping the old
# SBOMs). Both binaries are built without -ldflags, so both call themselves
# "dev" (the version is part of the inputs digest).
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
"$fu" sbom-packages "$(jq -r .ref "$work/old.json")" >"$work/old.sbom" || fail "reading the old build's SBOM attestations"
"$fu" sbom-packages -documents "$(jq -r .ref "$work/old.json")" >"$work/old.sbomdocs"
"$bkbin/buildctl" --addr "$BUILDKIT_HOST" prune --all >/dev/null
imagectl=$new
# Signed with the other key, the new build attaches SBOMs of its own (an SBOM
# signed by another key is not kept): each platform image is scanned again,
# by this tree's scanner, and replaces the old build's SBOM.
SIGN_KEY=$work/other.key VSIX_CACHE=$work/cache-new build new "$work/cfg" --force
for n in old new; do
  jq -c '{ref: .ref, platforms: [.platforms[] | {platform, digest}]}' "$work/$n.json" >"$work/$n.digests"
  log "$n: $(cat "$work/$n.digests")"
done
cmp -s "$work/old.digests" "$work/new.digests" || fail "the imagectl of $old_rev and this tree's build different images"
log "PASS: $old_rev and this tree build the same index and platform manifests"

# The SBOMs: the new build scanned every platform (not kept), and its
# documents list the same packages as the old build's, package by package
# (name, version, purl, checksums, licence and where it was read).
jq -e 'all(.platforms[]; .sbom.source == "image" and .sbom.reused == null and .sbom.packages.deb > 0)' "$work/new.json" >/dev/null \
  || fail "the new build did not scan its platform images: $(jq -c '[.platforms[].sbom]' "$work/new.json")"
"$fu" sbom-packages "$(jq -r .ref "$work/new.json")" >"$work/new.sbom" || fail "reading the new build's SBOM attestations"
"$fu" sbom-packages -documents "$(jq -r .ref "$work/new.json")" >"$work/new.sbomdocs"
for p in $(jq -r 'keys[]' "$work/old.sbom"); do
  jq -c --arg p "$p" '.[$p] | sort_by(.purl, .name, .version)[]' "$work/old.sbom" >"$work/old-$(basename "$p").pkgs"
  jq -c --arg p "$p" '.[$p] // [] | sort_by(.purl, .name, .version)[]' "$work/new.sbom" >"$work/new-$(basename "$p").pkgs"
  n=$(wc -l <"$work/old-$(basename "$p").pkgs")
  [ "$n" -gt 0 ] || fail "$p: the old build's SBOM lists no package"
  diff "$work/old-$(basename "$p").pkgs" "$work/new-$(basename "$p").pkgs" >"$work/sbom-$(basename "$p").diff" \
    || fail "$p: the SBOMs differ package by package ($(grep -c '^[<>]' "$work/sbom-$(basename "$p").diff") lines): $(head -20 "$work/sbom-$(basename "$p").diff")"
  log "$p: the same $n packages in both SBOMs ($(jq -r --arg p "$p" '.[$p] | map((.purl // "") | if startswith("pkg:") then (split("/")[0] | ltrimstr("pkg:")) else "other" end) | group_by(.) | map("\(.[0]) \(length)") | join(", ")' "$work/old.sbom"))"
done
[ "$(jq -c 'keys' "$work/old.sbom")" = "$(jq -c 'keys' "$work/new.sbom")" ] || fail "the SBOMs' platforms differ: $(jq -c 'keys' "$work/old.sbom") and $(jq -c 'keys' "$work/new.sbom")"
if cmp -s <(jq -S . "$work/old.sbomdocs") <(jq -S . "$work/new.sbomdocs"); then
  log "PASS: the SBOM documents are byte for byte the same: $(jq -c . "$work/new.sbomdocs")"
else
  log "the SBOM documents differ in bytes (old $(jq -c . "$work/old.sbomdocs"), new $(jq -c . "$work/new.sbomdocs")) but not in their packages"
fi
log "PASS: $old_rev's SBOMs and this tree's scanner's list the same packages"
