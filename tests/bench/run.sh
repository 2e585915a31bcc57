#!/usr/bin/env bash
# The rebuild benchmark at realistic size (issue 12): what a rebuild costs
# against a cold build, measured in one run on this machine's buildkitd,
# token-auth registry and fake upstreams (the e2e setup, tests/e2e/lib.sh),
# with fixtures of realistic size generated deterministically
# (tests/bench/mkfixtures.py: a 60 MiB ray wheel, 30 dependency wheels of
# 100 MiB, VSIX of 26, 16 and 16 MB, all incompressible).
#
#   make bench                       (this script, after the Go benchmarks)
#   bash tests/bench/run.sh
#
# Every run, in this order (each imagectl build is build --push --sign
# --key, --progress plain, as a release runs it):
#   cold          both platforms, empty BuildKit cache, empty VSIX cache, new repository
#                 (each run its own SOURCE_DATE_EPOCH, so no layer is in the registry)
#   no change     the same inputs again: published, nothing is built (and again
#                 with --verify-key cosign.pub: the key is not decrypted)
#   forced        the same inputs with --force: solved from the warm cache, pushed, signed
#   universal     anyscalecompute.ray-distributed-debugger 0.1.4 -> 0.1.6 (one layer for both platforms)
#   platform      ms-python.python 2025.6.1 -> 2025.8.0 (one layer per platform)
#   amd64 alone   linux/amd64 only, empty caches, new repository, another
#                 SOURCE_DATE_EPOCH (so no layer is in the registry yet)
#   unsigned      the same without --sign (build --push), another
#                 SOURCE_DATE_EPOCH again: what the naive build does (it
#                 neither signs nor attests), for the like-for-like ratio
#   naive         the proof of concept's shape: FROM a base with python3 and pip,
#                 one RUN that pip installs ray[default] and debugpy and downloads
#                 and unpacks the three amd64 VSIX (no signing, no attestations),
#                 empty BuildKit cache, new repository, pushed with buildctl
# Wall time is the command's (process start to exit). "received" is what the
# registry's blob uploads carried (layers, configs, signatures, attestations;
# manifests are not blobs). "changed" is the compressed size of the layers the
# build added that the previous image did not have, each counted once however
# many platforms share it; for a bump, "vs ext" divides received by the bumped
# extension's new layers. Requests are those the registry logged (every request
# that reached it authenticated; 401 challenges and /token are not counted).
#
# Env: IMAGECTL_BENCH_RUNS (default 1): repeat the whole sequence and print
# min / median; IMAGECTL_BENCH_OUT: also write the table there;
# IMAGECTL_TEST_CACHE, IMAGECTL_E2E_KEEP as for the e2e test.
set -euo pipefail
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init bench
runs=${IMAGECTL_BENCH_RUNS:-1}

e2e_tools
e2e_registry
log "generating the realistic-size fixtures"
python3 tests/bench/mkfixtures.py "$work/fixtures" >&2
e2e_serve_index "$work/fixtures/pyindex"
e2e_gallery "$work/fixtures/vsix"
e2e_buildkitd buildkitd
sock=unix://$work/buildkitd.sock
export BUILDKIT_HOST=$sock
e2e_bases
# cfg: before both releases; cfg-universal: the debugger 0.1.6 released;
# cfg-platform: ms-python.python 2025.8.0 released as well.
fx=$work/fixtures/vsix
e2e_config "$work/cfg" anyscalecompute.ray-distributed-debugger@0.1.6,ms-python.python@2025.8.0 "$fx"
e2e_config "$work/cfg-universal" ms-python.python@2025.8.0 "$fx"
e2e_config "$work/cfg-platform" "" "$fx"
e2e_keys
epoch0=1752537600
rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
pw=$(cat "$work/registry.password")
mkt=$(jq -r .marketplace "$work/gallery.json")

