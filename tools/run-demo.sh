#!/usr/bin/env bash
# The README's demo command: bootstrap, build, probe the devices, train a small GPT on the default corpus
# (the King James Bible, from Debian's bible-kjv-text) on the best Vulkan device, then sample from it.
#   HELIOS_DEMO_STEPS (default 150), HELIOS_DEVICE, and any extra helios-train flags as arguments.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
"$ROOT/tools/build.sh"
"$BUILD/bin/helios-probe"
OUT=${HELIOS_DEMO_OUT:-$ROOT/runs/demo}
"$BUILD/bin/helios-train" --preset tiny --steps "${HELIOS_DEMO_STEPS:-150}" --out "$OUT" "$@"
echo
echo "== sample from $OUT"
"$BUILD/bin/helios-train" sample --resume "$OUT" --prompt "And God said" --tokens 200
