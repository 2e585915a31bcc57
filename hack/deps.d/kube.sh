#!/usr/bin/env bash
# A real Kubernetes control plane for tests/e2e/with-kube.sh, built from the Go
# module proxy at the versions pinned by the build modules in tests/kube/build/:
# etcd (etcd/), kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet and kube-proxy (kubernetes/), kubectl
# (kubernetes/ too; with-kube.sh builds it only on a machine without one), helm
# (helm/: renders KubeRay's ray-cluster chart in tests/kube), CoreDNS
# (coredns/: the node's cluster DNS, with only the plugins its Corefile uses)
# and the KubeRay operator of each pinned release (kuberay-vX.Y.Z/). Each lands in
#   $IMAGECTL_TEST_CACHE/bin/kube/<component>-<version>-<go.sum hash>/
# so a pin or dependency change rebuilds it and an unchanged one is reused.
#
# bash hack/deps.d/kube.sh [COMPONENT...]   (default: all of them)
# COMPONENT is etcd, kubernetes, kubectl, helm, coredns or kuberay-vX.Y.Z. Printed on stdout, one per
# line: COMPONENT DIR (the directory holding its binaries); progress on stderr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apt_install openssl python3 >&2
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/tests/kube/build
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}

# kube_dir COMPONENT: where its binaries are cached.
kube_dir() {
  local c=$1 mod ver sum
  case $c in
    etcd) mod=go.etcd.io/etcd/server/v3 ;;
    kubernetes | kubectl) mod=k8s.io/kubernetes ;;
    helm) mod=helm.sh/helm/v3 ;;
    coredns) mod=github.com/coredns/coredns ;;
    kuberay-v*) mod=github.com/ray-project/kuberay/ray-operator ;;
    *) echo "kube.sh: unknown component $c (want etcd, kubernetes, kubectl, helm, coredns or kuberay-vX.Y.Z)" >&2; return 2 ;;
  esac
  local m=$c
  [ "$c" = kubectl ] && m=kubernetes
  [ -f "$build/$m/go.mod" ] || { echo "kube.sh: $build/$m/go.mod is missing" >&2; return 2; }
  ver=$(cd "$build/$m" && go list -m -f '{{.Version}}' "$mod")
  sum=$(sha256sum "$build/$m/go.sum" | cut -c1-12)
  echo "$cache/bin/kube/$c-$ver-$sum"
}

# kube_build COMPONENT: build it unless cached.
kube_build() {
  local c=$1 dir tmp ver t0=$SECONDS
  dir=$(kube_dir "$c")
  ver=${dir##*/}
  case $c in
    etcd) bins=(etcd) ;;
    kubernetes) bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy) ;;
    kubectl) bins=(kubectl) ;;
    helm) bins=(helm) ;;
    coredns) bins=(coredns) ;;
    kuberay-v*) bins=(ray-operator) ;;
  esac
  # One build of a version at a time: a second kube.sh (make test starts one
  # in the background early, with-kube.sh runs one later) waits for the
  # first, then finds its result.
  mkdir -p "$cache/bin/kube"
  local lock
  exec {lock}>"$cache/bin/kube/.$ver.lock"
  if ! flock -n "$lock"; then
    echo "kube: $ver is being built by another kube.sh; waiting for it" >&2
    flock "$lock"
  fi
  local have=1 b
  for b in "${bins[@]}"; do [ -x "$dir/$b" ] || have=0; done
  if [ $have = 1 ]; then
    exec {lock}>&-
    echo "kube: $ver cached in $dir" >&2
    echo "$c $dir"
    return
  fi
  # What a killed build of this version left (under the lock, nobody's).
  rm -rf "$cache/bin/kube/.$ver".??????
  tmp=$(mktemp -d "$cache/bin/kube/.$ver.XXXXXX")
  kube_tmp=$tmp
  echo "kube: building $ver (${bins[*]})" >&2
  if ! (
    exec {lock}>&- # only kube.sh holds the lock, not what go starts
    cd "$build/${c/#kubectl/kubernetes}"
    case $c in
      etcd) go build -trimpath -o "$tmp/etcd" . ;;
      coredns)
        # CoreDNS prints its version from coremain's CoreVersion, a
        # constant of the module: nothing to set.
        go build -trimpath -o "$tmp/coredns" .
        ;;
      kubernetes | kubectl)
        v=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
        mm=${v#v}; major=${mm%%.*}; minor=${mm#*.}; minor=${minor%%.*}
        # Clients parse the server's version: without these it is v0.0.0-master.
        ld="-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
        pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
        [ "$c" = kubectl ] && pkgs=(k8s.io/kubernetes/cmd/kubectl)
        go build -trimpath -ldflags "$ld" -o "$tmp/" "${pkgs[@]}"
        ;;
      helm)
        # As helm's Makefile does: its version, and the Kubernetes version
        # .Capabilities reports in `helm template` (that of its client-go).
        v=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
        kv=$(go list -m -f '{{.Version}}' k8s.io/client-go)
        kminor=${kv#v0.}; kminor=${kminor%%.*}
        go build -trimpath -ldflags "-X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
        ;;
      kuberay-v*) go build -trimpath -o "$tmp/ray-operator" github.com/ray-project/kuberay/ray-operator ;;
    esac
  ) >&2; then
    rm -rf "$tmp"
    echo "kube.sh: building $c failed" >&2
    return 1
  fi
  rm -rf "$dir"
  mv "$tmp" "$dir"
  kube_tmp=
  exec {lock}>&-
  echo "kube: built $ver in $((SECONDS - t0))s" >&2
  echo "$c $dir"
}

# A build interrupted (make test kills this script when a test fails) leaves
# no partial binaries in the cache.
kube_tmp=
trap '[ -z "$kube_tmp" ] || rm -rf "$kube_tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

if [ $# -eq 0 ]; then
  set -- etcd kubernetes helm coredns
  for d in "$build"/kuberay-v*/; do set -- "$@" "$(basename "$d")"; done
fi
for c in "$@"; do kube_build "$c"; done
