#!/usr/bin/env bash
# The tuner on the H100 in one device call (about 8 minutes; give it the 600 s limit):
#  (a) helios-tune searches the nine GEMM shapes of `h100.sh coop` in NN, NT and TN (f16 in, f32 out) and the
#      four attention shapes (coop, causal; forward and backward), re-timing each winner against the policy;
#  (b) in the same process (--compare) times every problem with the hand-tuned policy and with the record,
#      alternately, sustained timing, and prints the before/after table;
#  (c) helios-tune --preset gpt2-small --budget 300 tunes GPT-2 small's step and reports its elapsed time;
#  (d) helios-train trains gpt2-small for $STEPS steps without a record and with (c)'s, tokens/s of both.
# Output under $OUT (default /tmp/helios-final): tune.log (the one summary log), tune.json (for
# bench/results/, written by bench/tune_compare.py), the two records (tuning-shapes.json, tuning-gpt2.json).
# Stage here:
#   /work/wt/build.sh helios-tune helios-train helios-probe &&
#   STAGE="helios-tune helios-train helios-probe" bash bench/device/stage.sh
# then carry .gl .dev .mpi .deps/corpus (helios-train links MPI: bench/device/mpi-debs.sh makes .mpi) and run
# from the repository root:
#   HELIOS_COMMIT=<sha> bash bench/device/tune.sh
# Knobs: SHAPES_BUDGET (seconds for (a), default 60), GPT2_BUDGET (300), STEPS (40), COOP_SHAPES, ATTN_SHAPES
# (BxHxSxD), ROUNDS (timings of each side in (b), 2).
set -uo pipefail
OUT=${OUT:-/tmp/helios-final}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
SHAPES=${COOP_SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,511x513x257,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,4096x50304x768}
ASHAPES=${ATTN_SHAPES:-1x8x512x64,4x12x1024x64,8x16x2048x128,1x8x4096x64}
STEPS=${STEPS:-40}
LOG=$OUT/tune.log
WORK=$(mktemp -d)
exec > >(tee "$LOG") 2>&1
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader

gemm_list=; for s in ${SHAPES//,/ }; do for l in nn nt tn; do gemm_list+="gemm:$l:$s,"; done; done
attn_list=; for s in ${ASHAPES//,/ }; do IFS=x read -r b h t d <<<"$s"; attn_list+="attn:B${b}H${h}S${t}D${d}c,"; done
rm -f "$HELIOS_CACHE_DIR"/tuning-*.json # the policy side reads no device file

echo "== (a)+(b) tuning the GEMM and attention shapes (${SHAPES_BUDGET:-60} s), then before/after"
helios-tune --shapes "${gemm_list%,}${attn_list:+,${attn_list%,}}" --budget "${SHAPES_BUDGET:-60}" --max-evals 40 \
  --compare --compare-rounds "${ROUNDS:-2}" --out "$OUT/tuning-shapes.json" --json "$WORK/shapes.json" 2>&1 >/dev/null
echo "== (c) tuning gpt2-small (budget ${GPT2_BUDGET:-300} s)"
t0=$(date +%s)
helios-tune --preset gpt2-small --budget "${GPT2_BUDGET:-300}" --out "$OUT/tuning-gpt2.json" --json "$WORK/gpt2.json" \
  2>&1 >/dev/null
echo "gpt2-small tuning: $(( $(date +%s) - t0 )) s wall (process start to exit)"
echo "== (d) helios-train gpt2-small, $STEPS steps, without and with the record"
for side in policy tuned; do
  args=(); [ $side = tuned ] && args=(--tuning "$OUT/tuning-gpt2.json")
  timeout 240 helios-train --preset gpt2-small --steps "$STEPS" "${args[@]}" --out "$WORK/run-$side" \
    --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 | grep -E 'helios-train:|tuning:|done:' |
    tee "$WORK/train-$side.txt"
done
python3 bench/tune_compare.py --shapes "$WORK/shapes.json" --gpt2 "$WORK/gpt2.json" \
  --train "$WORK/train-policy.txt" "$WORK/train-tuned.txt" --gpu "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" \
  --records "$OUT/tuning-shapes.json" "$OUT/tuning-gpt2.json" --out "$OUT/tune.json"
echo "total: $(( $(date +%s) - start )) s"
rm -rf "$WORK"
