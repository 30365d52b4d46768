#!/usr/bin/env bash
# A/B timing of the f16 coop GEMM under environment variants, beside one cuBLAS run from the same device call.
# Run from the repository root on the device machine with .gl and .dev carried (bench/device/stage.sh).
#   HELIOS_COMMIT=<sha> [SHAPES=MxNxK,...] [LAYOUTS=nn,nt,tn] [OUTS="f32 f16"] [CHECK=1] [KERNEL=tiled TILES=t1,t2] \
#     bash bench/device/ab-gemm.sh "label=VAR=v[,VAR=v]" ...      (an entry "base=" runs with no variable)
# CHECK=1 also runs the numerical coop check (bench/h100/run.sh) under each variant that sets a variable. Results: $FINAL/ab-gemm.tgz
# (one merged JSON per output type, every variant a run) and the summary lines on stdout.
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=$(mktemp -d /tmp/helios-ab-gemm.XXXX)
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
SHAPES=${SHAPES:-4096x4096x4096,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,4096x50304x768}
LAYOUTS=${LAYOUTS:-nn,nt,tn}
for entry in "$@"; do
  label=${entry%%=*}; envs=${entry#*=}
  for out in ${OUTS:-f32 f16}; do
    env ${envs//,/ } helios-bench gemm --kernel "${KERNEL:-auto}" ${TILES:+--tiles "$TILES"} --dtype f16 --out "$out" \
      --shapes "$SHAPES" --layouts "$LAYOUTS" --label "$label" --json "$OUT/helios_${label}_$out.json" >"$OUT/helios_${label}_$out.txt" 2>&1 ||
      tail -n 3 "$OUT/helios_${label}_$out.txt"
  done
  if [ "${CHECK:-0}" = 1 ] && [ -n "$envs" ]; then
    env ${envs//,/ } HELIOS_COOP_CHECK=$PWD/.dev/bin/helios-coop-check timeout 240 bash bench/h100/run.sh \
      "$OUT/check-$label" --seed 1 2>&1 | tail -n 3 | sed "s/^/[$label check] /"
  fi
done
python3 bench/torch/gemm.py --shapes "$SHAPES" --layouts "$LAYOUTS" --dtypes f16 >"$OUT/torch_gemm.json"
for out in ${OUTS:-f32 f16}; do
  runs=()
  for entry in "$@"; do runs+=(--helios "$OUT/helios_${entry%%=*}_$out.json"); done
  python3 bench/merge_gemm.py "${runs[@]}" --torch "$OUT/torch_gemm.json" --out "$OUT/ab_gemm_$out.json" |
    tee -a "$OUT/summary.txt"
done
tar czf "$FINAL/ab-gemm.tgz" -C "$OUT" .
