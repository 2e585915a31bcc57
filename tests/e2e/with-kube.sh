#!/usr/bin/env bash
# with-kube.sh CMD [ARG...]: run CMD against a real Kubernetes control plane
# and the real KubeRay operator, all on 127.0.0.1 with ports picked free at
# start, stopped and removed when CMD ends (each process by its own PID, on
# every exit path).
#
# Started from the binaries hack/deps.d/kube.sh builds from the Go module
# proxy (cached under $IMAGECTL_TEST_CACHE/bin/kube): etcd, kube-apiserver
# (static token, AlwaysAllow, PodSecurity admission on), kube-controller-manager
# (default ServiceAccounts, the namespace and garbage collectors) and the
# KubeRay operator ($IMAGECTL_KUBE_KUBERAY, default v1.5.0: one of the
# tests/kube/build/kuberay-vX.Y.Z modules), with that release's CRDs applied
# server-side from its module. There is no kubelet and no scheduler: Pods are
# objects only and stay Pending.
#
# CMD gets KUBECONFIG and IMAGECTL_KUBE_KUBECONFIG (the same file; tests use
# the second so that they never act on a developer's own cluster),
# IMAGECTL_KUBE_KUBERAY (the operator's version) and IMAGECTL_KUBE_LOGS (the
# components' logs). Every start begins with empty state. kubectl is the
# machine's; one of the API server's release is built where there is none.
# IMAGECTL_E2E_KEEP=1 keeps the work directory.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export IMAGECTL_TEST_CACHE=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
kuberay=${IMAGECTL_KUBE_KUBERAY:-v1.5.0}
[ -f "$repo/tests/kube/build/kuberay-$kuberay/go.mod" ] || {
  echo "with-kube.sh: IMAGECTL_KUBE_KUBERAY=$kuberay: no build module tests/kube/build/kuberay-$kuberay (have: $(cd "$repo/tests/kube/build" && ls -d kuberay-v* | sed 's/^kuberay-//' | tr '\n' ' '))" >&2
  exit 2
}
for t in openssl python3; do
  command -v $t >/dev/null || { echo "with-kube.sh: $t is not installed" >&2; exit 1; }
done

