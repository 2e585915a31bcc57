#!/usr/bin/env bash
# End-to-end test of imagectl build / sign / verify with real components:
# buildkitd built from the Go module, runc, QEMU binfmt, a local OCI registry,
# stand-in base images (mmdebstrap), a local PEP 503 index with fixture
# wheels, and the fake Marketplace serving vsce-built VSIX fixtures.
#
#   make e2e            (runs hack/install-deps.sh first)
#   bash tests/e2e/run.sh
#
# Env: IMAGECTL_TEST_CACHE (slow artefacts), IMAGECTL_E2E_KEEP=1 keeps the
# work directory, IMAGECTL_E2E_BENCH=0 skips the extension-bump benchmark,
# IMAGECTL_E2E_IMAGE_OUT=FILE copies the built image's OCI archive to FILE.
set -euo pipefail
# The setup shared with the benchmark (tests/bench/run.sh) is in lib.sh.
source "$(dirname "$0")/lib.sh"
e2e_init e2e

# --- 1. Tools -----------------------------------------------------------------
# Idempotent and quick when cached; make e2e ran them already.
e2e_tools

# --- 2. Local upstreams ---------------------------------------------------------
e2e_registry
python3 tests/e2e/mkwheels.py "$work/pyindex"
e2e_serve_index "$work/pyindex"
e2e_gallery

# --- 3. buildkitd ---------------------------------------------------------------
e2e_buildkitd buildkitd
sock=unix://$work/buildkitd.sock
export BUILDKIT_HOST=$sock

# The Go integration tests of package build need this buildkitd; here they
# must run, not skip.
log "go test ./build/ against this buildkitd"
IMAGECTL_REQUIRE_TOOLS=1 go test -count=1 -run 'TestBuildKit' ./build/ >"$work/gotest.log" 2>&1 \
  || { cat "$work/gotest.log" >&2; fail "go test ./build/ with BUILDKIT_HOST"; }
grep -q '^ok' "$work/gotest.log" || fail "go test ./build/: $(cat "$work/gotest.log")"

# --- 4. Stand-in base and tools images ------------------------------------------
e2e_bases
# The same image under another tag, for an unpinned --tools-image (section 10).
"$fu" push-base -ref "$reg/tools:unpinned" -tar linux/amd64="$base/tools-amd64.tar" >/dev/null

# --- 5. matrix.yaml, catalog.json, keys ------------------------------------------
# One matrix.yaml (its build: section names the tools image and the base's
# python3), three catalog snapshots: cfg was taken before the Ray debugger
# extension 0.1.6 was released, cfg-bump after (the only difference), and
# cfg-bench has another ms-python.python (the benchmark's extension bump).
config() { e2e_config "$@"; }
config "$work/cfg" anyscalecompute.ray-distributed-debugger@0.1.6
config "$work/cfg-bump"
config "$work/cfg-bench" anyscalecompute.ray-distributed-debugger@0.1.6,ms-python.python@2025.8.0
cmp -s "$work/cfg/matrix.yaml" "$work/cfg-bump/matrix.yaml" || fail "the e2e configs must share one matrix.yaml"
e2e_keys
export SOURCE_DATE_EPOCH=1752537600 # 2025-07-15

# Pinned once: the revision label defaults to git HEAD, which must not change
# what is built if a commit lands while the test runs.
rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# build, uploaded, reglines, requests and writes: see lib.sh.

# --- 6. Build, push, sign ----------------------------------------------------------
# Cold: nothing from the Go tests above may be reused.
"$bkbin/buildctl" --addr "$sock" prune --all >/dev/null
r0=$(reglines)
build cold "$work/cfg"
cold_bytes=$(uploaded "$r0")
j=$work/cold.json
[ "$(jq '.platforms | length' "$j")" = 2 ] || fail "want 2 platforms in the build JSON"
for p in linux/amd64 linux/arm64; do
  d=$(jq -r --arg p "$p" '.platforms[] | select(.platform == $p) | .digest' "$j")
  [[ $d == sha256:* ]] || fail "$p: no manifest digest in the build JSON"
  e=$(jq -r --arg p "$p" '.platforms[] | select(.platform == $p) | .emulatedSteps' "$j")
  s=$(jq -r --arg p "$p" '.platforms[] | select(.platform == $p) | .steps' "$j")
  [ "$e" = 0 ] || fail "$p: $e emulated steps: $(jq -c --arg p "$p" '.platforms[] | select(.platform == $p) | .emulated' "$j")"
  [ "$s" -ge 1 ] || fail "$p: no RUN step executed at all, the count would prove nothing"
  log "$p: $d, $s RUN step(s) executed, $e emulated"
done
ref=$(jq -r .ref "$j")
tag=$reg/code-server-ray:$(jq -r '.tags[0]' "$j")
[ "$(jq -r .toolsImage "$j")" = "$tools_pinned" ] || fail "build used tools image $(jq -r .toolsImage "$j"), want the catalog's pin $tools_pinned"
[ "$(jq -r .set.toolsImage "$j")" = "$tools_pinned" ] || fail "the build's lock names tools image $(jq -r .set.toolsImage "$j"), want $tools_pinned"
! grep -q 'warning: tools image' "$work/cold.err" || fail "pinned build warned about the tools image: $(grep 'warning: tools image' "$work/cold.err")"
log "tools image pinned: $tools_pinned"

# --- 6b. Without credentials: one clear line, before any download, no tag -----------
mkdir -p "$work/nologin-docker" "$work/nologin-cache"
echo '{}' >"$work/nologin-docker/config.json"
if DOCKER_CONFIG=$work/nologin-docker "$imagectl" --matrix "$work/cfg/matrix.yaml" build --ray 2.46.0 \
  --push --repository "$reg/nologin" --revision "$rev" --cache-dir "$work/nologin-cache" --progress quiet \
  >"$work/nologin.out" 2>"$work/nologin.err"; then
  fail "imagectl build --push without credentials succeeded"
fi
[ "$(wc -l <"$work/nologin.err")" = 1 ] || fail "build without credentials: want exactly one line on stderr, got: $(cat "$work/nologin.err")"
grep -q "registry $reg refused an anonymous push to $reg/nologin: log in first (docker login $reg" "$work/nologin.err" \
  || fail "build without credentials: the error does not name the registry and say to log in: $(cat "$work/nologin.err")"
