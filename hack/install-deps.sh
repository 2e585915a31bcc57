#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine, idempotently. Each area
# of the project owns one script in hack/deps.d/, run here in name order. Slow
# artefacts are kept under $IMAGECTL_TEST_CACHE so reruns are quick.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export IMAGECTL_TEST_CACHE=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
mkdir -p "$IMAGECTL_TEST_CACHE"
for s in "$here"/deps.d/[0-9]*.sh; do
  [ -e "$s" ] || continue
  echo "== install-deps: $(basename "$s")"
  bash "$here/timed.sh" "install-deps: $(basename "$s")" bash "$s"
done
