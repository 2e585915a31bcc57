#!/usr/bin/env bash
# Node tools for the extensions tests, installed from the npm registry and kept
# under $IMAGECTL_TEST_CACHE/node (idempotent; a second run is instant):
#
#   code-server  $IMAGECTL_TEST_CACHE/node/code-server-$CODE_SERVER_VERSION/node_modules/code-server/out/node/entry.js
#                (run with `node entry.js ...`; extensions tests find it there or via
#                env IMAGECTL_CODE_SERVER_ENTRY)
#   vsce         $IMAGECTL_TEST_CACHE/node/vsce/node_modules/.bin/vsce
#                (used by extensions/testdata/mkvsix.sh to rebuild the VSIX fixtures;
#                env IMAGECTL_VSCE overrides)
#
# code-server's plain postinstall needs the internet (ripgrep from GitHub) and
# libkrb5-dev, so it is installed with --ignore-scripts and finished by hand:
# VS Code's own production dependencies, the node_modules.asar link, and argon2
# built from source (see docs/extensions.md and shared offline-toolbox notes).
# Exports nothing.
set -euo pipefail

CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.100.3}
VSCE_VERSION=${VSCE_VERSION:-3.6.0}
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}/node
mkdir -p "$cache"

. "$(dirname "$0")/lib.sh"
need_node_major=20
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt "$need_node_major" ]; then
  echo "20-node.sh: code-server $CODE_SERVER_VERSION needs Node >= $need_node_major, found $(node --version)" >&2
  exit 1
fi
# argon2 is compiled from source: it needs a C++ toolchain and python3.
if ! command -v g++ >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  apt_install g++ make python3
fi
# ... and Node's headers: node-gyp downloads them from nodejs.org unless npm's
# nodedir names a directory that has them. Debian's nodejs ships them under
# /usr/include/node; say so here rather than rely on a user's ~/.npmrc (a
# run with an empty HOME failed at argon2 without it).
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/common.gypi ] && [ "$(npm config get nodedir 2>/dev/null)" != /usr ]; then
  export npm_config_nodedir=/usr
fi

# --- @vscode/vsce -------------------------------------------------------------
vsce_dir=$cache/vsce
if [ ! -f "$vsce_dir/.done-$VSCE_VERSION" ]; then
  echo "20-node.sh: installing @vscode/vsce@$VSCE_VERSION into $vsce_dir"
  rm -rf "$vsce_dir.tmp" && mkdir -p "$vsce_dir.tmp"
  npm install --no-audit --no-fund --loglevel=error --prefix "$vsce_dir.tmp" "@vscode/vsce@$VSCE_VERSION"
  rm -rf "$vsce_dir" && mv "$vsce_dir.tmp" "$vsce_dir"
  touch "$vsce_dir/.done-$VSCE_VERSION"
fi
"$vsce_dir/node_modules/.bin/vsce" --version >/dev/null

# --- code-server --------------------------------------------------------------
cs_dir=$cache/code-server-$CODE_SERVER_VERSION
entry=$cs_dir/node_modules/code-server/out/node/entry.js
if [ ! -f "$cs_dir/.done" ]; then
  echo "20-node.sh: installing code-server@$CODE_SERVER_VERSION into $cs_dir (takes minutes)"
  tmp=$cs_dir.tmp
  rm -rf "$tmp" && mkdir -p "$tmp"
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts --prefix "$tmp" "code-server@$CODE_SERVER_VERSION"
  (cd "$tmp/node_modules/code-server/lib/vscode" &&
    npm install --no-audit --no-fund --loglevel=error --omit=dev --ignore-scripts &&
    ln -sfn node_modules node_modules.asar)
  (cd "$tmp/node_modules/argon2" && npx --yes @mapbox/node-pre-gyp rebuild --build-from-source)
  # npm records absolute paths nowhere that matters here; move into place.
  rm -rf "$cs_dir" && mv "$tmp" "$cs_dir"
  touch "$cs_dir/.done"
fi
node "$entry" --version | head -1