# token REPO: a pull token for REPO; blob/manifest readers on top of it.
token() { curl -sf -u "e2e:$pw" "http://$reg/token?service=imagectl-test-registry&scope=repository:$1:pull" | jq -r .token; }
get() { # REPO KIND REF [ACCEPT]
  curl -sf -H "Authorization: Bearer $(token "$1")" ${4:+-H "Accept: $4"} "http://$reg/v2/$1/$2/$3"
}
# layers NAME: "digest size" of every layer of build NAME's platform manifests.
layers() {
  local r=${2:-}
  local repo; repo=$(jq -r .ref "$work/$1.json"); repo=${repo#"$reg/"}; repo=${repo%@*}
  for d in $(jq -r '.platforms[].digest' "$work/$1.json"); do
    get "$repo" manifests "$d" application/vnd.oci.image.manifest.v1+json | jq -r '.layers[] | "\(.digest) \(.size)"'
  done | sort -u
}
# newlayers OLD NEW: layers of NEW not in OLD, "digest size".
newlayers() { comm -13 <(layers "$1") <(layers "$2"); }
# extlayers REPO OLD NEW ID: the new layers holding extension ID's folder.
extlayers() {
  local d s files
  newlayers "$2" "$3" | while read -r d s; do
    files=$(get "$1" blobs "$d" | tar -tz) || fail "reading layer $d of $1"
    if grep -q "^config/extensions/$4-" <<<"$files"; then echo "$d $s"; fi
  done
}
sum() { awk '{s += $2} END {print s + 0}'; }

# The naive definition: the proof of concept's one RUN, against the same
# index and gallery.
mkdir -p "$work/naive"
cat >"$work/naive/Dockerfile" <<'EOF'
ARG BASE
FROM ${BASE}
ARG PIP_INDEX_URL
ARG VSIX
RUN set -eu; \
    python3 -m pip install --no-cache-dir --break-system-packages --root-user-action=ignore \
      --index-url "$PIP_INDEX_URL" --trusted-host 127.0.0.1 "ray[default]==2.46.0" "debugpy==1.8.14"; \
    mkdir -p /config/extensions; \
    for v in $VSIX; do \
      python3 -c 'import io, sys, urllib.request, zipfile; z = zipfile.ZipFile(io.BytesIO(urllib.request.urlopen(sys.argv[1]).read())); z.extractall(sys.argv[2], [m for m in z.namelist() if m.startswith("extension/")])' "${v#*=}" /tmp/x; \
      mv /tmp/x/extension "/config/extensions/${v%%=*}"; rm -rf /tmp/x; \
    done; \
    chown -R 911:911 /config/extensions
EOF
vsix_url() { # PUBLISHER NAME VERSION TARGET
  echo "$mkt/_apis/public/gallery/publishers/$1/vsextensions/$2/$3/vspackage?targetPlatform=$4"
}
naive_vsix="ms-python.python-2025.6.1=$(vsix_url ms-python python 2025.6.1 linux-x64)"
naive_vsix+=" ms-python.debugpy-2025.10.0=$(vsix_url ms-python debugpy 2025.10.0 linux-x64)"
naive_vsix+=" anyscalecompute.ray-distributed-debugger-0.1.4=$(vsix_url anyscalecompute ray-distributed-debugger 0.1.4 universal)"

prune() { "$bkbin/buildctl" --addr "$sock" prune --all >/dev/null; }
results=$work/results.tsv # run row ms received changed vsext requests
: >"$results"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }

