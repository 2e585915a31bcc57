#!/usr/bin/env bash
# with-kube.sh CMD [ARG...]: run CMD against a real Kubernetes control plane
# and the real KubeRay operator, all on 127.0.0.1 with ports picked free at
# start, stopped and removed when CMD ends (each process by its own PID, on
# every exit path).
#
# Started from the binaries hack/deps.d/kube.sh builds from the Go module
# proxy (cached under $IMAGECTL_TEST_CACHE/bin/kube): etcd, kube-apiserver
# (static tokens, RBAC, PodSecurity admission on), kube-controller-manager
# (default ServiceAccounts, the namespace and garbage collectors) and the
# KubeRay operator ($IMAGECTL_KUBE_KUBERAY, default v1.5.0: one of the
# tests/kube/build/kuberay-vX.Y.Z modules), with that release's CRDs applied
# server-side from its module.
#
# Without IMAGECTL_KUBE_NODE=1 there is no kubelet and no scheduler: Pods are
# objects only and stay Pending. With it (as root) a node runs them as well:
# kube-scheduler, a kubelet named localhost (cgroupfs under a cgroup root of
# the run's own) and Debian's containerd and runc, with their state, sockets
# and mounts under the work directory, and a pod network that is a bridge made
# for the run with a /24 found unused on the machine, forwarding only
# between the run's Pods and no route off the machine; CoreDNS (the kubernetes plugin's cluster.local and
# reverse zones only, nothing forwarded) on the bridge's address as the
# Pods' DNS server, and kube-proxy (iptables) DNAT'ing ClusterIPs to the
# Pods on the bridge, so that Service names resolve and ClusterIPs route
# between the run's Pods (see node_start and node_proxy). Its images are imported, never
# pulled: the sandbox's pause and, from the OCI archive in
# IMAGECTL_KUBE_SIDECAR (the image the e2e builds), that image for
# linux/amd64 (exported as IMAGECTL_KUBE_SIDECAR_IMAGE) and the Ray stand-in
# built on it (tests/kube/standin; IMAGECTL_KUBE_RAY_IMAGE). The teardown
# (every exit path) stops the operator, deletes every Pod and waits for the
# kubelet to remove them, stops the node, kills what containerd left, unmounts
# everything under the work directory, removes the cgroups and the bridge,
# restores the sysctls the kubelet sets, removes the files the node wrote
# under /run, /var, /opt and /etc, kube-proxy's iptables chains and jumps
# (IPv4 and IPv6), nfacct counters and the nft tables made for them, and the
# conntrack entries of the run's Pods; then it checks that nothing this run made
# is left, each thing known by a name or ID of the run's own (its bridge,
# cgroup root, sandbox IDs, network name, work directory), and fails the run
# if something is. What other programs create or remove meanwhile (their
# network namespaces, containers, files) is not the run's: it is shown, not
# counted. IMAGECTL_KUBE_TEST_LEAK=STEP skips one teardown step before that
# check, to test it (tests/e2e/kube-teardown.sh).
#
# CMD gets KUBECONFIG and IMAGECTL_KUBE_KUBECONFIG (the same file; tests use
# the second so that they never act on a developer's own cluster),
# IMAGECTL_KUBE_KUBERAY (the operator's version), IMAGECTL_KUBE_LOGS (the
# components' logs), IMAGECTL_KUBE_HELM (helm, built like the rest),
# IMAGECTL_KUBE_LIMITED_KUBECONFIG (a kubeconfig of the user named in
# IMAGECTL_KUBE_LIMITED_USER, who has no RBAC binding: see the API server
# below) and,
# with a node, IMAGECTL_KUBE_NODE=localhost. Every start begins with empty
# state. kubectl is the machine's; one of the API server's release is built
# where there is none.
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
node=${IMAGECTL_KUBE_NODE:-0}
case $node in
  0 | "") node=0; unset IMAGECTL_KUBE_NODE ;;
  1)
    [ "$(id -u)" = 0 ] || { echo "with-kube.sh: IMAGECTL_KUBE_NODE=1 runs a kubelet and containerd: run as root" >&2; exit 2; }
    [ -f "${IMAGECTL_KUBE_SIDECAR:-}" ] || { echo "with-kube.sh: IMAGECTL_KUBE_NODE=1 needs IMAGECTL_KUBE_SIDECAR, the OCI archive of the sidecar image (imagectl build --dist; make test passes the e2e's), got '${IMAGECTL_KUBE_SIDECAR:-}'" >&2; exit 2; }
    ;;
  *) echo "with-kube.sh: IMAGECTL_KUBE_NODE=$node: want 1 or unset" >&2; exit 2 ;;
esac
# IMAGECTL_KUBE_TEST_LEAK=STEP[,STEP…]: see node_steps.
leak=${IMAGECTL_KUBE_TEST_LEAK:-}
for st in ${leak//,/ }; do
  case $st in
    cgroups | bridge | route | files | sysctls | proxy | conntrack) ;;
    *) echo "with-kube.sh: IMAGECTL_KUBE_TEST_LEAK=$leak: $st is not a step of the node's teardown (want a comma-separated list of cgroups, bridge, route, files, sysctls, proxy, conntrack)" >&2; exit 2 ;;
  esac