[ -z "$(find "$work/nologin-cache" -type f)" ] || fail "build without credentials downloaded before failing: $(find "$work/nologin-cache" -type f)"
tok=$(curl -sf -u "e2e:$(cat "$work/registry.password")" "http://$reg/token?service=imagectl-test-registry&scope=repository:nologin:pull" | jq -r .token)
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "http://$reg/v2/nologin/tags/list")
[ "$code" = 404 ] || fail "build without credentials left something in $reg/nologin (tags/list answered $code)"
log "build --push without credentials: failed before any download: $(cat "$work/nologin.err")"

# --- 7. verify passes ---------------------------------------------------------------
"$imagectl" verify "$tag" --key "$work/cosign.pub" >"$work/verify.txt" 2>&1 || { cat "$work/verify.txt" >&2; fail "verify of the built image"; }
log "verify $tag: passed"
# The interpreter code-server and its terminal use is the shipped one: verify
# read the settings and the config Env of each platform from the image.
"$imagectl" verify "$tag" --key "$work/cosign.pub" --output json >"$work/verify.json" 2>"$work/verify-json.err" || { cat "$work/verify-json.err" >&2; fail "verify --output json"; }
jq -e '[.manifests[] | select(.contents != null)] | length == 2 and all(.[];
    .contents.interpreterSetting == "/opt/imagectl/python/bin/python3" and .contents.virtualEnv == "/opt/imagectl/python")' \
  "$work/verify.json" >/dev/null || fail "the image's settings or environment do not name the shipped interpreter: $(jq -c '[.manifests[].contents | {interpreterSetting, virtualEnv}?]' "$work/verify.json")"
log "interpreter: settings and VIRTUAL_ENV name /opt/imagectl/python on both platforms"

# --- 8. Tampering: verify must fail, each time for the right reason -------------------
expect_fail() { # NAME REF PATTERN [verify flags]
  local n=$1 r=$2 pat=$3; shift 3
  if "$imagectl" verify "$r" --key "$work/cosign.pub" "$@" >"$work/tamper-$n.txt" 2>&1; then
    cat "$work/tamper-$n.txt" >&2; fail "verify passed on tampered image ($n)"
  fi
  # The reason must be on one of verify's failure lines ("  - ...").
  grep -E '^  - ' "$work/tamper-$n.txt" | grep -Eq "$pat" || { cat "$work/tamper-$n.txt" >&2; fail "verify failed on $n but not for the expected reason /$pat/"; }
  log "tamper $n: verify failed as expected: $(grep -E '^  - ' "$work/tamper-$n.txt" | grep -Em1 "$pat")"
}
arm=$(jq -r '.platforms[] | select(.platform == "linux/arm64") | .digest' "$j")
# (a) one platform manifest unsigned: a copy with every signature and
# attestation, then the arm64 manifest's signature removed. The signatures
# name the repository they were made in ($reg/code-server-ray): a copy
# verifies only as an accepted mirror of it (--allow-repository), and
# without that fails for exactly that reason.
"$fu" copy -tags sig,att "$ref" "$reg/tamper-unsigned:t"
mirror=(--allow-repository "$reg/code-server-ray")
"$imagectl" verify "$reg/tamper-unsigned:t" --key "$work/cosign.pub" "${mirror[@]}" >"$work/copy-ok.txt" 2>&1 || { cat "$work/copy-ok.txt" >&2; fail "verify of the untampered copy as a mirror (the tamper cases would prove nothing)"; }
expect_fail copied-repository "$reg/tamper-unsigned:t" "^  - index .*signed for repository $reg/code-server-ray, not $reg/tamper-unsigned"
grep -q "^FAILED: 3 problem" "$work/tamper-copied-repository.txt" || fail "copy without --allow-repository: want exactly the index and both platform signatures refused"
"$fu" delete-tag "$reg/tamper-unsigned:sha256-${arm#sha256:}.sig"
expect_fail unsigned-platform "$reg/tamper-unsigned:t" "^  - linux/arm64 .*${arm#sha256:}.*not signed" "${mirror[@]}"
grep -q "^FAILED: 1 problem" "$work/tamper-unsigned-platform.txt" || fail "unsigned arm64 manifest: verify reported more than that one problem"
# (b) signed with another key (attestations copied, signatures not).
"$fu" copy -tags att "$ref" "$reg/tamper-otherkey:t"
"$imagectl" sign "$reg/tamper-otherkey:t" --key "$work/other.key" >/dev/null
expect_fail other-key "$reg/tamper-otherkey:t" "^  - index .*no valid signature from the trusted key"
# (c) a label that disagrees with the contents, validly signed. The relabelled
# arm64 manifest has a new digest, so it has no SBOM/provenance attestation:
# --skip-attestations keeps this case about labels versus contents.
"$fu" relabel -platform linux/arm64 -label dev.imagectl.ray.version=2.47.0 "$ref" "$reg/tamper-label:t"
"$imagectl" sign "$reg/tamper-label:t" --key "$work/cosign.key" >/dev/null
expect_fail label "$reg/tamper-label:t" "^  - linux/arm64 .*ray-2\.46\.0\.dist-info/METADATA: Version 2\.46\.0, label dev\.imagectl\.ray\.version says 2\.47\.0" --skip-attestations

# --- 9. Rebuilds: identical digests, from a warm and from an empty cache ---------------
same() { # A B: the two build JSONs name the same index, platform manifests and inputs
  local f a b
  for f in .index '.platforms[0].digest' '.platforms[1].digest' .inputsDigest; do
    a=$(jq -r "$f" "$work/$1.json"); b=$(jq -r "$f" "$work/$2.json")
    [ "$a" = "$b" ] || fail "build $2 differs from $1 at $f: $a vs $b"
  done
}
# The inputs are published and signed: build --push --sign solves, pushes
# and signs nothing, and says so (issue 12).
hist() { "$bkbin/buildctl" --addr "$1" debug histories --format '{{json .}}' | jq -r '.record.Ref' | sort; }
hist "$sock" >"$work/hist-before-again.txt"
r0=$(reglines)
build again "$work/cfg"
same cold again
[ "$(writes "$r0")" = 0 ] || fail "a build of published inputs wrote to the registry: $(tail -n +"$((r0 + 1))" "$work/registry.log" | grep -E ' (PUT|POST|PATCH|DELETE) ')"
[ "$(uploaded "$r0")" = 0 ] || fail "a build of published inputs uploaded $(uploaded "$r0") bytes"
hist "$sock" | cmp -s - "$work/hist-before-again.txt" || fail "a build of published inputs ran a solve on buildkitd"
jq -e --arg t "$(jq -r '.tags[0]' "$j")" '.published | contains($t) and contains("signatures verify with") and contains("SBOM and provenance attestations are there") and contains("--force")' "$work/again.json" >/dev/null \
  || fail "a build of published inputs does not say why it built nothing: $(jq -c .published "$work/again.json")"
