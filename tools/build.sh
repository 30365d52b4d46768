#!/usr/bin/env bash
# Obtains the dependencies (idempotent) and builds Helios into build/ (or $HELIOS_BUILD_DIR): every target,
# or only the targets named as arguments (tools/run-demo.sh builds the demo's two tools).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/third_party/bootstrap.sh"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} -DHELIOS_WERROR=ON >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" "${targets[@]}"