done
[ -z "$leak" ] || [ $node = 1 ] || { echo "with-kube.sh: IMAGECTL_KUBE_TEST_LEAK=$leak needs IMAGECTL_KUBE_NODE=1 (it skips a step of the node's teardown)" >&2; exit 2; }
if [ $node = 1 ]; then
  # The node's runtime: Debian's containerd (unless one is installed, e.g.
  # Docker's containerd.io), runc and the CNI plugins; for kube-proxy,
  # iptables, and for its teardown conntrack, nfacct and nft.
  . "$repo/hack/deps.d/lib.sh"
  pkgs=(iproute2 containernetworking-plugins iptables conntrack nfacct nftables)
  command -v containerd >/dev/null && command -v ctr >/dev/null && command -v containerd-shim-runc-v2 >/dev/null || pkgs+=(containerd)
  command -v runc >/dev/null || pkgs+=(runc)
  apt_install "${pkgs[@]}" >&2
  [ -f /sys/fs/cgroup/cgroup.controllers ] && { echo "with-kube.sh: IMAGECTL_KUBE_NODE=1: /sys/fs/cgroup is cgroup v2 only; the node is set up for cgroup v1 (or hybrid) hierarchies" >&2; exit 2; }
  if ls /var/lib/kubelet/device-plugins/*.sock >/dev/null 2>&1 && grep -q ' /var/lib/kubelet/device-plugins/' /proc/net/unix; then
    echo "with-kube.sh: IMAGECTL_KUBE_NODE=1: another kubelet serves /var/lib/kubelet/device-plugins (a kubelet empties that fixed directory when it starts)" >&2
    exit 2
  fi
fi
for t in openssl python3; do
  command -v $t >/dev/null || { echo "with-kube.sh: $t is not installed" >&2; exit 1; }
done

t0=$SECONDS
log() { printf '[kube %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }

# The binaries (built when missing or stale).
declare -A dir
need=(etcd kubernetes helm "kuberay-$kuberay")
[ $node = 0 ] || need+=(coredns)
command -v kubectl >/dev/null || need+=(kubectl)
built=$(bash "$repo/hack/deps.d/kube.sh" "${need[@]}")
while read -r c d; do dir[$c]=$d; done <<<"$built"
# Without a kubectl of its own, the machine gets the API server's release.
[ -z "${dir[kubectl]:-}" ] || export PATH=${dir[kubectl]}:$PATH
crds=$(cd "$repo/tests/kube/build/kuberay-$kuberay" && go mod download -json "github.com/ray-project/kuberay/ray-operator@$kuberay" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')/config/crd/bases
[ -d "$crds" ] || { echo "with-kube.sh: no CRDs in $crds" >&2; exit 1; }

work=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/imagectl-kube.XXXXXX")" && pwd -P) # no symlink: mountinfo names real paths
names=() # names[i] started pids[i]; stopped in reverse order
pids=()
# stop_pid NAME PID: SIGTERM, then SIGKILL after 10 s.
stop_pid() {
  kill -TERM "$2" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$2" 2>/dev/null; then
    log "$1 (pid $2) did not stop in 10 s: SIGKILL"
    kill -KILL "$2" 2>/dev/null || true
  fi
  wait "$2" 2>/dev/null || true
}
# stop NAME: stop the process started as NAME (and forget its PID, which
# may be reused).
stop() {
  local i
  for ((i = 0; i < ${#names[@]}; i++)); do
    if [ "${names[i]}" = "$1" ] && [ -n "${pids[i]}" ]; then
      stop_pid "$1" "${pids[i]}"
      pids[i]=
    fi
  done
  return 0
}
node_up=0 node_id=
cleanup() {
  local rc=$? i p
  # An interrupt during the teardown (a second Ctrl-C) must not end it
  # half way: the daemons would outlive the run. It is said, and ignored.
  trap - EXIT
  trap 'log "interrupted during the teardown: it goes on until what this run started is stopped"' INT TERM
  [ $node_up = 0 ] || node_down || rc=1
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    [ -z "${pids[i]}" ] || stop_pid "${names[i]}" "${pids[i]}"
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    if [ -n "${pids[i]}" ] && kill -0 "${pids[i]}" 2>/dev/null; then
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

# running NAME: whether the process started as NAME runs.
running() {
  local i
  for ((i = 0; i < ${#names[@]}; i++)); do
    if [ "${names[i]}" = "$1" ]; then [ -n "${pids[i]}" ] && kill -0 "${pids[i]}" 2>/dev/null; return; fi
  done
  return 1
}

# alive NAME: fail when the process started as NAME has exited.
alive() {
  local i
  for ((i = 0; i < ${#names[@]}; i++)); do
    if [ "${names[i]}" = "$1" ] && [ -n "${pids[i]}" ] && ! kill -0 "${pids[i]}" 2>/dev/null; then
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
# The API server's Service range (ClusterIPs). On a node, kube-proxy DNATs
# these to Pods, so no address or route on the machine may be in it.
svc_cidr=10.96.0.0/16

# ---- The node (IMAGECTL_KUBE_NODE=1) ----------------------------------------
# Other programs on the machine (other tests, other containers) create and
# remove their own network namespaces, containers, cgroups and files while
# this runs: the teardown removes and checks only what this run made, each
# thing known by a name or ID of the run's own (node_owned), never by
# comparing a machine-wide listing.
#
# The fixed paths the node's components write to outside the work directory
# (containerd's shim sockets, the CNI results, the kubelet's log links and
# device-plugin socket). Listed before and after: a directory the run made
# there is removed when it is empty again, and what changed there that is not
# the run's is shown, not counted. Pods' network namespaces are mounted under
# the work directory (netns_mounts_under_state_dir), so /run/netns holds none
# of the run's: it is listed only to show what others did.
node_paths=(/run/containerd /var/lib/cni /var/log/containers /var/log/pods /var/lib/kubelet /opt/containerd /etc/cni /opt/cni /etc/kubernetes /run/netns)
# The sysctls the kubelet sets on every start, those kube-proxy may set
# (route_localnet, conntrack's limits and timeouts; none with its flags
# here) and the forwarding and bridge-netfilter switches, which nothing
# here may turn on: recorded before, restored after.
node_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes
  net.ipv4.ip_forward net.ipv6.conf.all.forwarding net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait
  net.netfilter.nf_conntrack_tcp_be_liberal net.netfilter.nf_conntrack_udp_timeout net.netfilter.nf_conntrack_udp_timeout_stream)

# cgroup_mounts: the cgroup hierarchies' mount points (v1 and a hybrid's
# unified one), each once (cpu and cpuacct may be one mount with links).
cgroup_mounts() {
  awk '{for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup" || $(i + 1) == "cgroup2") print $5; break }}' /proc/self/mountinfo |
    while read -r m; do realpath "$m"; done | sort -u
}

# node_listing: the fixed paths as they are now.
node_listing() {
  local p
  for p in "${node_paths[@]}"; do
    if [ -e "$p" ] || [ -L "$p" ]; then find "$p" -xdev 2>/dev/null || true; else echo "absent $p"; fi
  done
}

node_start() {
  local id sub h
  id=$(python3 -c 'import secrets; print(secrets.token_hex(3))')
  node_id=$id
  IMAGECTL_KUBE_SIDECAR_IMAGE=imagectl.test/code-server-ray:$id
  IMAGECTL_KUBE_RAY_IMAGE=imagectl.test/ray-standin:$id
  IMAGECTL_KUBE_PAUSE_IMAGE=imagectl.test/pause:$id
  node_listing >"$work/node.before"
  sysctl "${node_sysctls[@]}" >"$work/node.sysctls" 2>/dev/null || true
  node_up=1 # from here on the teardown runs

  # The pod network: a /24 in 10.200.0.0/13 that no address or route on the
  # machine uses, on a bridge of the run's own. The bridge has the /24's
  # first address, $node_gw: the Pods' DNS server (CoreDNS listens there) and
  # the next hop of their only route besides their /24, the one to the
  # Service range. Pods have no default route and nothing is NAT'ed for them
  # to leave the machine.
  #
  # ClusterIPs reach Pods through br_netfilter (nf_call_iptables on this
  # bridge only): a Pod's packet to a ClusterIP enters the bridge,
  # kube-proxy's nat PREROUTING rule DNATs it to a Pod's IP, and
  # br_netfilter hands it to that Pod on the same bridge. For that the
  # kernel routes the DNAT'ed packet as if forwarded from the bridge: with
  # forwarding off on the bridge it is dropped (seen on this machine's
  # kernel 6.18: the DNAT'ed connection timed out; with the bridge's own
  # net.ipv4.conf.<bridge>.forwarding=1 it connected). So the bridge
  # forwards (net.ipv4.ip_forward, every other interface's, stays as it is),
  # and a policy-routing rule of the run's own keeps that forwarding on the
  # bridge: whatever arrives from the bridge and is not for the host itself
  # (the local table comes first) is routed by a table of the run's own that
  # holds only the /24 on the bridge and an unreachable default. A packet
  # from a Pod to anything else than the run's Pods and the host, DNAT'ed or
  # not, gets "no route to host"; none leaves the machine.
  local used
  used="$(ip -4 -o addr show; ip -4 route show table all)"
  sub=$(python3 - "$used" <<'PY'
import ipaddress, random, re, sys
used = [ipaddress.ip_network(m, strict=False) for m in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", sys.argv[1])]
cands = list(ipaddress.ip_network("10.200.0.0/13").subnets(new_prefix=24))
random.shuffle(cands)
for c in cands:
    if not any(c.overlaps(u) for u in used):
        print(c)
        break
PY
)
  [ -n "$sub" ] || fail "node: no unused /24 in 10.200.0.0/13 for the pod network"
  node_sub=$sub
  # kube-proxy rewrites connections to the Service range: nothing on the
  # machine may live there.
  local clash
  clash=$(python3 - "$used" "$svc_cidr" <<'PY'
import ipaddress, re, sys
svc = ipaddress.ip_network(sys.argv[2])
for m in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", sys.argv[1]):
    n = ipaddress.ip_network(m, strict=False)
    if n.prefixlen > 0 and n.overlaps(svc):
        print(m)
PY
)
  [ -z "$clash" ] || fail "node: the Service range $svc_cidr overlaps addresses or routes of the machine ($clash): kube-proxy would rewrite connections to them"
  [ -d /proc/sys/net/bridge ] || fail "node: br_netfilter is not loaded (no /proc/sys/net/bridge): without it a Pod's connection to a ClusterIP is not DNAT'ed on the bridge (modprobe br_netfilter; the run does not load kernel modules)"
  node_gw=$(python3 -c "import ipaddress,sys; print(next(ipaddress.ip_network(sys.argv[1]).hosts()))" "$sub")
  local tbl
  for _ in 1 2 3 4 5; do
    tbl=$(python3 -c 'import random; print(random.randint(1000000, 2000000000))')
    [ -n "$(ip route show table "$tbl" 2>/dev/null)" ] || ip rule list | grep -w "lookup $tbl" >/dev/null || break
    tbl=
  done
  [ -n "$tbl" ] || fail "node: no unused routing table number found"
  ip link add "ikb$id" type bridge
  node_bridge=ikb$id # ours from here on
  ip link set "$node_bridge" type bridge nf_call_iptables 1
  ip addr add "$node_gw/24" dev "$node_bridge"
  ip link set "$node_bridge" up
  node_table=$tbl # ours from here on
  ip route add "$sub" dev "$node_bridge" table "$node_table"
  ip route add unreachable default table "$node_table"
  ip rule add iif "$node_bridge" lookup "$node_table" priority 1
  sysctl -qw "net.ipv4.conf.$node_bridge.forwarding=1" # after the rule
  mkdir -p "$work/cni/net.d" "$work/cni/ipam"
  cat >"$work/cni/net.d/10-imagectl.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "imagectl-$id", "plugins": [
  {"type": "bridge", "bridge": "$node_bridge", "isGateway": false, "isDefaultGateway": false, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$sub", "gateway": "$node_gw"}]], "routes": [{"dst": "$svc_cidr", "gw": "$node_gw"}], "dataDir": "$work/cni/ipam"}}
]}
JSON
  log "node: pod network $sub on bridge $node_bridge ($node_gw; Pods route only $svc_cidr through it; what comes from the bridge is routed by table $node_table: $sub or unreachable)"

  # The cgroup root of the run's own, in every v1 hierarchy (cpuset needs
  # its cpus and mems before a child can hold tasks).
  local cg=imagectl-kube-$id
  for h in $(cgroup_mounts); do
    [ ! -e "$h/$cg" ] || fail "node: $h/$cg exists already"
  done
  node_cgroup=$cg # ours from here on
  for h in $(cgroup_mounts); do
    mkdir "$h/$cg"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h/$cg/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$cg/cpuset.mems"
    fi
  done

  # containerd: root, state, sockets, runc root and netns mounts under $work.
  local cd=$work/containerd
  mkdir -p "$cd"
  node_sock=$cd/containerd.sock
  cat >"$cd/config.toml" <<TOML
version = 2
root = "$cd/root"
state = "$cd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$node_sock"
[ttrpc]
  address = "$node_sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$cd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGECTL_KUBE_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$work/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "$cd/runc"
TOML
  # No image is pulled: every pull goes to a proxy that is a closed port.
  start containerd env HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY= https_proxy= http_proxy= no_proxy= \
    containerd --config "$cd/config.toml"
  until_ok containerd 60 ctr --address "$node_sock" version
  log "node: containerd $(containerd --version | awk '{print $3}') on $node_sock"

  # Images, imported: pause for the sandbox; the e2e's image and the Ray
  # stand-in on it.
  CGO_ENABLED=0 go build -trimpath -o "$work/standin" "$repo/tests/kube/standin"
  mkdir -p "$work/sidecar-layout"
  tar -xf "$IMAGECTL_KUBE_SIDECAR" -C "$work/sidecar-layout"
  "$work/standin" image pause "$work/pause.tar" "$IMAGECTL_KUBE_PAUSE_IMAGE"
  "$work/standin" image ray "$work/sidecar-layout" "linux/$(go env GOARCH)" "$work/images.tar" "$IMAGECTL_KUBE_RAY_IMAGE" "$IMAGECTL_KUBE_SIDECAR_IMAGE"
  rm -rf "$work/sidecar-layout"
  ctr --address "$node_sock" -n k8s.io images import "$work/pause.tar" >"$work/images.log"
  ctr --address "$node_sock" -n k8s.io images import "$work/images.tar" >>"$work/images.log"
  rm -f "$work/pause.tar" "$work/images.tar"
  export IMAGECTL_KUBE_SIDECAR_IMAGE IMAGECTL_KUBE_RAY_IMAGE IMAGECTL_KUBE_PAUSE_IMAGE
  log "node: images imported: $(ctr --address "$node_sock" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

  # The kubelet: anonymous AlwaysAllow on 127.0.0.1, named localhost (the
  # API server reaches it by hostname: a node IP cannot be loopback). It
  # talks to the API server as the admin user (system:masters, allowed
  # everything by RBAC), not as system:node:localhost: the API server needs
  # no Node authorizer for it.
  local kport khealth
  read -r kport khealth < <(freeports 2)
  mkdir -p "$work/kubelet"
  cat >"$work/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $khealth
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$node_sock
cgroupDriver: cgroupfs
cgroupRoot: /$node_cgroup
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: $work/pod-logs
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
clusterDNS: [$node_gw]
clusterDomain: cluster.local
YAML
  start kubelet "${dir[kubernetes]}/kubelet" --config "$work/kubelet.yaml" --kubeconfig "$work/kubeconfig" \
    --root-dir "$work/kubelet" --cert-dir "$work/kubelet/pki" --hostname-override localhost
  start kube-scheduler "${dir[kubernetes]}/kube-scheduler" --kubeconfig "$work/kubeconfig" --secure-port 0 --leader-elect=false
  until_ok kubelet 180 k wait --for condition=Ready node/localhost --timeout 2s
  log "node: kubelet Ready (node localhost, cgroup root /$node_cgroup), kube-scheduler running"
  node_dns
  node_proxy
}

# node_dns: CoreDNS, the cluster's DNS for the Pods (the kubelet's
# clusterDNS), on the bridge's address, port 53. Its Corefile serves only the
# kubernetes plugin's zones, from the API server on loopback; it has no
# forward plugin (the binary has none compiled in: tests/kube/build/coredns),
# so a name outside cluster.local is refused, never asked of another server.
# health and ready listen on loopback.
node_dns() {
  local health ready
  read -r health ready < <(freeports 2)
  kubeconfig "$work/coredns.kubeconfig" system:coredns "$dns_token"
  # RBAC has no default role for CoreDNS: the one kubeadm gives it (what
  # its kubernetes plugin lists and watches), bound to its token's user.
  k apply --server-side -f - >"$work/coredns-rbac.log" <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}
YAML
  cat >"$work/Corefile" <<COREFILE
cluster.local in-addr.arpa ip6.arpa {
    bind $node_gw
    errors
    log
    health 127.0.0.1:$health
    ready 127.0.0.1:$ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $work/coredns.kubeconfig local
        ttl 5
    }
}
COREFILE
  start coredns "${dir[coredns]}/coredns" -conf "$work/Corefile" -dns.port 53
  until_ok coredns 60 python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$ready/ready', timeout=2)"
  log "node: CoreDNS $("${dir[coredns]}/coredns" -version | head -n 1 | awk '{print $1}') on $node_gw:53 (cluster.local, reverse zones; nothing forwarded)"
}

# The iptables chains and nfacct counters kube-proxy makes have fixed names,
# the same for every kube-proxy: the run refuses to start when one exists
# (another kube-proxy's), and removes all of them after, as its own.
proxy_nfacct=(ct_state_invalid_dropped_pkts localhost_nps_accepted_pkts)

# proxy_state: kube-proxy's chains and rules (any line naming KUBE-, IPv4
# and IPv6) and nfacct counters, as they are now; empty when there are none.
proxy_state() {
  local f
  for f in iptables ip6tables; do
    "$f-save" 2>/dev/null | grep -E '^\*|KUBE-' | awk -v f="$f" '/^\*/ {t = substr($0, 2); next} {print f " -t " t " " $0}'
  done
  # nfacct list: "{ pkts = …, bytes = … } = NAME;"
  nfacct list 2>/dev/null | sed -n 's/.* = \([^ ;]*\);$/\1/p' | grep -xF -f <(printf '%s\n' "${proxy_nfacct[@]}") | sed 's/^/nfacct /' || true
}

