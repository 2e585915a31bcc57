#!/usr/bin/env bash
# kube-teardown.sh: tests the node teardown's check of tests/e2e/with-kube.sh
# both ways (issue 35):
#  1. A node run that starts a Pod passes while a neighbour (another program
#     on the machine) creates and deletes, in a loop, its own network
#     namespaces (ip netns add/del), runc containers (runc with a --root of
#     its own) and files under /tmp and the node's fixed paths
#     (/var/lib/cni/results, /run/containerd/s): none of that is the run's.
#     The run's log must show the neighbour's changes as not the run's.
#  2. A node run with IMAGECTL_KUBE_TEST_LEAK (teardown steps skipped before
#     the check) fails, and its log names what each skipped step left: the
#     run's cgroup, bridge, policy-routing rule, the kubelet's device-plugin
#     socket, kube-proxy's iptables chains, jumps and nfacct counters and the Pods'
#     conntrack entries (and the sysctls the kubelet set, where they differ on
#     this machine); the steps then run, and the machine is left as before.
# Then the neighbour's own leftovers are checked (none) and the machine is
# checked for the runs' bridges and cgroups (none).
#
# Needs what IMAGECTL_KUBE_NODE=1 needs: root, and IMAGECTL_KUBE_SIDECAR (the
# OCI archive of the image the e2e built). kube-teardown.sh CMD [ARG...] runs
# CMD on the node in run 1 instead of the Pod (e.g. the node's tests), so
# that one node run serves both.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "kube-teardown.sh: runs a node (with-kube.sh IMAGECTL_KUBE_NODE=1): run as root" >&2; exit 2; }
[ -f "${IMAGECTL_KUBE_SIDECAR:-}" ] || { echo "kube-teardown.sh: IMAGECTL_KUBE_SIDECAR must be the OCI archive of the e2e's image, got '${IMAGECTL_KUBE_SIDECAR:-}'" >&2; exit 2; }
command -v runc >/dev/null && command -v ip >/dev/null || { echo "kube-teardown.sh: needs runc and ip (with-kube.sh IMAGECTL_KUBE_NODE=1 installs both)" >&2; exit 2; }

nb=$(mktemp -d /tmp/imagectl-neighbour.XXXXXX)
tag=imagectl-neighbour-$$
nbpid=
fin() {
  local rc=$?
  touch "$nb/stop"
  [ -z "$nbpid" ] || wait "$nbpid" 2>/dev/null || true
  rm -rf "$nb"
  exit $rc
}
trap fin EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The neighbour's container: a bundle whose rootfs holds only the static
# stand-in, run as pause (it exits on SIGTERM).
mkdir -p "$nb/bundle/rootfs" "$nb/runc"
CGO_ENABLED=0 go build -trimpath -o "$nb/bundle/rootfs/pause" "$repo/tests/kube/standin"
(cd "$nb/bundle" && runc spec)
python3 - "$nb/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["/pause"]
c["root"]["readonly"] = True
json.dump(c, open(p, "w"))
PY

