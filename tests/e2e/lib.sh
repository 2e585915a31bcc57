# Shared setup of the end-to-end test (tests/e2e/run.sh) and the benchmark
# (tests/bench/run.sh): sourced, not run. Every function works in $work and
# leaves what it started in $pids for the EXIT trap e2e_init installs.
#
#   e2e_init NAME                  work dir, log/fail, cleanup trap
#   e2e_tools                      buildkitd/bases cached, imagectl and fakeupstream built
#   e2e_registry                   token-auth registry, $DOCKER_CONFIG logged in -> $reg
#   e2e_serve_index DIR            DIR (files/, simple/) as a PEP 503 index -> $pyindex
#   e2e_gallery [VSIXDIR]          fake Marketplace + Open VSX -> $work/gallery.json
#   e2e_buildkitd NAME             a rootful buildkitd -> $work/NAME.sock, log $work/NAME.log
#   e2e_bases                      stand-in base and tools images pushed -> $tools, $tools_pinned
#   e2e_config DIR [OMIT] [VSIXDIR]  matrix.yaml + catalog.json for the local upstreams
#   e2e_keys                       cosign.key/.pub and other.key/.pub in $work
#   build NAME CFGDIR [flags]      imagectl build --push --sign ..., JSON in $work/NAME.json
#   reglines / uploaded LINE / requests LINE   registry log counters
#
# Env: IMAGECTL_TEST_CACHE (slow artefacts), IMAGECTL_E2E_KEEP=1 keeps $work.

# e2e_init NAME: cd to the repository, make $work, define log and fail, and
# install the cleanup trap (stops $pids, removes $work on success).
e2e_init() {
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cd "$repo"
  export IMAGECTL_TEST_CACHE=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
  work=$(mktemp -d "${TMPDIR:-/tmp}/imagectl-$1.XXXXXX")
  e2e_name=$1
  t0=$SECONDS
  pids=()
  # buildkitd runs rootful (OCI worker, runc); as another user it runs under
  # sudo with its socket owned by our group.
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  trap e2e_cleanup EXIT
}

log() { printf '[%s %4ds] %s\n' "${e2e_name:-e2e}" "$((SECONDS - t0))" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

e2e_cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    log "logs in $work (buildkitd.log, registry.log, *.err)"
    tail -n 30 "$work/buildkitd.log" 2>/dev/null || true
  elif [ "${IMAGECTL_E2E_KEEP:-0}" != 1 ]; then
    $sudo_ rm -rf "$work"
  fi
  exit $rc
}

# wait_file FILE SECONDS: wait for a file written by a background server.
wait_file() {
  local i=0
  until [ -s "$1" ]; do
    i=$((i + 1)); [ $i -le $(($2 * 10)) ] || fail "timed out waiting for $1"
    sleep 0.1
  done
}

# e2e_tools: buildkitd and the stand-in bases (idempotent, cached), imagectl,
# its SBOM scanner and the fakeupstream helper built into $work/bin.
e2e_tools() {
  bash hack/deps.d/30-buildkit.sh >&2
  bash hack/deps.d/35-base-images.sh >&2
  bkver=$(go list -m -f '{{.Version}}' github.com/moby/buildkit)
  bkbin=$IMAGECTL_TEST_CACHE/bin/buildkit-$bkver
  base=$IMAGECTL_TEST_CACHE/base
  log "building imagectl and the e2e helper"
  go build -o "$work/bin/imagectl" ./cmd/imagectl
  # The SBOM scanner beside imagectl, where imagectl looks for it.
  go -C cmd/imagectl-sbom build -o "$work/bin/imagectl-sbom" .
  go build -o "$work/bin/fakeupstream" ./tests/e2e/fakeupstream
  imagectl=$work/bin/imagectl
  fu=$work/bin/fakeupstream
}

# e2e_registry: the registry requires token authentication the way Docker
# Hub does (401 + WWW-Authenticate: Bearer realm,service,scope; basic
# credentials only at the token endpoint). Everything authenticates with the
# docker config `docker login` writes, read through $DOCKER_CONFIG. Its log
# ($work/registry.log) has one line per request and one "upload-bytes N" per
# blob upload.
e2e_registry() {
  printf 'e2e-%s\n' "$RANDOM$RANDOM" >"$work/registry.password"
  "$fu" registry -port-file "$work/registry.port" -log "$work/registry.log" \
    -user e2e -password-file "$work/registry.password" 2>"$work/registry.err" &
  pids+=($!)
  wait_file "$work/registry.port" 30
  reg=127.0.0.1:$(cat "$work/registry.port")
  export DOCKER_CONFIG=$work/docker
  mkdir -p "$DOCKER_CONFIG"
  # exactly what `docker login $reg -u e2e` writes
  jq -n --arg reg "$reg" --arg auth "$(printf 'e2e:%s' "$(cat "$work/registry.password")" | base64 -w0)" \
    '{auths: {($reg): {auth: $auth}}}' >"$DOCKER_CONFIG/config.json"
  chmod 600 "$DOCKER_CONFIG/config.json"
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$reg/v2/")
  [ "$code" = 401 ] || fail "the e2e registry answered /v2/ without credentials with $code, want 401"
  log "registry at $reg (token auth; credentials in $DOCKER_CONFIG/config.json)"
}

# e2e_serve_index DIR: serve DIR (files/*.whl, simple/<project>/) over HTTP.
e2e_serve_index() {
  "$fu" serve -dir "$1" -port-file "$work/pyindex.port" 2>"$work/pyindex.err" &
  pids+=($!)
  wait_file "$work/pyindex.port" 30
  pyindex=http://127.0.0.1:$(cat "$work/pyindex.port")/simple
  log "package index at $pyindex"
}

