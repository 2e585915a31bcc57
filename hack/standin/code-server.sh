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
#       stand-ins for s6-overlay: /init runs the init step, then execs the
#       service, which is linuxserver's svc-code-server/run as upstream has it
#       (code-server as user abc, --bind-addr [::]:8443 --user-data-dir
#       /config/data --extensions-dir /config/extensions, --auth password when
#       PASSWORD or HASHED_PASSWORD is set, else none).
#   /usr/bin/{with-contenv,s6-notifyoncheck,s6-setuidgid}
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
mkdir -p /config/{extensions,data,workspace}
if [[ -z ${LSIO_NON_ROOT_USER} ]]; then
    chown abc:abc /config /config/workspace
fi
SH
cat >"$s6/svc-code-server/run" <<'SH'
#!/usr/bin/with-contenv bash
# linuxserver's svc-code-server/run as it is upstream (docker-code-server
# master, read November 2026): password auth when PASSWORD or
# HASHED_PASSWORD is set, none otherwise.
if [[ -n "${PASSWORD}" ]] || [[ -n "${HASHED_PASSWORD}" ]]; then
    AUTH="password"
else
    AUTH="none"
    echo "starting with no password"
fi

if [[ -z ${PROXY_DOMAIN+x} ]]; then
    PROXY_DOMAIN_ARG=""
else
    PROXY_DOMAIN_ARG="--proxy-domain=${PROXY_DOMAIN}"
fi

if [[ -z ${PWA_APPNAME} ]]; then
    PWA_APPNAME="code-server"
fi

if [[ -z ${LSIO_NON_ROOT_USER} ]]; then
    exec \
        s6-notifyoncheck -d -n 300 -w 1000 -c "nc -z 127.0.0.1 8443" \
            s6-setuidgid abc \
                /app/code-server/bin/code-server \
                    --bind-addr "[::]:8443" \
                    --user-data-dir /config/data \
                    --extensions-dir /config/extensions \
                    --disable-telemetry \
                    --auth "${AUTH}" \
                    --app-name "${PWA_APPNAME}" \
                    "${PROXY_DOMAIN_ARG}" \
                    "${DEFAULT_WORKSPACE:-/config/workspace}"
else
    exec \
        s6-notifyoncheck -d -n 300 -w 1000 -c "nc -z 127.0.0.1 8443" \
            /app/code-server/bin/code-server \
                --bind-addr "[::]:8443" \
                --user-data-dir /config/data \
                --extensions-dir /config/extensions \
                --disable-telemetry \
                --auth "${AUTH}" \
                --app-name "${PWA_APPNAME}" \
                "${PROXY_DOMAIN_ARG}" \
                "${DEFAULT_WORKSPACE:-/config/workspace}"
fi
SH
cat >"$root/usr/bin/with-contenv" <<'SH'
#!/bin/sh
# Shim: the process environment already is the container's.
exec "$@"
SH
cat >"$root/usr/bin/s6-notifyoncheck" <<'SH'
#!/bin/sh
# Shim: drop s6-notifyoncheck's options, run the program.
while [ $# -gt 0 ]; do
  case $1 in -d|-3) shift ;; -n|-w|-c|-s|-t) shift 2 ;; *) break ;; esac
done
exec "$@"
SH
cat >"$root/usr/bin/s6-setuidgid" <<'SH'
#!/bin/sh
# Shim: run as the user (and its groups).
u=$1; shift
exec setpriv --reuid="$u" --regid="$u" --init-groups "$@"
SH
chmod 0755 "$root/init" "$s6/init-code-server/run" "$s6/svc-code-server/run" \
  "$root/usr/bin/with-contenv" "$root/usr/bin/s6-notifyoncheck" "$root/usr/bin/s6-setuidgid"