# node_proxy: kube-proxy, in iptables mode, for the node localhost.
#
# What its rules do, and why they stay on the machine: its nat PREROUTING
# and OUTPUT jumps match only the Service range's ClusterIPs (and NodePorts
# on the bridge's own address, --nodeport-addresses) and DNAT them to the
# Services' endpoints, which here are Pods on the run's bridge (the API
# server's own Service, kubernetes, points at the host itself). It
# masquerades (KUBE-POSTROUTING: MASQUERADE only packets carrying its own
# mark 0x4000, set in KUBE-MARK-MASQ, which its Service chains jump to for
# traffic to a ClusterIP from outside --cluster-cidr and for a Pod reaching
# itself); --masquerade-all is off. Nothing here routes a Pod's packet off
# the machine: see the pod network above. Its filter rules (KUBE-FORWARD,
# KUBE-SERVICES, KUBE-FIREWALL, …) accept its own marked traffic, reject
# connections to Services without endpoints and drop conntrack-INVALID
# forwarded packets while it runs.
#
# It sets no sysctl with this configuration: route_localnet only for
# NodePorts on loopback (off: --iptables-localhost-nodeports=false and
# --nodeport-addresses the bridge's address), the conntrack limits and
# timeouts only when configured (all 0 here: left as they are). The
# sysctls are recorded and restored all the same (node_sysctls).
# Under pipefail a pipeline never ends in grep -q here: it exits at its
# first match, and the command before it can die of SIGPIPE (exit 141),
# failing a check that matched. grep >/dev/null reads its whole input.
proxy_synced() {
  iptables -t nat -C PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES &&
    iptables -t nat -S KUBE-POSTROUTING | grep '^-A ' >/dev/null &&
    iptables -t nat -S | grep '^-A KUBE-SVC-' >/dev/null
}
node_proxy() {
  local healthz metrics left
  left=$(proxy_state)
  [ -z "$left" ] || fail "node: kube-proxy's iptables chains or nfacct counters exist already (another kube-proxy runs on this machine; its fixed names cannot be told from this run's): $(echo "$left" | head -n 5 | tr '\n' ' ')"
  nft list tables 2>/dev/null | sort >"$work/nft.before" || true
  read -r healthz metrics < <(freeports 2)
  kubeconfig "$work/kube-proxy.kubeconfig" system:kube-proxy "$proxy_token"
  node_proxy_up=1 # from here on its teardown runs
  start kube-proxy "${dir[kubernetes]}/kube-proxy" --kubeconfig "$work/kube-proxy.kubeconfig" \
    --proxy-mode iptables --hostname-override localhost --cluster-cidr "$node_sub" --bind-address "$node_gw" \
    --nodeport-addresses "$node_gw/32" --iptables-localhost-nodeports=false --masquerade-all=false \
    --healthz-bind-address "127.0.0.1:$healthz" --metrics-bind-address "127.0.0.1:$metrics" \
    --conntrack-max-per-core 0 --conntrack-min 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0
  until_ok kube-proxy 120 python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$healthz/healthz', timeout=2)"
  # Its first sync is done when the jump, its masquerading chain and the
  # API server's Service chain are all there: kube-proxy adds the jumps
  # before it writes the chains, so the jump alone is not enough (a check
  # in between read an empty KUBE-POSTROUTING).
  until_ok kube-proxy 60 proxy_synced
  # Its masquerading acts only on its own mark.
  local post
  post=$(iptables -t nat -S KUBE-POSTROUTING | grep '^-A ' || true)
  [[ ${post%%$'\n'*} == *'-m mark ! --mark 0x4000/0x4000 -j RETURN' ]] ||
    fail "node: kube-proxy's KUBE-POSTROUTING does not begin by returning packets without its mark 0x4000:"$'\n'"$post"
  local bad
  bad=$(iptables -t nat -S | grep '^-A KUBE-' | grep -- '-j MASQUERADE' | grep -v '^-A KUBE-POSTROUTING ' || true)
  [ -z "$bad" ] || fail "node: kube-proxy masquerades outside KUBE-POSTROUTING: $bad"
  # A Service chain marks for masquerading only what comes from outside
  # the Pods' range (! -s $node_sub), not every connection (--masquerade-all).
  bad=$(iptables -t nat -S | grep '^-A KUBE-SVC-' | grep -- '-j KUBE-MARK-MASQ' | grep -vF -- "! -s $node_sub " || true)
  [ -z "$bad" ] || fail "node: kube-proxy marks every connection to a ClusterIP for masquerading: $bad"
  iptables -t nat -S | grep '^-A KUBE-SVC-' | grep -- '-j KUBE-MARK-MASQ' >/dev/null ||
    fail "node: no KUBE-SVC- chain for the API server's Service kubernetes after kube-proxy's sync"
  log "node: kube-proxy (iptables) for $svc_cidr, cluster CIDR $node_sub: $(proxy_state | grep -c ' -N KUBE-\| :KUBE-') chains"
}