log "no-change build: nothing solved, pushed or signed ($(requests "$r0") registry requests, $(cat "$work/again.ms") ms): $(jq -r .published "$work/again.json")"
r0=$(reglines)
build forced "$work/cfg" --force
again_bytes=$(uploaded "$r0")
same cold forced
[ "$(jq '[.platforms[].cachedSteps] | add' "$work/forced.json")" -ge 1 ] || fail "--force did not solve (no cached step reported)"
log "forced no-change rebuild: same index $(jq -r .index "$work/forced.json") and platform digests"
"$bkbin/buildctl" --addr "$sock" prune --all >/dev/null
build fresh "$work/cfg" --force
same cold fresh
log "rebuild after pruning every BuildKit cache record: same index and platform digests"
"$imagectl" verify "$tag" --key "$work/cosign.pub" >"$work/verify2.txt" 2>&1 || { cat "$work/verify2.txt" >&2; fail "verify after the rebuilds"; }

# --- 9c. Distributed: linux/arm64 on a second buildkitd (issue 12) --------------------
# One native builder per architecture, as on an arm64 host or in Kubernetes:
# --builder sends the arm64 solve to a second daemon with its own root and
# cache. Its build history and cache show the arm64 solve; the first daemon
# ran only amd64; the index is the one a single builder made.
e2e_buildkitd buildkitd2
sock2=unix://$work/buildkitd2.sock
hist "$sock" >"$work/hist-before-dist.txt"
build dist "$work/cfg" --force --builder "linux/arm64=$sock2"
same cold dist
[ "$(jq -r '.platforms[] | select(.platform == "linux/arm64") | .builder' "$work/dist.json")" = "$sock2" ] \
  || fail "the arm64 platform was not built by $sock2: $(jq -c '[.platforms[] | {platform, builder}]' "$work/dist.json")"
[ "$(jq -r '.platforms[] | select(.platform == "linux/amd64") | .builder' "$work/dist.json")" = "$sock" ] \
  || fail "the amd64 platform was not built by $sock: $(jq -c '[.platforms[] | {platform, builder}]' "$work/dist.json")"
solves_of() { # SOCK [REFS-FILE]: the platform of each build record (not in REFS-FILE), sorted
  "$bkbin/buildctl" --addr "$1" debug histories --format '{{json .}}' |
    jq -r --rawfile old "${2:-/dev/null}" 'select(.record.Ref as $r | ($old | split("\n") | any(.[]; . == $r)) | not) | .record.FrontendAttrs.platform' | sort
}
platforms_of() { # SOCK [REFS-FILE]: the platforms of the build records (not in REFS-FILE)
  solves_of "$@" | uniq | paste -sd, -
}
[ "$(platforms_of "$sock2")" = linux/arm64 ] || fail "buildkitd2's build history: platforms $(platforms_of "$sock2"), want linux/arm64"
[ "$(platforms_of "$sock" "$work/hist-before-dist.txt")" = linux/amd64 ] \
  || fail "buildkitd (the default builder) built $(platforms_of "$sock" "$work/hist-before-dist.txt") during the distributed build, want linux/amd64 only"
"$bkbin/buildctl" --addr "$sock2" du >"$work/du2.txt"
du2=$(awk '/^Total:/ {print $2}' "$work/du2.txt")
[ -n "$du2" ] && [ "$du2" != 0B ] && [ "$du2" != 0 ] || fail "buildkitd2 holds no cache after building arm64: $(tail -n2 "$work/du2.txt")"
log "distributed: arm64 built on $sock2 (its cache: $du2), amd64 on $sock; same index $(jq -r .index "$work/dist.json")"

# --- 9b. Release and plan (issue 6) ---------------------------------------------------
# imagectl build pushed the versioned tag only; release verifies that image and
# promotes the floating tags, then plan finds nothing to do. A new extension
# release in the snapshot gives exactly the affected entries, release builds,
# signs, verifies and moves the tags, and a re-run writes nothing.
plan() { # NAME CFGDIR: imagectl plan --output json into $work/NAME.json
  "$imagectl" --matrix "$2/matrix.yaml" plan --output json >"$work/$1.json" 2>"$work/$1.err" \
    || { cat "$work/$1.err" >&2; fail "imagectl plan ($1)"; }
  log "plan $1: $(jq -c '[.entries[] | {name, action, reasons: [.reasons[] | .kind + ": " + .detail]}]' "$work/$1.json")"
}
release() { # NAME CFGDIR: imagectl release --output json into $work/NAME.json
  "$imagectl" --matrix "$2/matrix.yaml" release --key "$work/cosign.key" --revision "$rev" --cache-dir "$work/vsix-cache" \
    --progress plain --output json >"$work/$1.json" 2>"$work/$1.err" \
    || { cat "$work/$1.json" >&2; tail -n 60 "$work/$1.err" >&2; fail "imagectl release ($1)"; }
  log "release $1: $(jq -c '[.results[] | {entry, action, built, tagged, unchanged}]' "$work/$1.json")"
}
nsets=$("$imagectl" --matrix "$work/cfg/matrix.yaml" matrix list --output json | jq '.sets | length')
plan plan-promote "$work/cfg"
[ "$(jq '[.entries[] | select(.action == "promote")] | length' "$work/plan-promote.json")" = "$nsets" ] \
  || fail "after imagectl build, plan should promote every entry: $(cat "$work/plan-promote.json")"
release release-promote "$work/cfg"
jq -e --arg d "$(jq -r .index "$j")" '.results[0].built == false and .results[0].digest == $d and (.results[0].tagged | index("latest"))' \
  "$work/release-promote.json" >/dev/null || fail "release did not promote the built image: $(cat "$work/release-promote.json")"
plan plan-empty "$work/cfg"
[ "$(jq '.entries | length' "$work/plan-empty.json")" = 0 ] || fail "plan after release is not empty: $(cat "$work/plan-empty.json")"
[ "$(jq '.upToDate | length' "$work/plan-empty.json")" = "$nsets" ] || fail "plan after release lists $(jq -c .upToDate "$work/plan-empty.json") up to date, want $nsets entries"

