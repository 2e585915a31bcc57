#!/usr/bin/env bash
# Regenerates golden/ from Ray's own packaging code (see gen_golden.py).
# RAY_SRC must name an extracted Ray source tree (at least its python/ray
# directory); SOURCE.md says which commit the committed goldens come from.
# OUT (default: golden/ beside this script) is where the JSON goes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${RAY_SRC:?set RAY_SRC to an extracted Ray source tree (python/ray/_private/runtime_env/packaging.py inside)}"
out=${OUT:-$here/golden}
py=/usr/bin/python3
if [ ! -f "$RAY_SRC/python/ray/_private/runtime_env/packaging.py" ]; then
  echo "gen-golden.sh: $RAY_SRC/python/ray/_private/runtime_env/packaging.py does not exist" >&2
  exit 1
fi
if ! "$py" -c 'import filelock' 2>/dev/null; then
  echo "gen-golden.sh: $py cannot import filelock, which packaging.py imports: apt-get install python3-filelock" >&2
  exit 1
fi
exec env -u PYTHONPATH TZ=UTC "$py" "$here/gen_golden.py" "$here" "$out"