# neighbour: until $nb/stop exists, make object i, then remove object i-1
# (so that the node run sees some made before and removed after its start,
# and some the other way round); at the end remove the last one, and the
# directories it made.
neighbour() {
  local i=0 made=() d netns_made=0
  # ip netns add makes /run/netns (a shared bind mount of itself) when it
  # is missing: the neighbour removes it again at the end.
  [ -d /run/netns ] || netns_made=1
  for d in /var/lib/cni/results /run/containerd/s; do
    [ -d "$d" ] || { mkdir -p "$d"; made+=("$d"); }
  done
  undo() {
    ip netns del "$tag-$1" 2>/dev/null || true
    runc --root "$nb/runc" kill "$tag-$1" KILL 2>/dev/null || true
    runc --root "$nb/runc" delete -f "$tag-$1" 2>/dev/null || true
    rm -f "/tmp/$tag-$1" "/var/lib/cni/results/$tag-net-$1-eth0" "/run/containerd/s/$tag-$1"
  }
  while [ ! -e "$nb/stop" ]; do
    i=$((i + 1))
    ip netns add "$tag-$i"
    runc --root "$nb/runc" run -d --bundle "$nb/bundle" "$tag-$i" </dev/null >/dev/null 2>"$nb/runc.err" || { cat "$nb/runc.err" >&2; echo "neighbour: runc run failed" >&2; }
    echo "$i" >"/tmp/$tag-$i"
    echo '{"kind":"cniCacheV1"}' >"/var/lib/cni/results/$tag-net-$i-eth0"
    : >"/run/containerd/s/$tag-$i"
    [ $i = 1 ] || undo $((i - 1))
    echo "$i" >"$nb/count"
    sleep 2
  done
  undo "$i"
  if [ $netns_made = 1 ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    while mountpoint -q /run/netns; do umount /run/netns || break; done
    rmdir /run/netns 2>/dev/null || true
  fi
  for d in "${made[@]}"; do rmdir "$d" 2>/dev/null || true; done
  [ -d /run/containerd ] && [ -z "$(ls -A /run/containerd)" ] && [[ " ${made[*]} " == *" /run/containerd/s "* ]] && rmdir /run/containerd || true
  [ -d /var/lib/cni ] && [ -z "$(ls -A /var/lib/cni)" ] && [[ " ${made[*]} " == *" /var/lib/cni/results "* ]] && rmdir /var/lib/cni || true
}

# The node run's command: a Pod of the Ray stand-in's image, Ready, exec'd
# into; the teardown deletes it.
cat >"$nb/pod.sh" <<'SH'
set -euo pipefail
kubectl --kubeconfig "$IMAGECTL_KUBE_KUBECONFIG" create namespace teardown
kubectl --kubeconfig "$IMAGECTL_KUBE_KUBECONFIG" -n teardown run sleeper --image "$IMAGECTL_KUBE_RAY_IMAGE" --image-pull-policy Never \
  --overrides '{"spec":{"terminationGracePeriodSeconds":1}}' --command -- sleep 3600
kubectl --kubeconfig "$IMAGECTL_KUBE_KUBECONFIG" -n teardown wait --for condition=Ready pod/sleeper --timeout 120s
# A name through the cluster DNS, then a TCP connection to it (its
# conntrack entry, in TIME_WAIT for 2 minutes, is the run's).
kubectl --kubeconfig "$IMAGECTL_KUBE_KUBECONFIG" -n teardown exec sleeper -- getent hosts kubernetes.default.svc.cluster.local
kubectl --kubeconfig "$IMAGECTL_KUBE_KUBECONFIG" -n teardown exec sleeper -- python3 -c '
import socket
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
socket.create_connection((ns, 53), timeout=5).close()
print("tcp to the cluster DNS", ns, "ok")'
SH

t0=$SECONDS
log() { printf '[teardown %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

# 1. With the neighbour running.
neighbour &
nbpid=$!
log "neighbour (pid $nbpid): netns, runc containers (--root $nb/runc) and files named $tag-N, in a loop"
run1=(bash "$nb/pod.sh")
[ $# = 0 ] || run1=("$@")
if ! IMAGECTL_KUBE_NODE=1 bash "$repo/tests/e2e/with-kube.sh" "${run1[@]}" 2>&1 | tee "$nb/run1.log" >&2; then
  fail "the node run failed while the neighbour ran (see above)"
fi
grep -q "changed during the run by other programs.*$tag" "$nb/run1.log" ||
  fail "the node run's log does not show the neighbour's changes ($tag-*) as not the run's: was the neighbour seen at all?"
touch "$nb/stop"
wait "$nbpid"
nbpid=
log "run 1 passed while the neighbour made and removed $(cat "$nb/count") netns, runc containers and file sets"
[ -z "$(ip netns list | grep "$tag" || true)" ] || fail "the neighbour's network namespaces are left: $(ip netns list | grep "$tag")"
[ -z "$(runc --root "$nb/runc" list -q)" ] || fail "the neighbour's runc containers are left: $(runc --root "$nb/runc" list -q)"

# 2. A leak of the run's own.
steps=cgroups,bridge,route,files,proxy,conntrack
[ "$(sysctl -n vm.overcommit_memory)" = 1 ] || steps+=,sysctls # the kubelet sets 1
rc=0
IMAGECTL_KUBE_NODE=1 IMAGECTL_KUBE_TEST_LEAK=$steps bash "$repo/tests/e2e/with-kube.sh" bash "$nb/pod.sh" >"$nb/run2.log" 2>&1 || rc=$?
cat "$nb/run2.log" >&2
# The failed run keeps its work directory (logs); nothing in it is mounted.
kept=$(sed -n 's/.*logs and state kept in \(\/.*\)$/\1/p' "$nb/run2.log" | tail -n 1)
[ -z "$kept" ] || { ! grep -qF " $kept/" /proc/self/mountinfo && rm -rf "$kept"; }
[ $rc != 0 ] || fail "with IMAGECTL_KUBE_TEST_LEAK=$steps the node run passed: the teardown's check missed the leak"
grep -q "FAIL: the node's teardown left on the machine what this run made:" "$nb/run2.log" || fail "with IMAGECTL_KUBE_TEST_LEAK=$steps the run failed (exit $rc) but not at the teardown's check"
for want in '^cgroup /sys/fs/cgroup/.*/imagectl-kube-[0-9a-f]*$' '^bridge ikb[0-9a-f]*$' '^ip rule .*iif ikb[0-9a-f]* lookup [0-9]*' '^iptables -t nat :KUBE-SERVICES ' '^iptables -t nat -A PREROUTING .*-j KUBE-SERVICES$' '^nfacct ct_state_invalid_dropped_pkts$' '^conntrack tcp 10\.2[0-9.]* 10\.2[0-9.]* [0-9]* 53$' '^file /var/lib/kubelet/device-plugins/kubelet.sock$'; do
  grep -q "$want" "$nb/run2.log" || fail "with IMAGECTL_KUBE_TEST_LEAK=$steps the check did not name a leftover matching $want"
done
if [[ $steps == *sysctls* ]]; then grep -q '^sysctl vm.overcommit_memory = 1 (was ' "$nb/run2.log" || fail "the check did not name vm.overcommit_memory"; fi
grep -q "the check caught it; the skipped steps .* ran afterwards, nothing of the run's is left now" "$nb/run2.log" ||
  fail "after the check, the skipped steps did not leave the machine clean"
log "run 2 (IMAGECTL_KUBE_TEST_LEAK=$steps) failed as it must, naming $(grep -cE '^(cgroup|bridge|file|sysctl) ' "$nb/run2.log") leftovers, and removed them after"

# The machine: neither run's bridge, cgroup root or CNI results (each named
# in its log).
for l in "$nb/run1.log" "$nb/run2.log"; do
  br=$(grep -o 'on bridge ikb[0-9a-f]*' "$l" | cut -d' ' -f3)
  cg=$(grep -o 'cgroup root /imagectl-kube-[0-9a-f]*' "$l" | cut -d/ -f2)
  [ -n "$br" ] && [ -n "$cg" ] || fail "$l names no bridge or cgroup root"
  ! ip link show "$br" >/dev/null 2>&1 || fail "bridge $br left"
  [ -z "$(find /sys/fs/cgroup -maxdepth 2 -name "$cg" 2>/dev/null)" ] || fail "cgroup $cg left: $(find /sys/fs/cgroup -maxdepth 2 -name "$cg")"
  [ -z "$(find /var/lib/cni -name "imagectl-${br#ikb}*" 2>/dev/null)" ] || fail "CNI results left: $(find /var/lib/cni -name "imagectl-${br#ikb}*")"
done
log "passed: a neighbour's changes are not counted, a leak of the run's own is"
