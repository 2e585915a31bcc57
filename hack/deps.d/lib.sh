# Sourced by the hack/deps.d scripts: shared helpers (not run on its own; the
# installer runs only *.sh files whose name starts with a digit).

# apt_install PKG...: installs the Debian packages that are not installed yet
# (apt-get update first, no recommends), then checks every one: a package that
# is still missing fails the script with one line naming it.
apt_install() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  echo "install-deps: apt-get install ${missing[*]}"
  $sudo_ apt-get update -qq || true
  # --no-remove: never take another package out to make room (Docker's
  # containerd.io conflicts with Debian's containerd and runc).
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends --no-remove "${missing[@]}" || true
  local failed=()
  for p in "${missing[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || failed+=("$p"); done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "install-deps: cannot install Debian package(s): ${failed[*]} (apt-get install failed; see its output above)" >&2
    return 1
  fi
}