t0=$SECONDS
log() { printf '[kube %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }

# The binaries (built when missing or stale).
declare -A dir
need=(etcd kubernetes "kuberay-$kuberay")
command -v kubectl >/dev/null || need+=(kubectl)
built=$(bash "$repo/hack/deps.d/kube.sh" "${need[@]}")
while read -r c d; do dir[$c]=$d; done <<<"$built"
# Without a kubectl of its own, the machine gets the API server's release.
[ -z "${dir[kubectl]:-}" ] || export PATH=${dir[kubectl]}:$PATH
crds=$(cd "$repo/tests/kube/build/kuberay-$kuberay" && go mod download -json "github.com/ray-project/kuberay/ray-operator@$kuberay" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')/config/crd/bases
[ -d "$crds" ] || { echo "with-kube.sh: no CRDs in $crds" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/imagectl-kube.XXXXXX")
names=() # names[i] started pids[i]; stopped in reverse order
pids=()
cleanup() {
  local rc=$? i p
  trap - EXIT INT TERM
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -TERM "$p" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      log "${names[i]} (pid $p) did not stop in 10 s: SIGKILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    if kill -0 "${pids[i]}" 2>/dev/null; then
      log "FAIL: ${names[i]} (pid ${pids[i]}) is still running"
      rc=1
    fi
  done
  if [ $rc -ne 0 ]; then
    for n in "${names[@]}"; do
      [ -s "$work/$n.log" ] && { log "last lines of $work/$n.log:"; tail -n 15 "$work/$n.log" >&2; }
    done
  fi
  if [ $rc -eq 0 ] && [ "${IMAGECTL_E2E_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    log "logs and state kept in $work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() { log "FAIL: $*"; exit 1; }

# freeports N: N distinct TCP ports free on 127.0.0.1 right now.
freeports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# start NAME CMD...: run CMD in the background, its output in $work/NAME.log.
start() {
  local n=$1
  shift
  "$@" >"$work/$n.log" 2>&1 &
  names+=("$n")
  pids+=($!)
}

# alive NAME: fail when the process started as NAME has exited.
alive() {
  local i
  for ((i = 0; i < ${#names[@]}; i++)); do
    if [ "${names[i]}" = "$1" ] && ! kill -0 "${pids[i]}" 2>/dev/null; then
      fail "$1 exited during startup (see $work/$1.log): $(tail -n 5 "$work/$1.log")"
    fi
  done
}

# until_ok NAME SECONDS CMD...: retry CMD every 0.5 s while NAME runs.
until_ok() {
  local n=$1 s=$2 end
  shift 2
  end=$((SECONDS + s))
  until "$@" >/dev/null 2>&1; do
    alive "$n"
    [ $SECONDS -lt $end ] || fail "$n not ready after ${s}s (see $work/$n.log)"
    sleep 0.5
  done
}

read -r etcd_client etcd_peer apiserver op_metrics op_health < <(freeports 5)

# etcd, with an empty data directory.
start etcd "${dir[etcd]}/etcd" --name default --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "default=http://127.0.0.1:$etcd_peer" --log-level warn
until_ok etcd 60 python3 -c "import urllib.request,sys; sys.exit(0 if b'true' in urllib.request.urlopen('http://127.0.0.1:$etcd_client/health', timeout=2).read() else 1)"
log "etcd ${dir[etcd]##*/etcd-} on 127.0.0.1:$etcd_client"

# kube-apiserver: a generated service-account key, a static admin token.
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s,admin,admin,system:masters\n' "$token" >"$work/tokens.csv"
start kube-apiserver "${dir[kubernetes]}/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_client" --bind-address 127.0.0.1 --secure-port "$apiserver" \
  --cert-dir "$work/pki" --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$work/sa.pub" --service-account-signing-key-file "$work/sa.key" \
  --authorization-mode AlwaysAllow --token-auth-file "$work/tokens.csv" \
  --service-cluster-ip-range 10.96.0.0/16 --enable-priority-and-fairness=false
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$apiserver
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $token
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: default}
current-context: local
EOF
chmod 600 "$work/kubeconfig"
export KUBECONFIG=$work/kubeconfig IMAGECTL_KUBE_KUBECONFIG=$work/kubeconfig
k() { kubectl --kubeconfig "$work/kubeconfig" "$@"; }
until_ok kube-apiserver 300 k get --raw /readyz
log "kube-apiserver $(k version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])') on 127.0.0.1:$apiserver"

# kube-controller-manager: the default ServiceAccount of every namespace
# (Pods are refused without it), kube-root-ca.crt, namespace deletion.
start kube-controller-manager "${dir[kubernetes]}/kube-controller-manager" \
  --kubeconfig "$work/kubeconfig" --secure-port 0 --leader-elect=false \
  --service-account-private-key-file "$work/sa.key" --root-ca-file "$work/pki/apiserver.crt" \
  --use-service-account-credentials=false
until_ok kube-controller-manager 180 k get serviceaccount default -n default
log "kube-controller-manager: ServiceAccount default/default exists"

# The KubeRay operator and its release's CRDs.
k apply --server-side -f "$crds" >"$work/crds.log"
k wait --for condition=Established crd --all --timeout=60s >>"$work/crds.log"
log "KubeRay $kuberay CRDs: $(k get crd -o name | tr '\n' ' ')"
start ray-operator "${dir[kuberay-$kuberay]}/ray-operator" --kubeconfig "$work/kubeconfig" \
  --enable-leader-election=false --metrics-addr "127.0.0.1:$op_metrics" \
  --health-probe-bind-address "127.0.0.1:$op_health"
until_ok ray-operator 180 python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$op_health/readyz', timeout=2)"
log "KubeRay operator $kuberay ready (startup $((SECONDS - t0))s)"

export IMAGECTL_KUBE_KUBERAY=$kuberay IMAGECTL_KUBE_LOGS=$work
rc=0
"$@" || rc=$?
for n in "${names[@]}"; do alive "$n"; done
exit $rc