plan plan-bump "$work/cfg-bump"
jq -e --argjson n "$nsets" '(.entries | length) == $n and all(.entries[]; .action == "build" and .blocked == null
    and .reasons == [{"kind": "extension bump", "detail": "anyscalecompute.ray-distributed-debugger 0.1.4 -> 0.1.6"}])' \
  "$work/plan-bump.json" >/dev/null || fail "plan after the extension bump: $(cat "$work/plan-bump.json")"
r0=$(reglines)
hist "$sock" >"$work/hist-before-release-bump.txt"
release release-bump "$work/cfg-bump"
[ "$(writes "$r0")" -gt 0 ] || fail "no registry write counted during the bump release: the write counter (registry.log format) proves nothing"
jq -e '.results[0].built and (.results[0].tagged | length) == 4' "$work/release-bump.json" >/dev/null \
  || fail "release after the bump did not build and tag: $(cat "$work/release-bump.json")"
# Its SBOMs were scanned while the image was pushed: each platform solved
# twice, prepared in buildkitd's store (where its scan starts), then
# pushed (without scans beside the push, only the second platform is
# prepared: three solves); and no scan fell back to after the push.
solves=$(solves_of "$sock" "$work/hist-before-release-bump.txt" | paste -sd' ')
[ "$solves" = "linux/amd64 linux/amd64 linux/arm64 linux/arm64" ] \
  || fail "the bump release's solves on $sock: $solves; want each platform prepared, then pushed (its scan beside the push)"
! grep -n "while it was pushed" "$work/release-bump.err" \
  || fail "release after the bump scanned an image again after its push (above)"
bumped=$reg/code-server-ray:$(jq -r '.entries[0].versioned' "$work/plan-bump.json")
[ "$bumped" != "$tag" ] || fail "the extension bump did not change the versioned tag $tag"
for t in "$bumped" "$reg/code-server-ray:latest"; do
  "$imagectl" verify "$t" --key "$work/cosign.pub" >"$work/verify-released.txt" 2>&1 \
    || { cat "$work/verify-released.txt" >&2; fail "verify of $t after the release"; }
done
plan plan-empty2 "$work/cfg-bump"
[ "$(jq '.entries | length' "$work/plan-empty2.json")" = 0 ] || fail "plan after the bump release is not empty: $(cat "$work/plan-empty2.json")"
r0=$(reglines)
release release-rerun "$work/cfg-bump"
[ "$(writes "$r0")" = 0 ] || fail "a re-run of release wrote to the registry: $(tail -n +"$((r0 + 1))" "$work/registry.log" | grep -E ' (PUT|POST|PATCH|DELETE) ')"
jq -e 'all(.results[]; .action == "none")' "$work/release-rerun.json" >/dev/null || fail "re-run of release: $(cat "$work/release-rerun.json")"
log "release: promote, empty plan, extension bump -> $nsets entry rebuilt and tagged, empty plan, re-run wrote nothing"
# The tools tag moved upstream (a refresh recorded another digest): plan
# rebuilds every entry for exactly that reason. Plan reads manifests only, so
# the new digest need not exist.
mkdir -p "$work/cfg-tools"
cp "$work/cfg-bump/matrix.yaml" "$work/cfg-tools/matrix.yaml"
moved=sha256:$(printf '%064d' 0)
jq --arg d "$moved" '.toolsImage.digest = $d' "$work/cfg-bump/catalog.json" >"$work/cfg-tools/catalog.json"
plan plan-tools "$work/cfg-tools"
jq -e --argjson n "$nsets" --arg detail "$tools: $(jq -r .index "$work/tools.json" | cut -c1-19) -> ${moved:0:19}" \
  '(.entries | length) == $n and all(.entries[]; .action == "build" and .reasons == [{"kind": "tools image rebuilt", "detail": $detail}])' \
  "$work/plan-tools.json" >/dev/null || fail "plan after the tools tag moved: $(cat "$work/plan-tools.json")"
log "tools tag moved -> plan rebuilds $nsets entry: tools image rebuilt"

# --- 10. Without --push: an OCI archive naming the same index ----------------------------
"$imagectl" --matrix "$work/cfg/matrix.yaml" build --ray 2.46.0 --revision "$rev" \
  --cache-dir "$work/vsix-cache" --progress quiet --output json --dist "$work/dist" >"$work/archive.json" 2>"$work/archive.err" \
  || { cat "$work/archive.err" >&2; fail "imagectl build without --push"; }
