#!/usr/bin/env bash
# Cooperative matrices at every KHR shape the device reports, then this build against a baseline build in
# the same call. Run from the repository root on the device machine with .gl, .dev, build/shaders and
# build-base/dev (a baseline's stripped helios-bench, staged the same way) carried; stage with
# STAGE="helios-probe helios-bench helios-coop-check test_gemm_coop test_attention test_matmul_coop_run test_coop_selftest". Writes under $OUT.
#   bash bench/device/coop-shapes.sh [checks] [bench]      (default: both)
#   SHAPES="16x16x16 16x8x16 16x8x8"  the forced shapes (HELIOS_COOP_SHAPE)
#   GEMM_SHAPES, ATTENTION_SHAPES, ROUNDS (baseline/new alternations, default 2)
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-out
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mkdir -p /work && [ -e /work/main ] || ln -s "$PWD" /work/main
steps=${*:-checks bench}
has() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
helios-probe --json >"$OUT/probe.json" 2>&1
helios-probe --self-test >"$OUT/probe-self-test.txt" 2>&1
echo "probe --self-test: exit $? $(grep -i 'self-test\|shader cores\|compute units' "$OUT/probe-self-test.txt" | head -n 3 | tr '\n' ' ')"
timeout 120 .dev/bin/test_coop_selftest >"$OUT/test_coop_selftest.log" 2>&1
echo "test_coop_selftest: exit $? $(tail -n 2 "$OUT/test_coop_selftest.log" | tr '\n' ' ' | cut -c1-150)"

if has checks; then
  for shape in ${SHAPES:-16x16x16 16x8x16 16x8x8}; do
    echo "== HELIOS_COOP_SHAPE=$shape"
    HELIOS_COOP_SHAPE=$shape timeout 200 helios-coop-check --no-timing --seed "${SEED:-26}" \
      --json "$OUT/coop_check_$shape.json" >"$OUT/coop_check_$shape.log" 2>&1
    echo "coop-check $shape: exit $? $(grep -E 'passed|failed' "$OUT/coop_check_$shape.log" | tail -n 1)"
    for t in test_gemm_coop test_attention test_matmul_coop_run; do
      HELIOS_COOP_SHAPE=$shape timeout 200 .dev/bin/$t '[coop]' >"$OUT/$t.$shape.log" 2>&1
      echo "$t [coop] $shape: exit $? $(tail -n 2 "$OUT/$t.$shape.log" | tr '\n' ' ' | cut -c1-150)"
    done
  done
fi

if has bench; then
  GS=${GEMM_SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,511x513x257,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,4096x50304x768}
  AS=${ATTENTION_SHAPES:-1x8x512x64,2x8x256x64,4x12x1024x64,8x16x2048x128}
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for side in base new; do
      bin=.dev/bin/helios-bench
      [ "$side" = base ] && bin=build-base/dev/helios-bench
      LD_LIBRARY_PATH=$(dirname "$bin"):$LD_LIBRARY_PATH $bin gemm --kernel auto --dtype f16 --out f32 --shapes "$GS" \
        --layouts nn,nt,tn --warmup 3 --repeat 10 --label "$side" --json "$OUT/gemm_${side}_$round.json" \
        >"$OUT/gemm_${side}_$round.txt" 2>&1
      echo "gemm $side round $round: exit $?"
      LD_LIBRARY_PATH=$(dirname "$bin"):$LD_LIBRARY_PATH $bin attention --kernel coop --qkv f16 --shapes "$AS" \
        --repeat 10 --passes 2 --label "$side" --json "$OUT/attention_${side}_$round.json" \
        >"$OUT/attention_${side}_$round.txt" 2>&1
      echo "attention $side round $round: exit $?"
    done
  done
fi
tar czf "$FINAL/results.tgz" -C "$OUT" .
ls -la "$FINAL"
