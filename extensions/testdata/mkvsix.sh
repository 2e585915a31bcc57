#!/usr/bin/env bash
# Builds the VSIX fixtures in extensions/testdata/vsix/ with the real
# @vscode/vsce from npm. The built files are committed, so unit tests do not
# need npm; rerun this only to change the fixtures:
#
#   bash hack/deps.d/20-node.sh          # installs vsce under $IMAGECTL_TEST_CACHE
#   bash extensions/testdata/mkvsix.sh
#
# Three small extensions mirror the real ones (same ids, dependency shape and
# target platforms): ms-python.python (platform builds only, extensionPack
# debugpy), ms-python.debugpy (universal + linux-x64 + linux-arm64, depends on
# ms-python.python), anyscalecompute.ray-distributed-debugger (universal).
# Every build carries extension/platform.txt naming its target, so a test can
# tell which build landed where. File times are fixed for reproducibility.
# Licences as the real ones declare them: the ms-python stand-ins say MIT in
# package.json and LICENSE; the ray-distributed-debugger stand-in, like the
# real 0.1.6, has no license in package.json and a LICENSE.txt titled "AS
# License" (a stand-in text, not Anyscale's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
vsce=${IMAGECTL_VSCE:-$cache/node/vsce/node_modules/.bin/vsce}
[ -x "$vsce" ] || { echo "mkvsix.sh: vsce not found at $vsce (run hack/deps.d/20-node.sh)" >&2; exit 1; }
out=$here/vsix
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build PUBLISHER NAME VERSION ENGINE DEPS_JSON PACK_JSON TARGET...
build() {
  local pub=$1 name=$2 ver=$3 engine=$4 deps=$5 pack=$6; shift 6
  local tgt
  for tgt in "$@"; do
    local d=$work/$pub.$name-$ver-$tgt
    mkdir -p "$d/out"
    cat >"$d/package.json" <<JSON
{
  "name": "$name",
  "displayName": "$name (imagectl test fixture)",
  "description": "A small stand-in for $pub.$name used by imagectl's tests.",
  "publisher": "$pub",
  "version": "$ver",$license_field
  "repository": {"type": "git", "url": "https://example.invalid/imagectl-fixtures/$name.git"},
  "engines": {"vscode": "$engine"},
  "categories": ["Debuggers"],
  "activationEvents": ["onStartupFinished"],
  "main": "./out/extension.js",
  "extensionDependencies": $deps,
  "extensionPack": $pack$contributes_field
}
JSON
    cat >"$d/out/extension.js" <<'JS'
"use strict";
exports.activate = function activate() {};
exports.deactivate = function deactivate() {};
JS
    if [ -n "$main_js" ]; then cp "$main_js" "$d/out/extension.js"; fi
    printf '%s\n' "$tgt" >"$d/platform.txt"
    printf '# %s.%s\n\nTest fixture for imagectl; not the real extension.\n' "$pub" "$name" >"$d/README.md"
    printf '%s' "$license_text" >"$d/LICENSE.txt"
    find "$d" -exec touch -h -d @1700000000 {} +
    local file args=(package --no-dependencies --no-update-package-json --allow-star-activation)
    if [ "$tgt" = universal ]; then
      file=$out/$pub.$name-$ver.vsix
    else
      file=$out/$pub.$name-$ver@$tgt.vsix
      args+=(--target "$tgt")
    fi
    (cd "$d" && printf "**/*.vsix\n" >.vscodeignore && "$vsce" "${args[@]}" --out "$file" >/dev/null)
    echo "built $(basename "$file")"
  done
}

contributes_field=''
main_js=''
license_field='
  "license": "MIT",'
license_text=$'MIT License\n\nCopyright (c) imagectl authors\n'
build ms-python python 2025.6.1 '^1.95.0' '[]' '["ms-python.debugpy"]' linux-x64 linux-arm64
build ms-python python 2025.8.0 '^1.95.0' '[]' '["ms-python.debugpy"]' linux-x64 linux-arm64
build ms-python debugpy 2025.10.0 '^1.92.0' '["ms-python.python"]' '[]' universal linux-x64 linux-arm64
# The debugger stand-in's code is extensions/contract's stand-in in the
# minified shapes of 0.1.6 (not the extension's code), and it declares the
# settings 0.1.6 declares, so that extensions.CheckContracts passes it.
main_js=$here/../contract/testdata/shape-0.1.6/extension/dist/extension.js
contributes_field=',
  "contributes": {"configuration": [{"title": "Ray Distributed Debugger", "properties": {
    "anyscalecompute.ray-distributed-debugger.activationToken": {"type": "string", "scope": "machine"},
    "anyscalecompute.ray-distributed-debugger.initialized": {"type": "boolean", "scope": "machine"},
    "anyscalecompute.ray-distributed-debugger.clusterDashboards": {"type": "list", "scope": "window"},
    "anyscalecompute.ray-distributed-debugger.showReadmeOnFirstActivation": {"type": "boolean", "default": true}
  }}]}'
license_field=''
license_text=$'AS License\n\nStand-in for the licence of anyscalecompute.ray-distributed-debugger in imagectl\'s test fixtures: the real extension\'s LICENSE.txt is Anyscale\'s proprietary "AS License".\n'
build anyscalecompute ray-distributed-debugger 0.1.4 '^1.66.0' '[]' '[]' universal
build anyscalecompute ray-distributed-debugger 0.1.6 '^1.66.0' '[]' '[]' universal
# A build whose engine no shipped VS Code accepts (for the engine check).
build anyscalecompute ray-distributed-debugger 0.2.0 '^1.999.0' '[]' '[]' universal
