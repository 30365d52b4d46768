#!/usr/bin/env bash
# The README's test command: bootstrap, build, then every Catch2 suite under ctest on the default device
# (lavapipe on a machine without a GPU), then the count of coop cases that ran lowered (tools/coop-summary.sh),
# and the compile-only sweeps on emulated Intel and AMD devices (tests/vendor), whose register and spill
# tables are printed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/tools/build.sh"
cd "$BUILD"
rm -f coop-emulated/*.xml
status=0
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@" 2>&1 | tee ctest.log || status=$?
for t in "$BUILD"/vendor-compile/*.txt; do
  [ -f "$t" ] || continue
  echo "== compile-only sweep: $(basename "$t" .txt)"
  cat "$t"
done
"$ROOT/tools/coop-summary.sh" "$BUILD" || status=$?
grep -E "tests passed|tests failed" ctest.log | tail -n 1 # ctest's own summary stays the last line
exit $status