archive=$(jq -r .archive "$work/archive.json")
[ -s "$archive" ] || fail "no OCI archive at $archive"
top=$(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest')
[ "$top" = "$(jq -r .index "$work/cold.json")" ] || fail "the archive's index $top is not the pushed index $(jq -r .index "$work/cold.json")"
tar -xOf "$archive" index.json | jq -e '.manifests[0].annotations["org.opencontainers.image.ref.name"]' >/dev/null || fail "archive index.json has no ref.name for docker load"
log "OCI archive $(basename "$archive"): same index $top as the pushed image"
# make test hands this image to tests/kube's real Pods (the sidecar of the
# head Pod, and the base of the Ray stand-in).
if [ -n "${IMAGECTL_E2E_IMAGE_OUT:-}" ]; then
  cp "$archive" "$IMAGECTL_E2E_IMAGE_OUT.tmp"
  mv "$IMAGECTL_E2E_IMAGE_OUT.tmp" "$IMAGECTL_E2E_IMAGE_OUT"
  log "OCI archive copied to $IMAGECTL_E2E_IMAGE_OUT"
fi
# An unpinned tools image (a --tools-image tag other than matrix.yaml's, which
# would keep the catalog's pin) still builds, warns once, and the JSON says
# which reference was used.
unpinned=$reg/tools:unpinned
"$imagectl" --matrix "$work/cfg/matrix.yaml" build --ray 2.46.0 --revision "$rev" --tools-image "$unpinned" \
  --cache-dir "$work/vsix-cache" --progress quiet --output json --dist "$work/dist-unpinned" >"$work/unpinned.json" 2>"$work/unpinned.err" \
  || { cat "$work/unpinned.err" >&2; fail "imagectl build with an unpinned tools image"; }
[ "$(grep -c 'warning: tools image' "$work/unpinned.err")" = 1 ] || fail "unpinned tools image: want exactly one warning on stderr: $(cat "$work/unpinned.err")"
[ "$(jq -r .toolsImage "$work/unpinned.json")" = "$unpinned" ] || fail "unpinned build reports tools image $(jq -r .toolsImage "$work/unpinned.json"), want $unpinned"
[ "$(jq -r .inputsDigest "$work/unpinned.json")" != "$(jq -r .inputsDigest "$work/cold.json")" ] || fail "the unpinned tools image gave the pinned build's inputs digest"
log "unpinned tools image: built, one warning: $(grep 'warning: tools image' "$work/unpinned.err" | cut -c1-100)..."

# --- 11. Benchmark ------------------------------------------------------------------------
if [ "${IMAGECTL_E2E_BENCH:-1}" != 0 ]; then
  r0=$(reglines)
  build bump "$work/cfg-bench"
  bump_bytes=$(uploaded "$r0")
  [ "$(jq -r .index "$work/bump.json")" != "$(jq -r .index "$work/cold.json")" ] || fail "bumping an extension did not change the image"
  # One platform at a time from an empty cache, for the arm64/amd64 ratio.
  for p in amd64 arm64; do
    "$bkbin/buildctl" --addr "$sock" prune --all >/dev/null
    PLATFORMS=linux/$p build "solo-$p" "$work/cfg" --repository "$reg/bench-$p"
  done
  secs() { jq -r .duration "$work/$1.json"; }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b > 0 ? a / b : 0)}'; }
  {
    echo "benchmark: imagectl build wall time (resolve..push+sign, from its JSON); bytes = blob uploads the"
    echo "registry received (image layers plus cosign signatures and attestations)"
    printf '  %-34s %8s s %10s bytes\n' "cold build (both platforms)" "$(secs cold)" "$cold_bytes"
    printf '  %-34s %8s s %10s bytes  %s x cold\n' "no-change build (published)" "$(secs again)" 0 "$(ratio "$(secs again)" "$(secs cold)")"
    printf '  %-34s %8s s %10s bytes  %s x cold\n' "forced no-change rebuild" "$(secs forced)" "$again_bytes" "$(ratio "$(secs forced)" "$(secs cold)")"
    printf '  %-34s %8s s %10s bytes  %s x cold\n' "rebuild, empty BuildKit cache" "$(secs fresh)" "-" "$(ratio "$(secs fresh)" "$(secs cold)")"
    printf '  %-34s %8s s %10s bytes  %s x cold\n' "rebuild after one extension bump" "$(secs bump)" "$bump_bytes" "$(ratio "$(secs bump)" "$(secs cold)")"
    printf '  %-34s %8s s\n' "linux/amd64 alone, empty cache" "$(secs solo-amd64)"
    printf '  %-34s %8s s  arm64/amd64 = %s\n' "linux/arm64 alone, empty cache" "$(secs solo-arm64)" "$(ratio "$(secs solo-arm64)" "$(secs solo-amd64)")"
  } | tee "$work/bench.txt" >&2
  # imagectl plan with nothing changed, over 1 and 24 entries, as a ratio to the cold build above.
  IMAGECTL_COLD_BUILD_SECONDS=$(secs cold) go test ./release -run '^$' -bench PlanNoChange -benchtime 1x 2>&1 |
    grep -E 'no-change plan of' | sed 's/^ *bench_test.go:[0-9]*: /  /' | tee -a "$work/bench.txt" >&2
fi
# --- 12. smoke image: the built image runs (issue 15) --------------------------------------
# Every platform of the pushed image runs as a runc container (arm64 under QEMU):
# python3 with the image's own environment imports ray and debugpy at the locked
# versions and its compiled modules load, a debugpy attach stops at breakpoint(),
# and on amd64 (the stand-in base carries code-server) the entrypoint boots
# code-server with the locked extensions and settings; arm64's code-server line is
# a skip. Two deliberately broken copies fail on the right line, and nothing
# (container, unpacked root, mount) is left behind.
# The containers live in a runc root of the run's own (--runc-root), so another
# smoke on the machine (a user's, another test's) is neither seen nor disturbed.
smoke_work=$work/smoke-work
smoke_runc=$work/smoke-runc
mkdir -p "$smoke_work" "$smoke_runc"
smoke_image() { # NAME [smoke image args]: -o json into $work/smoke-NAME.json; returns its exit code
  local n=$1; shift
  "$imagectl" smoke image "$@" --runtime runc --runc-root "$smoke_runc" --work-dir "$smoke_work" -o json >"$work/smoke-$n.json" 2>"$work/smoke-$n.err"
}
smoke_line() { # NAME PLATFORM CHECK: "status: detail"
  jq -r --arg p "$2" --arg c "$3" '.platforms[] | select(.platform == $p) | .lines[] | select(.check == $c) | "\(.status): \(.detail)"' "$work/smoke-$1.json"
}
smoke_left() { # nothing of a smoke may remain
  [ -z "$(ls -A "$smoke_work")" ] || fail "smoke image left $(ls -A "$smoke_work") in $smoke_work"
  [ -z "$(runc --root "$smoke_runc" list -q)" ] || fail "smoke image left runc containers: $(runc --root "$smoke_runc" list -q)"
  ! grep -q "$smoke_work" /proc/self/mountinfo || fail "smoke image left a mount below $smoke_work"
}
smoke_image built "$tag" || { cat "$work/smoke-built.json" "$work/smoke-built.err" >&2; fail "imagectl smoke image $tag"; }
for p in linux/amd64 linux/arm64; do
  for c in container python debugger post-mortem; do
    [[ $(smoke_line built "$p" "$c") == pass:* ]] || fail "smoke image $p $c: $(smoke_line built "$p" "$c")"
  done
done
[[ $(smoke_line built linux/amd64 code-server) == pass:* ]] || fail "smoke image linux/amd64 code-server: $(smoke_line built linux/amd64 code-server)"
[[ $(smoke_line built linux/arm64 code-server) == skip:* ]] || fail "smoke image linux/arm64 code-server: $(smoke_line built linux/arm64 code-server)"
[[ $(smoke_line built linux/arm64 python) == *"aarch64"*"all AArch64"* ]] || fail "smoke image linux/arm64 python did not run aarch64 code: $(smoke_line built linux/arm64 python)"
smoke_left
for p in linux/amd64 linux/arm64; do
  for c in python debugger code-server; do log "smoke image $p $c: $(smoke_line built "$p" "$c" | cut -c1-160)"; done
done
smoke_image archive --archive "$archive" --platform linux/arm64 \
  || { cat "$work/smoke-archive.json" "$work/smoke-archive.err" >&2; fail "imagectl smoke image --archive $archive"; }