for i in $(seq 1 "$runs"); do
  log "run $i of $runs"
  repo=$reg/bench-$i
  # Each run its own SOURCE_DATE_EPOCH: other layer bytes, so a run finds
  # none of its layers in the registry (which stores blobs by digest across
  # repositories) and uploads like the first.
  export SOURCE_DATE_EPOCH=$((epoch0 + 10 * i))
  prune
  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "cold-$i" "$work/cfg" --repository "$repo"
  row "$i" cold "$(cat "$work/cold-$i.ms")" "$(uploaded "$r0")" "$(layers "cold-$i" | sum)" - "$(requests "$r0")"

  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "same-$i" "$work/cfg" --repository "$repo"
  [ -n "$(jq -r '.published // empty' "$work/same-$i.json")" ] || fail "the no-change build built: $(jq -c . "$work/same-$i.json" | head -c 400)"
  [ "$(writes "$r0")" = 0 ] || fail "the no-change build wrote to the registry"
  row "$i" nochange "$(cat "$work/same-$i.ms")" "$(uploaded "$r0")" 0 - "$(requests "$r0")"

  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "samevk-$i" "$work/cfg" --repository "$repo" --verify-key "$work/cosign.pub"
  [ -n "$(jq -r '.published // empty' "$work/samevk-$i.json")" ] || fail "the no-change build with --verify-key built"
  row "$i" nochangevk "$(cat "$work/samevk-$i.ms")" "$(uploaded "$r0")" 0 - "$(requests "$r0")"

  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "forced-$i" "$work/cfg" --repository "$repo" --force
  [ "$(jq -r .index "$work/forced-$i.json")" = "$(jq -r .index "$work/cold-$i.json")" ] || fail "the forced rebuild gave another index"
  row "$i" forced "$(cat "$work/forced-$i.ms")" "$(uploaded "$r0")" "$(newlayers "cold-$i" "forced-$i" | sum)" - "$(requests "$r0")"

  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "universal-$i" "$work/cfg-universal" --repository "$repo"
  ext=$(extlayers "bench-$i" "cold-$i" "universal-$i" anyscalecompute.ray-distributed-debugger)
  [ "$(printf '%s\n' "$ext" | grep -c .)" = 1 ] || fail "universal bump: want one new layer of the debugger shared by both platforms, got: $ext"
  row "$i" universal "$(cat "$work/universal-$i.ms")" "$(uploaded "$r0")" "$(newlayers "cold-$i" "universal-$i" | sum)" "$(printf '%s\n' "$ext" | sum)" "$(requests "$r0")"

  r0=$(reglines)
  VSIX_CACHE=$work/vsix-$i build "platform-$i" "$work/cfg-platform" --repository "$repo"
  ext=$(extlayers "bench-$i" "universal-$i" "platform-$i" ms-python.python)
  [ "$(printf '%s\n' "$ext" | grep -c .)" = 2 ] || fail "platform bump: want one new ms-python.python layer per platform, got: $ext"
  row "$i" platform "$(cat "$work/platform-$i.ms")" "$(uploaded "$r0")" "$(newlayers "universal-$i" "platform-$i" | sum)" "$(printf '%s\n' "$ext" | sum)" "$(requests "$r0")"

  # Another SOURCE_DATE_EPOCH again: with the cold build's, every amd64
  # layer would be in the registry already; like the naive build's, every
  # new layer is uploaded.
  prune
  r0=$(reglines)
  SOURCE_DATE_EPOCH=$((SOURCE_DATE_EPOCH + 1)) PLATFORMS=linux/amd64 VSIX_CACHE=$work/vsix-solo-$i build "solo-$i" "$work/cfg" --repository "$reg/bench-solo-$i"
  row "$i" solo "$(cat "$work/solo-$i.ms")" "$(uploaded "$r0")" "$(layers "solo-$i" | sum)" - "$(requests "$r0")"

  prune
  r0=$(reglines)
  UNSIGNED=1 SOURCE_DATE_EPOCH=$((SOURCE_DATE_EPOCH + 2)) PLATFORMS=linux/amd64 VSIX_CACHE=$work/vsix-unsigned-$i build "unsigned-$i" "$work/cfg" --repository "$reg/bench-unsigned-$i"
  row "$i" unsigned "$(cat "$work/unsigned-$i.ms")" "$(uploaded "$r0")" "$(layers "unsigned-$i" | sum)" - "$(requests "$r0")"

  prune
  r0=$(reglines)
  t=$(date +%s%N)
  "$bkbin/buildctl" --addr "$sock" build --frontend dockerfile.v0 --local context="$work/naive" --local dockerfile="$work/naive" \
    --opt platform=linux/amd64 --opt build-arg:BASE="$tools_pinned" --opt build-arg:PIP_INDEX_URL="$pyindex" \
    --opt build-arg:VSIX="$naive_vsix" --opt build-arg:SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
    --output "type=image,name=$reg/bench-naive-$i:latest,push=true,oci-mediatypes=true" --progress plain \
    >"$work/naive-$i.out" 2>&1 || { tail -n 40 "$work/naive-$i.out" >&2; fail "naive build"; }
  ms=$((($(date +%s%N) - t) / 1000000))
  log "naive build: $ms ms"
  row "$i" naive "$ms" "$(uploaded "$r0")" - - "$(requests "$r0")"
done

