#!/usr/bin/env bash
# The README's test command: bootstrap, build, then every Catch2 suite under ctest on the default device
# (lavapipe on a machine without a GPU), and the compile-only sweeps on emulated Intel and AMD devices
# (tests/vendor), whose register and spill tables are printed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/tools/build.sh"
cd "$BUILD"
status=0
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@" || status=$?
for t in "$BUILD"/vendor-compile/*.txt; do
  [ -f "$t" ] || continue
  echo "== compile-only sweep: $(basename "$t" .txt)"
  cat "$t"
done
exit $status