smoke_left
log "smoke image --archive $(basename "$archive") (linux/arm64): passed"
# (a) the amd64 compiled modules grafted into the arm64 image
"$fu" break-image -platform linux/arm64 -graft-from linux/amd64 "$ref" "$reg/broken-arch:t"
if smoke_image broken-arch "$reg/broken-arch:t" --platform linux/arm64; then fail "smoke image passed an arm64 image holding amd64 compiled modules"; fi
[[ $(smoke_line broken-arch linux/arm64 python) == "fail: "*"_json.cpython-311-x86_64-linux-gnu.so"*"is x86-64 code, want AArch64"* ]] \
  || { cat "$work/smoke-broken-arch.json" >&2; fail "smoke image failed the wrong-architecture image, but not on the python line"; }
log "broken arm64 image: $(smoke_line broken-arch linux/arm64 python | cut -c1-200)"
# (b) a PATH that misses the image's interpreter (the base's PATH: python3 is
# then the base's /usr/bin/python3, not /opt/imagectl/python/bin/python3)
"$fu" break-image -platform linux/amd64 -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ref" "$reg/broken-path:t"
if smoke_image broken-path "$reg/broken-path:t" --platform linux/amd64; then fail "smoke image passed an image whose PATH misses the interpreter"; fi
[[ $(smoke_line broken-path linux/amd64 python) == "fail: "*"python3 on the image's PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin) is /usr/bin/python3, not the image's interpreter /opt/imagectl/python/bin/python3"* ]] \
  || { cat "$work/smoke-broken-path.json" >&2; fail "smoke image failed the PATH-broken image, but not on the python line"; }
log "broken PATH image: $(smoke_line broken-path linux/amd64 python | cut -c1-200)"
smoke_left

# --- 13. Python lock and SBOM (issue 13) -----------------------------------------
# A second fixture index of its own (the sections above keep theirs), with
# the transitive dependencies aiohttp -> aiosignal (py3-none-any) and
# frozenlist (one platform wheel per architecture), and the Simple API's
# JSON form refresh reads. matrix refresh locks the closure with pip against it; the
# build installs exactly that; each platform's SBOM is scanned from the image;
# a wheel swapped after locking fails the build in one line; a transitive
# bump gives exactly one plan reason and one rebuilt entry. Its own
# repository, so plan compares with this section's images only.
lockidx=$work/pyindex-lock
python3 tests/e2e/mkwheels.py "$lockidx"
"$fu" serve -dir "$lockidx" -port-file "$work/pyindex-lock.port" 2>"$work/pyindex-lock.err" &
pids+=($!)
wait_file "$work/pyindex-lock.port" 30
lockurl=http://127.0.0.1:$(cat "$work/pyindex-lock.port")
lockcfg() { # DIR: the e2e matrix.yaml with this section's repository and index
  config "$1" >/dev/null
  sed -i -e "s|^    - $reg/code-server-ray\$|    - $reg/code-server-ray-lock|" \
    -e "s|^  pypi: .*|  pypi: $lockurl|" -e "s|^  packageIndex: .*|  packageIndex: $lockurl/simple|" "$1/matrix.yaml"
  grep -q "code-server-ray-lock" "$1/matrix.yaml" || fail "lockcfg: could not point $1/matrix.yaml at its own repository"
}
refresh() { # DIR [flags]: imagectl matrix refresh into DIR/catalog.json, seconds to DIR/refresh.seconds
  local d=$1 start; shift
  start=$(date +%s.%N)
  "$imagectl" --matrix "$d/matrix.yaml" matrix refresh --insecure --retries 1 --http-timeout 30s "$@" >"$d/refresh.out" 2>"$d/refresh.err" \
    || { cat "$d/refresh.err" >&2; fail "imagectl matrix refresh ($d)"; }
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}' >"$d/refresh.seconds"
  log "refresh $(basename "$d") in $(cat "$d/refresh.seconds") s: $(cat "$d/refresh.out")"
}
lockcfg "$work/cfg-nolock"
refresh "$work/cfg-nolock" --no-python-lock
lockcfg "$work/cfg-lock"
refresh "$work/cfg-lock"
lockcat=$work/cfg-lock/catalog.json
[ "$(jq '.pythonLocks | length' "$lockcat")" = 2 ] || fail "refresh recorded $(jq '.pythonLocks | length' "$lockcat") Python locks, want one per platform: $(jq -c .pythonLocks "$lockcat")"
fixture_names='["aiohttp","aiosignal","click","colorful","debugpy","frozenlist","ray"]'
for p in linux/amd64 linux/arm64; do
  arch=x86_64; [ "$p" = linux/arm64 ] && arch=aarch64
  l=$(jq -c --arg p "$p" '.pythonLocks[] | select(.platform == $p)' "$lockcat")
  jq -e --argjson want "$fixture_names" '[.distributions[].name] == $want and .python == "3.11" and .ray == "2.46.0" and .debugpy == "1.8.14"' <<<"$l" >/dev/null \
    || fail "$p: locked closure $(jq -c '[.distributions[] | .name + "==" + .version]' <<<"$l"), want $fixture_names for CPython 3.11"
  jq -e --arg a "$arch" '.distributions[] | select(.name == "frozenlist") | .filename | endswith("manylinux2014_" + $a + ".whl")' <<<"$l" >/dev/null \
    || fail "$p: the transitive platform wheel frozenlist is not the $arch one: $(jq -c '.distributions[] | select(.name == "frozenlist")' <<<"$l")"
  while read -r f sum; do
    [ "$(sha256sum "$lockidx/files/$f" | cut -d' ' -f1)" = "$sum" ] || fail "$p: locked sha256 of $f is not the file's"
  done < <(jq -r '.distributions[] | .filename + " " + .sha256' <<<"$l")
done
log "refresh locked the closure per platform: $(jq -c '[.pythonLocks[] | {platform, wheels: [.distributions[].filename]}]' "$lockcat")"
"$imagectl" --matrix "$work/cfg-lock/matrix.yaml" matrix resolve --ray 2.46.0 --explain >"$work/lock-explain.txt" 2>&1 || { cat "$work/lock-explain.txt" >&2; fail "matrix resolve --explain"; }
grep -q "python closure 7 distributions on linux/amd64, 7 on linux/arm64 chosen" "$work/lock-explain.txt" || fail "resolve --explain does not give the closure size: $(cat "$work/lock-explain.txt")"

