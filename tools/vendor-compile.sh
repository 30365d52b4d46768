#!/usr/bin/env bash
# Compile-only sweep on one emulated device: `helios-bench compile` (a GPT-2-small step and the attention
# benchmark's shapes) under tools/vendor-env.sh, its table kept in OUTDIR/DEVICE.txt and its JSON in
# OUTDIR/DEVICE.json. With --gate, fails (status 3) when a GEMM or attention kernel spills.
# Usage: tools/vendor-compile.sh DEVICE HELIOS_BENCH OUTDIR [--gate]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 DEVICE HELIOS_BENCH OUTDIR [--gate]" >&2; exit 2; }
dev=$1 bench=$2 out=$3
gate=()
[ "${4:-}" = --gate ] && gate=(--gate-no-spills)
mkdir -p "$out"
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
# The driver's pipeline cache would hide nothing, but a private one keeps the user's cache clean.
export HELIOS_CACHE_DIR=$out/pipeline-cache
# Nothing executes under the shims, so the coop self-test (engine/ops/coop_selftest) could only fail and turn
# coop off: the sweep is about what the compiler makes of the kernels Helios would choose with coop on.
export HELIOS_COOP=on
status=0
"$ROOT/tools/vendor-env.sh" "$dev" -- "$bench" compile --commit "$commit" --label "$dev" \
  --json "$out/$dev.json" "${gate[@]}" >"$out/$dev.txt" 2>"$out/$dev.err" || status=$?
echo "== $dev (commit $commit): $(grep -m1 -o '"driver": "[^"]*"' "$out/$dev.json" 2>/dev/null || echo 'no JSON')"
cat "$out/$dev.txt"
[ $status -eq 0 ] || { grep -v -e '^Unknown' -e '^DRM_IOCTL' "$out/$dev.err" | tail -n 5 >&2 || true; }
exit $status
