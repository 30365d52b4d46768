#!/usr/bin/env bash
# The README's demo command: bootstrap, build, probe the devices, then train a small model.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/tools/build.sh"
"$BUILD/tools/helios-probe" "$@"
