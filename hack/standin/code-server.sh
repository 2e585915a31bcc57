#!/usr/bin/env bash
# Lays out code-server in a root filesystem the way linuxserver/code-server
# ships it, for the amd64 stand-in base of the tests (hack/deps.d/35-base-images.sh)
# and the smoke image integration test:
#
#   /app/code-server/{bin/code-server,lib/node,lib/vscode,out,node_modules,package.json}
#       the release layout: bin/code-server runs lib/node on the package. Here
#       the package is the npm build hack/deps.d/20-node.sh made, and lib/node
#       is this machine's node (Node 20: code-server 4.100.x needs it; Debian
#       bookworm's nodejs is 18, too old). Release tarballs bundle their node the
#       same way, so the layout is the real one.
#   /init and /etc/s6-overlay/s6-rc.d/{init-code-server,svc-code-server}/run
#       stand-ins for s6-overlay and linuxserver's services, written here from
#       what the real image is known to do (../shared/notes/real-world-facts.md,
#       docs/faithful-base.md), not copied from it: /init runs the init step,
#       then execs the service, which runs code-server as user abc (as the
#       container's user in linuxserver's non-root mode, LSIO_NON_ROOT_USER)
#       with --bind-addr [::]:8443 --user-data-dir /config/data
#       --extensions-dir /config/extensions, and --auth password when PASSWORD
#       or HASHED_PASSWORD is set, else none.
#   /usr/bin/{with-contenv,s6-setuidgid}
#       minimal shims with the same calling convention as s6's.
#
# usage: code-server.sh ROOT     (ROOT is the root filesystem, e.g. mmdebstrap's "$1")
set -euo pipefail
root=${1:?usage: code-server.sh ROOT}
cache=${IMAGECTL_TEST_CACHE:-$HOME/.cache/imagectl-test}
version=${CODE_SERVER_VERSION:-4.100.3}
cs=$cache/node/code-server-$version
[ -f "$cs/.done" ] || { echo "code-server.sh: no code-server build at $cs (run hack/deps.d/20-node.sh)" >&2; exit 1; }
node=$(readlink -f "$(command -v node)")
major=$("$node" -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "code-server.sh: $node is Node $major, code-server $version needs 20" >&2; exit 1; }

app=$root/app/code-server
rm -rf "$app"
mkdir -p "$app/bin" "$app/lib" "$app/node_modules"
cp -a "$cs/node_modules/code-server/." "$app/"
# npm hoisted code-server's dependencies next to it; the release has them inside.
for d in "$cs/node_modules"/* "$cs/node_modules"/.[!.]*; do
  [ -e "$d" ] || continue
  case $(basename "$d") in code-server|.bin|.package-lock.json) continue ;; esac
  cp -a "$d" "$app/node_modules/"
done
install -m 0755 "$node" "$app/lib/node"
cat >"$app/bin/code-server" <<'SH'
#!/bin/sh
# Runs code-server with the bundled node, as the release tarball's script does.
set -eu
ROOT=$(dirname "$(dirname "$(readlink -f "$0")")")
exec "$ROOT/lib/node" "$ROOT" "$@"
SH
chmod 0755 "$app/bin/code-server"
chown -R 0:0 "$root/app"

s6=$root/etc/s6-overlay/s6-rc.d
mkdir -p "$s6/init-code-server" "$s6/svc-code-server"
cat >"$root/init" <<'SH'
#!/bin/sh
# Stand-in for s6-overlay's /init (imagectl tests): run the init step, then
# the code-server service in the foreground.
set -e
/etc/s6-overlay/s6-rc.d/init-code-server/run
exec /etc/s6-overlay/s6-rc.d/svc-code-server/run
SH
cat >"$s6/init-code-server/run" <<'SH'
#!/usr/bin/with-contenv bash
# Stand-in: the directories linuxserver's init-code-server makes, and the
# ownership it sets unless it runs in linuxserver's non-root mode
# (LSIO_NON_ROOT_USER set: the container's user owns what it writes).
mkdir -p /config/extensions /config/data /config/workspace
[ -n "${LSIO_NON_ROOT_USER:-}" ] || chown abc:abc /config /config/workspace
SH
cat >"$s6/svc-code-server/run" <<'SH'
#!/usr/bin/with-contenv bash
# Stand-in service: code-server in the foreground, plain HTTP on port 8443
# of every address, its data and extensions under /config; a password
# login when PASSWORD or HASHED_PASSWORD is set (code-server reads them
# from the environment), no login otherwise; as abc, or as the container's
# own user in non-root mode.
set -u
opts=(--bind-addr "[::]:8443" --user-data-dir /config/data --extensions-dir /config/extensions)
if [ -n "${PASSWORD:-}${HASHED_PASSWORD:-}" ]; then
  opts+=(--auth password)
else
  opts+=(--auth none)
fi
opts+=("${DEFAULT_WORKSPACE:-/config/workspace}")
if [ -n "${LSIO_NON_ROOT_USER:-}" ]; then
  exec /app/code-server/bin/code-server "${opts[@]}"
fi
exec s6-setuidgid abc /app/code-server/bin/code-server "${opts[@]}"
SH
cat >"$root/usr/bin/with-contenv" <<'SH'
#!/bin/sh
# Shim: the process environment already is the container's.
exec "$@"
SH
cat >"$root/usr/bin/s6-setuidgid" <<'SH'
#!/bin/sh
# Shim: run as the user (and its groups).
u=$1; shift
exec setpriv --reuid="$u" --regid="$u" --init-groups "$@"
SH
chmod 0755 "$root/init" "$s6/init-code-server/run" "$s6/svc-code-server/run" \
  "$root/usr/bin/with-contenv" "$root/usr/bin/s6-setuidgid"