lockref=$reg/code-server-ray-lock
buildlock() { # NAME CFGDIR [flags]: imagectl build --push --sign of the locked set, JSON to $work/NAME.json
  local n=$1 cfg=$2; shift 2
  "$imagectl" --matrix "$cfg/matrix.yaml" build --ray 2.46.0 --push --sign --key "$work/cosign.key" --revision "$rev" \
    --cache-dir "$work/vsix-cache" --progress plain --output json "$@" >"$work/$n.json" 2>"$work/$n.err" \
    || { tail -n 60 "$work/$n.err" >&2; fail "imagectl build ($n)"; }
  log "build $n: $(jq -r .ref "$work/$n.json") in $(jq -r .duration "$work/$n.json") s; SBOMs: $(jq -c '[.platforms[] | {platform, sbom: .sbom.packages, seconds: .sbom.duration}]' "$work/$n.json")"
}
buildlock lock-cold "$work/cfg-lock"
grep -q "warning: no locked Python closure" "$work/lock-cold.err" && fail "the locked build warned that it is unlocked"
lj=$work/lock-cold.json
jq -e 'all(.platforms[]; .sbom.source == "image" and .sbom.format == "spdx" and .sbom.packages.deb > 0 and .sbom.packages.python >= 7 and .sbom.packages["vscode-extension"] == 3)' "$lj" >/dev/null \
  || fail "the build's SBOMs were not scanned from the images: $(jq -c '[.platforms[].sbom]' "$lj")"
# The base's layers were decompressed during the solve and the scans read
# them from there (the dpkg packages below are checked against the base's
# own database, so they are the base's content).
jq -e 'all(.platforms[]; .sbom.baseLayersPrefetched >= 1)' "$lj" >/dev/null && ! grep -q "warning: prefetching" "$work/lock-cold.err" \
  || fail "the scans did not read the base layers prefetched during the solve: $(jq -c '[.platforms[].sbom]' "$lj"); $(grep "warning: prefetching" "$work/lock-cold.err")"
# Each image was read from the buildkitd that built it (its content store),
# not read back from the registry it was just pushed to (but for layers
# buildkitd pushed by cross-repository mount without pulling them).
log "the scans read: $(jq -c '[.platforms[] | {platform, readFrom: .sbom.readFrom}]' "$lj")"
jq -e 'all(.platforms[]; .sbom.readFrom | startswith("builder"))' "$lj" >/dev/null && ! grep -q "from its builder for its SBOM" "$work/lock-cold.err" \
  || fail "the scans did not read the images from buildkitd: $(jq -c '[.platforms[] | {platform, readFrom: .sbom.readFrom}]' "$lj"); $(grep "from its builder" "$work/lock-cold.err")"
# ... and scanned while it was pushed: the solve prepared each image in
# buildkitd's store, and its scan ran during its push, not after it.
jq -e 'all(.platforms[]; .sbom.whilePushing == true)' "$lj" >/dev/null && ! grep -q "while it was pushed" "$work/lock-cold.err" \
  || fail "the scans did not run while the images were pushed: $(jq -c '[.platforms[] | {platform, whilePushing: .sbom.whilePushing}]' "$lj"); $(grep "while it was pushed" "$work/lock-cold.err")"
locktag=$lockref:$(jq -r '.tags[0]' "$lj")
"$imagectl" verify "$locktag" --key "$work/cosign.pub" --output json >"$work/verify-lock.json" 2>"$work/verify-lock.err" \
  || { jq . "$work/verify-lock.json" >&2; cat "$work/verify-lock.err" >&2; fail "verify of the locked image"; }
jq -e '[.manifests[] | select(.platform != null and .platform != "")] | length == 2 and all(.[]; .sbomLocked == 10)' "$work/verify-lock.json" >/dev/null \
  || fail "verify did not find the 7 locked distributions and 3 extensions in each platform's SBOM: $(jq -c '[.manifests[] | {platform, sbom, sbomLocked}]' "$work/verify-lock.json")"
# (a) Each platform's SBOM lists the stand-in base's dpkg packages (exactly
# those the base's dpkg database says are installed) and every fixture wheel.
"$fu" sbom-packages "$(jq -r .ref "$lj")" >"$work/sbom-packages.json" || fail "reading the SBOM attestations"
dpkg_status() { tar -xOf "$1" ./var/lib/dpkg/status 2>/dev/null || tar -xOf "$1" var/lib/dpkg/status; }
for p in amd64 arm64; do
  want=$(dpkg_status "$base/base-$p.tar" |
    awk '/^Package:/{n=$2} /^Status:/{s=$0} /^Version:/{v=$2} /^$/{if (n != "" && s ~ / installed$/) print n" "v; n=""; s=""; v=""} END{if (n != "" && s ~ / installed$/) print n" "v}' | sort -u)
  got=$(jq -r --arg p "linux/$p" '.[$p][] | select(.purl | startswith("pkg:deb/")) | .name + " " + .version' "$work/sbom-packages.json" | sort -u)
  [ -n "$want" ] || fail "the stand-in base's dpkg status lists no installed package"
  [ "$want" = "$got" ] || fail "linux/$p: the SBOM's dpkg packages differ from the base's dpkg status: $(diff <(echo "$want") <(echo "$got") | head -20)"
  for d in $(jq -r --arg p "linux/$p" '.pythonLocks[] | select(.platform == $p) | .distributions[] | .name + "@" + .version' "$lockcat"); do
    jq -e --arg p "linux/$p" --arg purl "pkg:pypi/${d%@*}@${d#*@}" '[.[$p][] | select(.purl == $purl)] | length == 1' "$work/sbom-packages.json" >/dev/null \
      || fail "linux/$p: the SBOM does not list the fixture wheel $d (purl pkg:pypi/${d%@*}@${d#*@})"
  done
  log "linux/$p SBOM: $(wc -l <<<"$want") dpkg packages of the base, the 7 fixture wheels, $(jq --arg p "linux/$p" '[.[$p][] | select(.purl | contains("type=vscode-extension"))] | length' "$work/sbom-packages.json") extensions, $(jq --arg p "linux/$p" '[.[$p][] | select(.purl | startswith("pkg:npm/"))] | length' "$work/sbom-packages.json") npm packages"
done