# The table: per row, min / median over the runs of wall time (and its ratio
# to the cold build's median), and the median of the byte and request counts.
table() {
  awk -F'\t' -v runs="$runs" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function mb(b) { return b == "-" ? "-" : sprintf("%.1f MB", b / 1e6) }
    { k = $2; n[k]++; ms[k, n[k]] = $3; rx[k, n[k]] = $4; ch[k, n[k]] = $5; ex[k, n[k]] = $6; rq[k, n[k]] = $7; order[k] = NR }
    END {
      nrows = split("cold nochange nochangevk forced universal platform solo unsigned naive", rows, " ")
      label["cold"] = "cold (both platforms)"; label["nochange"] = "no change (published)"
      label["nochangevk"] = "no change, --verify-key cosign.pub"
      label["forced"] = "forced no change (--force)"; label["universal"] = "universal bump (debugger 0.1.4->0.1.6)"
      label["platform"] = "platform bump (ms-python.python)"; label["solo"] = "linux/amd64 alone, cold"
      label["unsigned"] = "linux/amd64 alone, cold, unsigned"
      label["naive"] = "naive one-RUN, linux/amd64, cold"
      for (r = 1; r <= nrows; r++) { k = rows[r]; for (i = 1; i <= n[k]; i++) { a[i] = ms[k, i] } ; m[k] = med(a, n[k]); lo[k] = a[1] }
      printf "%-40s %17s %13s %12s %12s %8s %9s\n", "build", "wall s (min/med)", "x cold (med)", "received", "changed", "vs ext", "requests"
      for (r = 1; r <= nrows; r++) {
        k = rows[r]
        for (i = 1; i <= n[k]; i++) a[i] = rx[k, i]; rxm = med(a, n[k])
        for (i = 1; i <= n[k]; i++) a[i] = rq[k, i]; rqm = med(a, n[k])
        chm = "-"; if (ch[k, 1] != "-") { for (i = 1; i <= n[k]; i++) a[i] = ch[k, i]; chm = med(a, n[k]) }
        exm = "-"; if (ex[k, 1] != "-") { for (i = 1; i <= n[k]; i++) a[i] = ex[k, i]; exm = med(a, n[k]) }
        printf "%-40s %8.2f / %6.2f %13.3f %12s %12s %8s %9d\n", label[k], lo[k] / 1000, m[k] / 1000, m[k] / m["cold"], mb(rxm), mb(chm),
          (exm == "-" ? "-" : sprintf("%.2fx", rxm / exm)), rqm
      }
      printf "linux/amd64 alone / naive one-RUN (median wall time): %.2f signed, %.2f unsigned (as the naive build)\n", m["solo"] / m["naive"], m["unsigned"] / m["naive"]
      for (r = 1; r <= nrows; r++) {
        k = rows[r]; if (ex[k, 1] == "-") continue
        for (i = 1; i <= n[k]; i++) a[i] = rx[k, i]; rxm = med(a, n[k])
        for (i = 1; i <= n[k]; i++) a[i] = ch[k, i]; chm = med(a, n[k])
        for (i = 1; i <= n[k]; i++) a[i] = ex[k, i]; exm = med(a, n[k])
        printf "%s: new layers %.2fx the extension'"'"'s, the rest received (configs, signatures, attestations) %s\n", label[k], chm / exm, mb(rxm - chm)
      }
    }' "$results"
}
# Where the last run's imagectl builds spent their time: their JSON stages
# (seconds) and each platform's SBOM scan ("kept": the manifest already
# carried it; "-": no SBOM, an unsigned build).
stages() {
  printf '%-40s %6s %6s %6s %6s %6s  %s\n' "stages of run $runs (s)" fetch layout key solve sign "sbom scans"
  for k in cold:"cold (both platforms)" forced:"forced no change (--force)" universal:"universal bump (debugger 0.1.4->0.1.6)" \
    platform:"platform bump (ms-python.python)" solo:"linux/amd64 alone, cold" unsigned:"linux/amd64 alone, cold, unsigned"; do
    jq -r --arg name "${k#*:}" '(reduce (.stages // [])[] as $s ({}; .[$s.name] = $s.duration)) as $d
      | [$name, ($d.fetch // 0), ($d.layout // 0), ($d.key // 0), ($d.solve // 0), ($d.sign // 0),
         ([(.platforms // [])[] | "\(.platform | sub("linux/"; ""))=\(if .sbom == null then "-" elif .sbom.reused != null then "kept" else .sbom.duration end)"] | join(" "))]
      | "\(.[0] | . + " " * (40 - length)) \(.[1:6] | map(. * 100 | round / 100 | tostring | " " * (6 - length) + .) | join(" "))  \(.[6])"' "$work/${k%%:*}-$runs.json"
  done
}
{
  echo "imagectl rebuild benchmark, $runs run(s), $(nproc) cores, $(date -u +%Y-%m-%d) ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
  table
  stages
} | tee "$work/bench.txt"
[ -z "${IMAGECTL_BENCH_OUT:-}" ] || cp "$work/bench.txt" "$IMAGECTL_BENCH_OUT"
log "done in $((SECONDS - t0)) s; raw numbers in $work/results.tsv"
