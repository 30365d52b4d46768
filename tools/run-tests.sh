#!/usr/bin/env bash
# The README's test command: bootstrap, build, then every Catch2 suite under ctest on the default device
# (lavapipe on a machine without a GPU), then the count of coop cases that ran lowered (tools/coop-summary.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/tools/build.sh"
cd "$BUILD"
rm -f coop-emulated/*.xml
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
"$ROOT/tools/coop-summary.sh" "$BUILD"