# (b) A wheel swapped in the index after locking: a build that runs the
# wheels step (empty BuildKit cache) fails with one line naming it, the
# platform and both hashes, and pushes nothing.
locked_sum=$(jq -r '.pythonLocks[0].distributions[] | select(.name == "aiosignal") | .sha256' "$lockcat")
python3 tests/e2e/mkwheels.py --swap aiosignal "$lockidx"
swapped_sum=$(sha256sum "$lockidx/files/aiosignal-1.3.1-py3-none-any.whl" | cut -d' ' -f1)
[ "$swapped_sum" != "$locked_sum" ] || fail "mkwheels --swap did not change aiosignal's bytes"
"$bkbin/buildctl" --addr "$sock" prune --all >/dev/null
if "$imagectl" --matrix "$work/cfg-lock/matrix.yaml" build --ray 2.46.0 --revision "$rev" --cache-dir "$work/vsix-cache" \
  --progress quiet --dist "$work/dist-swapped" >"$work/swapped.out" 2>"$work/swapped.err"; then
  fail "the build succeeded with a wheel that is not the locked one"
fi
hashline=$(grep -E "python lock: wheel hash mismatch: aiosignal 1\.3\.1 on linux/(amd64|arm64): locked sha256 $locked_sum, the index served sha256 $swapped_sum" "$work/swapped.err" || true)
[ -n "$hashline" ] && [ "$(wc -l <"$work/swapped.err")" = 1 ] || fail "swapped wheel: want one error line naming aiosignal 1.3.1, the platform and both hashes; stderr: $(cat "$work/swapped.err")"
log "swapped wheel: $(cut -c1-220 <<<"$hashline")"
python3 tests/e2e/mkwheels.py "$lockidx" # the original bytes again

# (c) A transitive bump in the index: release promotes the locked image, a
# new aiosignal appears, refresh locks it, and plan gives exactly that reason
# for exactly one entry, which release rebuilds.
"$imagectl" --matrix "$work/cfg-lock/matrix.yaml" release --key "$work/cosign.key" --revision "$rev" --cache-dir "$work/vsix-cache" \
  --progress plain --output json >"$work/lock-promote.json" 2>"$work/lock-promote.err" \
  || { tail -n 40 "$work/lock-promote.err" >&2; fail "imagectl release (promote the locked image)"; }
python3 tests/e2e/mkwheels.py --add aiosignal==1.3.2 "$lockidx"
# refresh rewrites the snapshot in place (it keeps the extension file pins
# of the catalog it replaces); a copy keeps cfg-lock as it was.
mkdir -p "$work/cfg-lock2"
cp "$work/cfg-lock/matrix.yaml" "$work/cfg-lock/catalog.json" "$work/cfg-lock2/"
refresh "$work/cfg-lock2"
"$imagectl" --matrix "$work/cfg-lock2/matrix.yaml" plan --output json >"$work/plan-pybump.json" 2>"$work/plan-pybump.err" \
  || { cat "$work/plan-pybump.err" >&2; fail "imagectl plan after the transitive bump"; }
jq -e '(.entries | length) == 1 and .entries[0].action == "build"
    and .entries[0].reasons == [{"kind": "python dependency bump", "detail": "aiosignal 1.3.1 -> 1.3.2"}]' "$work/plan-pybump.json" >/dev/null \
  || fail "plan after the transitive bump: $(jq -c '[.entries[] | {name, action, reasons}]' "$work/plan-pybump.json")"
log "plan after the bump: $(jq -c '[.entries[] | {name, action, reasons: [.reasons[] | .kind + ": " + .detail]}]' "$work/plan-pybump.json")"
"$imagectl" --matrix "$work/cfg-lock2/matrix.yaml" release --key "$work/cosign.key" --revision "$rev" --cache-dir "$work/vsix-cache" \
  --progress plain --output json >"$work/release-pybump.json" 2>"$work/release-pybump.err" \
  || { tail -n 40 "$work/release-pybump.err" >&2; fail "imagectl release after the transitive bump"; }
[ "$(jq '[.results[] | select(.built)] | length' "$work/release-pybump.json")" = 1 ] || fail "release after the bump: $(jq -c . "$work/release-pybump.json")"
"$imagectl" verify "$lockref:latest" --key "$work/cosign.pub" --output json >"$work/verify-pybump.json" 2>&1 \
  || { jq . "$work/verify-pybump.json" >&2; fail "verify after the transitive bump release"; }
"$fu" sbom-packages "$lockref:latest" | jq -e 'all(.[]; any(.[]; .purl == "pkg:pypi/aiosignal@1.3.2"))' >/dev/null \
  || fail "the rebuilt image's SBOM does not list aiosignal 1.3.2"
log "transitive bump: plan gave 1 entry (python dependency bump: aiosignal 1.3.1 -> 1.3.2), release rebuilt it, its SBOM lists aiosignal 1.3.2"

if [ "${IMAGECTL_E2E_BENCH:-1}" != 0 ]; then
  cold=$(jq -r .duration "$work/cold.json")
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}'; }
  added=$(awk -v a="$(cat "$work/cfg-lock/refresh.seconds")" -v b="$(cat "$work/cfg-nolock/refresh.seconds")" 'BEGIN{printf "%.2f", a - b}')
  {
    echo "benchmark: Python lock and SBOM, as a ratio of the cold build above ($cold s)"
    printf '  %-34s %8s s  %s x cold  (refresh %s s with the lock, %s s without)\n' "locking 2 closures (refresh)" "$added" "$(ratio "$added" "$cold")" \
      "$(cat "$work/cfg-lock/refresh.seconds")" "$(cat "$work/cfg-nolock/refresh.seconds")"
    for p in linux/amd64 linux/arm64; do
      s=$(jq -r --arg p "$p" '.platforms[] | select(.platform == $p) | .sbom.duration' "$lj")
      printf '  %-34s %8s s  %s x cold\n' "SBOM scan $p (pull + imagectl-sbom)" "$s" "$(ratio "$s" "$cold")"
    done
  } | tee -a "$work/bench.txt" >&2
  # The same, measured by the Go benchmarks that make bench runs.
  { IMAGECTL_COLD_BUILD_SECONDS=$cold go test ./upstream/pip -run '^$' -bench 'LockClosure' -benchtime 1x 2>&1
    IMAGECTL_COLD_BUILD_SECONDS=$cold go -C cmd/imagectl-sbom test ./scan -run '^$' -bench 'ScanImage' -benchtime 1x 2>&1; } |
    grep -E 'x-cold-build|of one cold build' | sed 's/^ *[a-z_]*_test.go:[0-9]*: /  /' | tee -a "$work/bench.txt" >&2
fi

log "PASS in $((SECONDS - t0)) s"
