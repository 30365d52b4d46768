#!/usr/bin/env bash
# The README's demo command: bootstrap, build the demo's tools, probe the devices, train a small GPT on the
# default corpus (the King James Bible, from Debian's bible-kjv-text) on the best Vulkan device, then sample from it.
#   HELIOS_DEMO_STEPS (default 150), HELIOS_DEVICE, and any extra helios-train flags as arguments.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
# Only what the demo runs: the two tools, without the tests, and without Mesa's DRM shims (the bootstrap's
# last step, which only the compile-only sweeps of tools/run-tests.sh use).
HELIOS_SKIP_SHIMS=1 "$ROOT/tools/build.sh" helios-probe helios-train
"$BUILD/bin/helios-probe"
OUT=${HELIOS_DEMO_OUT:-$ROOT/runs/demo}
# A rerun starts afresh: helios-train refuses a fresh run over an old one, and --overwrite moves the old run
# aside (to $OUT.replaced-N), never deletes it.
"$BUILD/bin/helios-train" --preset tiny --steps "${HELIOS_DEMO_STEPS:-150}" --out "$OUT" --overwrite "$@"
echo
echo "== sample from $OUT"
"$BUILD/bin/helios-train" sample --resume "$OUT" --prompt "And God said" --tokens 200