# node_down: the node's teardown (see the header); fails when the machine
# is not as node_start found it.
node_down() {
  local ok=0 m h left procs
  stop ray-operator # it would recreate the Pods deleted next
  if running kubelet; then
    k delete pods --all -A --grace-period 0 --force --wait=false >/dev/null 2>&1 || true
    # Until the kubelet has stopped every container and every sandbox (a
    # stopped sandbox's network is torn down through CNI and its netns
    # unmounted).
    local i
    for i in $(seq 1 90); do
      [ -z "$(ctr --address "$node_sock" -n k8s.io tasks ls -q 2>/dev/null)" ] &&
        ! grep ' - nsfs ' /proc/self/mountinfo | awk '{print $5}' | grep "^$work/" >/dev/null && break
      [ "$i" = 90 ] && log "node: the kubelet left containers or sandbox network namespaces after 45 s; killing and unmounting them"
      sleep 0.5
    done
  fi
  stop kube-scheduler
  stop kubelet
  stop kube-proxy
  stop coredns
  if [ -S "${node_sock:-}" ]; then
    for t in $(ctr --address "$node_sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$node_sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 0.5
    for t in $(ctr --address "$node_sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$node_sock" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  # Shims of this containerd that outlived it: processes whose -address is
  # this containerd's socket.
  local pid
  for pid in $(our_shims); do kill -KILL "$pid" 2>/dev/null || true; done
  # What still runs in the node's cgroups (in every hierarchy), then the
  # mounts under $work (deepest first).
  if [ -n "${node_cgroup:-}" ]; then
    for _ in $(seq 1 50); do
      procs=$(for h in $(cgroup_mounts); do [ -d "$h/$node_cgroup" ] && find "$h/$node_cgroup" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u)
      [ -n "$procs" ] || break
      kill -KILL $procs 2>/dev/null || true
      sleep 0.2
    done
  fi
  for m in $(awk -v w="$work/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # The sandboxes this containerd made (their IDs name the shim sockets and
  # CNI results outside $work).
  node_sandboxes >"$work/node.sandboxes"

  # The removal steps, each of what only this run made; then the check.
  local st skipped=()
  for st in "${node_steps[@]}"; do
    case ",$leak," in
      *",$st,"*)
        skipped+=("$st")
        log "node: IMAGECTL_KUBE_TEST_LEAK: skipping the teardown step $st before the check"
        continue
        ;;
    esac
    "node_rm_$st"
  done
  if left=$(node_owned) && [ -z "$left" ]; then
    [ ${#skipped[@]} = 0 ] || { log "FAIL: IMAGECTL_KUBE_TEST_LEAK=$leak: the check found nothing left although the steps ${skipped[*]} were skipped"; ok=1; }
  else
    log "FAIL: the node's teardown left on the machine what this run made:"
    echo "$left" >&2
    ok=1
    if [ ${#skipped[@]} -gt 0 ]; then
      # The leak was made on purpose: remove it now, so that the machine
      # is as before even so; the run fails all the same.
      for st in "${skipped[@]}"; do "node_rm_$st"; done
      if left=$(node_owned) && [ -z "$left" ]; then
        log "node: IMAGECTL_KUBE_TEST_LEAK=$leak: the check caught it; the skipped steps ${skipped[*]} ran afterwards, nothing of the run's is left now"
      else
        log "FAIL: after the skipped steps ${skipped[*]}, still left:"
        echo "$left" >&2
      fi
    fi
  fi
  # Changes under the fixed paths that are not this run's: shown, not
  # counted (another program made or removed them).
  node_listing >"$work/node.after"
  local others
  others=$(diff "$work/node.before" "$work/node.after" | grep '^[<>]' || true)
  [ -z "$others" ] || log "node: changed during the run by other programs under ${node_paths[*]} (not this run's, left as they are): $(echo "$others" | head -n 20 | tr '\n' ' ')"
  [ $ok = 0 ] && log "node: torn down; nothing this run made is left (processes, mounts, cgroups, bridge and veths, shim sockets, CNI results, log links, sysctls, kube-proxy's iptables chains and nfacct counters, conntrack entries)"
  return $ok
}

# IMAGECTL_KUBE_TEST_LEAK=STEP[,STEP…] tests the teardown's check itself
# (tests/e2e/kube-teardown.sh): each STEP named, of node_steps, is skipped
# before the check, which must then fail naming what it would have removed;
# the steps run after the check, and the run fails.
node_steps=(cgroups bridge route files sysctls proxy conntrack)

# our_shims: PIDs of processes started with -address this containerd's
# socket (its shims).
our_shims() {
  local f
  for f in /proc/[0-9]*/cmdline; do
    { tr '\0' '\n' <"$f" | grep -xF -- "$work/containerd/containerd.sock" >/dev/null; } 2>/dev/null || continue
    { tr '\0' '\n' <"$f" | grep -x -- '-address' >/dev/null; } 2>/dev/null || continue
    f=${f#/proc/}
    echo "${f%/cmdline}"
  done
}

# node_sandboxes: the IDs of every sandbox this run's containerd made (its
# log names each; those not yet removed are directories in its root).
node_sandboxes() {
  {
    grep -oE 'returns sandbox id \\"[0-9a-f]{64}' "$work/containerd.log" 2>/dev/null | grep -oE '[0-9a-f]{64}$' || true
    ls "$work/containerd/root/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null || true
  } | sort -u
}

# node_files: the files this run's node made outside $work that are still
# there: each sandbox's shim socket (containerd names it
# /run/containerd/s/<sha256 of ADDRESS/NAMESPACE/SANDBOX-ID>, runtime/v2/shim
# SocketAddress) and CNI results (the run's network is imagectl-<run ID>;
# the loopback's are cni-loopback-<sandbox ID>-lo), container log links into
# $work, the kubelet's device-plugin socket (no other kubelet serves that
# fixed path: checked before the start) when it was not there before.
node_files() {
  local s sum
  [ -n "${node_sock:-}" ] || return 0
  while read -r s; do
    [ -n "$s" ] || continue
    sum=$(printf '%s' "$work/containerd/containerd.sock/k8s.io/$s" | sha256sum | cut -d' ' -f1)
    [ ! -e "/run/containerd/s/$sum" ] || echo "/run/containerd/s/$sum"
    [ ! -e "/var/lib/cni/results/cni-loopback-$s-lo" ] || echo "/var/lib/cni/results/cni-loopback-$s-lo"
  done <"$work/node.sandboxes"
  [ ! -d /var/lib/cni ] || find /var/lib/cni -xdev -name "imagectl-$node_id*" 2>/dev/null | sort -r
  find /var/log/containers /var/log/pods -xdev -type l -lname "$work/*" 2>/dev/null || true
  if [ -e /var/lib/kubelet/device-plugins/kubelet.sock ] && ! grep -qxF /var/lib/kubelet/device-plugins/kubelet.sock "$work/node.before"; then
    echo /var/lib/kubelet/device-plugins/kubelet.sock
  fi
}

# node_owned: what this run made outside $work and is still there, one line
# each; empty when the teardown is complete.
node_owned() {
  local h pid key value
  for pid in $(our_shims); do echo "process $pid: a shim of this run's containerd"; done
  awk -v w="$work/" 'index($5, w) == 1 {print "mount " $5}' /proc/self/mountinfo
  if [ -n "${node_cgroup:-}" ]; then
    for h in $(cgroup_mounts); do
      [ ! -d "$h/$node_cgroup" ] || echo "cgroup $h/$node_cgroup"
    done
  fi
  if [ -n "${node_bridge:-}" ] && ip link show "$node_bridge" >/dev/null 2>&1; then
    echo "bridge $node_bridge"
    ip -o link show master "$node_bridge" | awk -F': ' '{print "veth " $2 " on the bridge"}'
  fi
  if [ -n "${node_table:-}" ]; then
    ip rule list | grep -w "lookup $node_table" | sed 's/^/ip rule /'
    ip route show table "$node_table" | sed "s/^/ip route (table $node_table) /"
  fi
  node_files | sed 's/^/file /'
  if [ "${node_proxy_up:-0}" = 1 ]; then
    proxy_state
    node_new_nft_tables | sed 's/^/nft table (made for kube-proxy'"'"'s rules, empty now) /'
  fi
  [ -z "${node_sub:-}" ] || node_conntrack | sed 's/^/conntrack /'
  while read -r key _ value; do
    [ "$(sysctl -n "$key")" = "$value" ] || echo "sysctl $key = $(sysctl -n "$key") (was $value)"
  done <"$work/node.sysctls"
}

# node_rm_cgroups: the run's cgroup root, in every hierarchy (deepest
# first).
node_rm_cgroups() {
  local h
  [ -n "${node_cgroup:-}" ] || return 0
  for h in $(cgroup_mounts); do
    [ -d "$h/$node_cgroup" ] || continue
    for _ in 1 2 3 4 5; do
      find "$h/$node_cgroup" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$h/$node_cgroup" ] || break
      sleep 0.2
    done
  done
}

# node_rm_bridge: the pod network: the veths still on the run's bridge (a
# Pod's network namespace outliving the run), then the bridge.
node_rm_bridge() {
  local m
  [ -n "${node_bridge:-}" ] && ip link show "$node_bridge" >/dev/null 2>&1 || return 0
  for m in $(ip -o link show master "$node_bridge" | awk -F': ' '{print $2}' | cut -d@ -f1); do
    log "node: veth $m is still on $node_bridge: deleting it"
    ip link delete "$m" 2>/dev/null || true
  done
  ip link delete "$node_bridge" 2>/dev/null || true
}

# node_rm_route: the policy-routing rule and table of the bridge.
node_rm_route() {
  [ -n "${node_table:-}" ] || return 0
  while ip rule del iif "$node_bridge" lookup "$node_table" priority 1 2>/dev/null; do :; done
  ip route flush table "$node_table" 2>/dev/null || true
}

# node_rm_files: node_files, then the directories the run made under the
# fixed paths (absent before) once they are empty.
node_rm_files() {
  local p
  node_files | while read -r p; do rm -f "$p"; done
  node_listing | grep -vxF -f "$work/node.before" | sort -r | while read -r p; do
    case $p in
      /run/containerd | /run/containerd/s | /var/lib/cni | /var/lib/cni/results | /var/lib/cni/networks | /var/log/containers | /var/log/pods | /var/lib/kubelet | /var/lib/kubelet/device-plugins | /var/lib/kubelet/plugins | /var/lib/kubelet/plugins_registry | /var/lib/kubelet/pod-resources)
        [ ! -d "$p" ] || rmdir "$p" 2>/dev/null || true ;;
    esac
  done
}

# node_rm_proxy: kube-proxy's chains, the rules that jump to them and its
# nfacct counters (all of them this run's: it refuses to start beside
# another kube-proxy's), in one iptables-restore per table; then the nft
# tables iptables made for them when they were absent before and are empty
# now. (Not kube-proxy --cleanup: it also tidies IPVS and nftables state
# it might not have made.)
node_rm_proxy() {
  local f t c
  [ "${node_proxy_up:-0}" = 1 ] || return 0
  for f in iptables ip6tables; do
    for t in $("$f-save" 2>/dev/null | sed -n 's/^\*//p'); do
      "$f-save" -t "$t" | python3 -c '
import shlex, sys
t = sys.argv[1]
jumps, chains = [], []
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith(":KUBE-"):
        chains.append(line[1:].split()[0])
    elif line.startswith("-A ") and "KUBE-" in line and not line.split()[1].startswith("KUBE-"):
        jumps.append("-D" + line[2:])
if jumps or chains:
    print("*" + t)
    print("\n".join(jumps + ["-F " + c for c in chains] + ["-X " + c for c in chains]))
    print("COMMIT")
' "$t" >"$work/proxy-rm.rules"
      [ -s "$work/proxy-rm.rules" ] || continue
      "$f-restore" --noflush <"$work/proxy-rm.rules" || log "node: $f-restore of kube-proxy's removal in table $t failed: $(cat "$work/proxy-rm.rules")"
    done
  done
  for c in $(proxy_state | sed -n 's/^nfacct //p'); do nfacct delete "$c" || true; done
  node_new_nft_tables | while read -r fam t; do nft delete table "$fam" "$t" || true; done
}

# node_new_nft_tables: the nft tables (FAMILY NAME) that were not there
# before kube-proxy started and hold no rule now.
node_new_nft_tables() {
  [ -f "$work/nft.before" ] || return 0
  nft list tables 2>/dev/null | sort | grep -vxF -f "$work/nft.before" | while read -r _ fam t; do
    [ "$(nft -j list table "$fam" "$t" | python3 -c 'import json,sys; print(sum(1 for o in json.load(sys.stdin)["nftables"] if "rule" in o))')" = 0 ] && echo "$fam $t"
  done || true
}

# node_conntrack: the conntrack entries with an address of the run's pod
# network (the /24 is used by nothing else on the machine), as
# "PROTO SRC DST [SPORT DPORT]" of the original direction.
node_conntrack() {
  conntrack -L -f ipv4 -o extended 2>/dev/null | python3 -c '
import ipaddress, re, sys
sub = ipaddress.ip_network(sys.argv[1])
for line in sys.stdin:
    f = line.split()
    if len(f) < 3:
        continue
    addrs = re.findall(r"\b(?:src|dst)=(\S+)", line)
    if not any(ipaddress.ip_address(a) in sub for a in addrs):
        continue
    kv = {}
    for w in f:
        k, _, v = w.partition("=")
        kv.setdefault(k, v)
    out = [f[2], kv["src"], kv["dst"]]
    if "sport" in kv:
        out += [kv["sport"], kv["dport"]]
    print(" ".join(out))
' "$node_sub" || true
}

# node_rm_conntrack: node_conntrack's entries.
node_rm_conntrack() {
  local p src dst sport dport
  [ -n "${node_sub:-}" ] || return 0
  node_conntrack | while read -r p src dst sport dport; do
    if [ -n "$sport" ]; then
      conntrack -D -p "$p" -s "$src" -d "$dst" --sport "$sport" --dport "$dport" >/dev/null 2>&1 || true
    else
      conntrack -D -p "$p" -s "$src" -d "$dst" >/dev/null 2>&1 || true
    fi
  done
}

# node_rm_sysctls: the sysctls as they were.
node_rm_sysctls() {
  local key value
  while read -r key _ value; do
    [ "$(sysctl -n "$key")" = "$value" ] || sysctl -qw "$key=$value"
  done <"$work/node.sysctls"
}

# etcd, with an empty data directory.
start etcd "${dir[etcd]}/etcd" --name default --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "default=http://127.0.0.1:$etcd_peer" --log-level warn
until_ok etcd 60 python3 -c "import urllib.request,sys; sys.exit(0 if b'true' in urllib.request.urlopen('http://127.0.0.1:$etcd_client/health', timeout=2).read() else 1)"
log "etcd ${dir[etcd]##*/etcd-} on 127.0.0.1:$etcd_client"

# kube-apiserver: a generated service-account key, static tokens, RBAC.
# The admin token's user is in system:masters, which RBAC lets do anything
# (no binding needed): the tests, kubectl, kube-controller-manager,
# kube-scheduler, the kubelet and the KubeRay operator all use its
# kubeconfig. A second user, imagectl-test-limited, has a token and no
# group and no binding: only what RBAC's defaults give every authenticated
# user (discovery, SelfSubjectAccessReview), for tests of what a user
# without rights sees (they bind it a Role of their own).
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s,admin,admin,system:masters\n' "$token" >"$work/tokens.csv"
limited_user=imagectl-test-limited
limited_token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s,%s,%s\n' "$limited_token" "$limited_user" "$limited_user" >>"$work/tokens.csv"
# The node's kube-proxy and CoreDNS have tokens (and kubeconfigs) of their
# own: RBAC's defaults bind system:kube-proxy to the ClusterRole
# system:node-proxier; CoreDNS's user gets a role in node_dns.
proxy_token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
dns_token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s,system:kube-proxy,kube-proxy,system:node-proxier\n%s,system:coredns,coredns\n' "$proxy_token" "$dns_token" >>"$work/tokens.csv"
start kube-apiserver "${dir[kubernetes]}/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_client" --bind-address 127.0.0.1 --secure-port "$apiserver" \
  --cert-dir "$work/pki" --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$work/sa.pub" --service-account-signing-key-file "$work/sa.key" \
  --authorization-mode RBAC --token-auth-file "$work/tokens.csv" \
  --service-cluster-ip-range "$svc_cidr" --enable-priority-and-fairness=false \
  --kubelet-preferred-address-types Hostname
# kubeconfig FILE USER TOKEN: a kubeconfig for the API server on loopback.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$apiserver
    insecure-skip-tls-verify: true
users:
- name: $2
  user:
    token: $3
contexts:
- name: local
  context: {cluster: local, user: $2, namespace: default}
current-context: local
EOF
  chmod 600 "$1"
}
kubeconfig "$work/kubeconfig" admin "$token"
kubeconfig "$work/limited.kubeconfig" "$limited_user" "$limited_token"
export KUBECONFIG=$work/kubeconfig IMAGECTL_KUBE_KUBECONFIG=$work/kubeconfig
export IMAGECTL_KUBE_LIMITED_KUBECONFIG=$work/limited.kubeconfig IMAGECTL_KUBE_LIMITED_USER=$limited_user
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

[ $node = 0 ] || node_start

# The KubeRay operator and its release's CRDs.
k apply --server-side -f "$crds" >"$work/crds.log"
# kubectl wait fails at once on a CRD whose status has no conditions yet
# (".status.conditions accessor error"): asked again until all are
# Established.
until_ok kube-apiserver 60 k wait --for condition=Established crd --all --timeout=5s
log "KubeRay $kuberay CRDs: $(k get crd -o name | tr '\n' ' ')"
start ray-operator "${dir[kuberay-$kuberay]}/ray-operator" --kubeconfig "$work/kubeconfig" \
  --enable-leader-election=false --metrics-addr "127.0.0.1:$op_metrics" \
  --health-probe-bind-address "127.0.0.1:$op_health"
until_ok ray-operator 180 python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$op_health/readyz', timeout=2)"
log "KubeRay operator $kuberay ready (startup $((SECONDS - t0))s)"

export IMAGECTL_KUBE_KUBERAY=$kuberay IMAGECTL_KUBE_LOGS=$work IMAGECTL_KUBE_HELM=${dir[helm]}/helm
[ $node = 0 ] || export IMAGECTL_KUBE_NODE=localhost
rc=0
"$@" || rc=$?
for n in "${names[@]}"; do alive "$n"; done
exit $rc