# e2e_gallery [VSIXDIR]: the fake Marketplace and Open VSX serving VSIXDIR
# (default: extensions/testdata/vsix).
e2e_gallery() {
  "$fu" gallery ${1:+-dir "$1"} -urls-file "$work/gallery.json" 2>"$work/gallery.err" &
  pids+=($!)
  wait_file "$work/gallery.json" 120
  log "fake marketplace at $(jq -r .marketplace "$work/gallery.json")"
}

# e2e_buildkitd NAME: a rootful buildkitd with its own root ($work/NAME-root),
# socket ($work/NAME.sock) and log ($work/NAME.log), pushing to $reg over
# plain HTTP. It must list linux/arm64 (QEMU binfmt) among its platforms.
e2e_buildkitd() {
  local n=$1 i
  cat >"$work/$n.toml" <<TOML
[worker.oci]
  enabled = true
  gc = false
[worker.containerd]
  enabled = false
[registry."$reg"]
  http = true
TOML
  local sock=unix://$work/$n.sock
  $sudo_ "$bkbin/buildkitd" --config "$work/$n.toml" --root "$work/$n-root" --addr "$sock" \
    --group "$(id -g)" --oci-worker=true --containerd-worker=false >"$work/$n.log" 2>&1 &
  pids+=($!)
  for i in $(seq 1 300); do
    "$bkbin/buildctl" --addr "$sock" debug workers >"$work/$n-workers.txt" 2>/dev/null && break
    [ "$i" -lt 300 ] || fail "buildkitd $n did not start (see $work/$n.log)"
    sleep 0.2
  done
  grep -q linux/arm64 "$work/$n-workers.txt" || fail "buildkitd $n lists no linux/arm64 worker platform (binfmt?): $(cat "$work/$n-workers.txt")"
  log "buildkitd $n ($bkver) at $sock: $(tail -n1 "$work/$n-workers.txt" | awk '{print $2}')"
}

# e2e_bases: the stand-in code-server base (amd64 + arm64) and the tools
# image (amd64) pushed to $reg. matrix.yaml names the tools image by tag; the
# catalog locks it to the index digest (as imagectl matrix refresh records
# it), so every build is pinned.
e2e_bases() {
  "$fu" push-base -ref "$reg/code-server:4.101.2" \
    -tar linux/amd64="$base/base-amd64.tar" -tar linux/arm64="$base/base-arm64.tar" >"$work/base.json"
  "$fu" push-base -ref "$reg/tools:bookworm" -tar linux/amd64="$base/tools-amd64.tar" >"$work/tools.json"
  tools=$reg/tools:bookworm
  tools_pinned=$tools@$(jq -r .index "$work/tools.json")
  log "bases pushed: $(jq -c . "$work/base.json")"
}

# e2e_config DIR [OMIT] [VSIXDIR]: matrix.yaml and catalog.json pointing at
# the local upstreams; OMIT (id@version,...) are left out of the catalog (a
# snapshot taken before those releases).
e2e_config() {
  mkdir -p "$1"
  "$fu" e2e-config -out "$1" -registry "$reg" -base "$work/base.json" -gallery-urls "$work/gallery.json" \
    -package-index "$pyindex" -tools-image "$tools" -tools "$work/tools.json" -omit "${2:-}" ${3:+-vsix "$3"}
}

# e2e_keys: two cosign key pairs (cosign, other) in $work.
e2e_keys() {
  export COSIGN_PASSWORD=e2e-password
  (cd "$work" && "$imagectl" sign --generate-key cosign >/dev/null && "$imagectl" sign --generate-key other >/dev/null)
}

# build NAME CFGDIR [extra flags]: imagectl build --push --sign --require-pins of Ray 2.46.0
# (UNSIGNED=1: without --sign; SIGN_KEY: another key than $work/cosign.key)
# for $PLATFORMS (default both), JSON to $work/NAME.json, stderr to
# $work/NAME.err, wall time to $work/NAME.seconds and $work/NAME.ms. $rev is
# the revision label (pinned once by the caller).
build() {
  local n=$1 cfg=$2; shift 2
  local start=$SECONDS t=$(date +%s%N) sign=(--sign --key "${SIGN_KEY:-$work/cosign.key}")
  [ "${UNSIGNED:-0}" != 1 ] || sign=()
  "$imagectl" --matrix "$cfg/matrix.yaml" build --ray 2.46.0 --platform "${PLATFORMS:-linux/amd64,linux/arm64}" \
    --push "${sign[@]}" --revision "$rev" --require-pins \
    --cache-dir "${VSIX_CACHE:-$work/vsix-cache}" --progress plain --output json "$@" \
    >"$work/$n.json" 2>"$work/$n.err" || { tail -n 60 "$work/$n.err" >&2; fail "imagectl build ($n)"; }
  echo $((SECONDS - start)) >"$work/$n.seconds"
  echo $((($(date +%s%N) - t) / 1000000)) >"$work/$n.ms"
  log "build $n: $(jq -r .ref "$work/$n.json") in $(cat "$work/$n.ms") ms${PLATFORMS:+ ($PLATFORMS)}"
}

# Registry log counters, from line $1 on: blob bytes received, requests, and
# requests that write.
reglines() { wc -l <"$work/registry.log"; }
uploaded() { tail -n +"$(($1 + 1))" "$work/registry.log" | awk '$1 == "upload-bytes" {s += $2} END {print s + 0}'; }
requests() { tail -n +"$(($1 + 1))" "$work/registry.log" | grep -Ec ' (GET|HEAD|PUT|POST|PATCH|DELETE) ' || true; }
writes() { tail -n +"$(($1 + 1))" "$work/registry.log" | grep -Ec ' (PUT|POST|PATCH|DELETE) ' || true; }
