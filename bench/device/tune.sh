#!/usr/bin/env bash
# The tuner on the H100, in one device call (< 8 minutes): helios-tune searches the nine GEMM shapes of
# `h100.sh coop` in NN, NT and TN (f16 in, f32 out) and the four attention shapes (coop forward, causal),
# writing a tuning file; then helios-bench times each problem with today's default policy and with that
# file, back to back on the same warm GPU (sustained timing), and bench/tune_compare.py prints one JSON
# document for bench/results/ (tuned/default speed-up per problem, geometric means, the record itself).
# Stage here: /work/wt/build.sh helios-tune helios-bench helios-probe &&
#   STAGE="helios-tune helios-bench helios-probe" bash bench/device/stage.sh
# then on the device machine, from the repository root with .gl and .dev carried:
#   HELIOS_COMMIT=<sha> bash bench/device/tune.sh            # results under $OUT (default /tmp/helios-final)
# Knobs: GEMM_BUDGET / ATTN_BUDGET (seconds of search, default 240 / 48), COOP_SHAPES, ATTN_SHAPES (BxHxSxD).
set -uo pipefail
OUT=${OUT:-/tmp/helios-final}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
SHAPES=${COOP_SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,511x513x257,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,4096x50304x768}
ASHAPES=${ATTN_SHAPES:-1x8x512x64,4x12x1024x64,8x16x2048x128,1x8x4096x64}
RECORD=$OUT/tuning-h100.json
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"

gemm_list=; for s in ${SHAPES//,/ }; do for l in nn nt tn; do gemm_list+="gemm:$l:$s,"; done; done
attn_list=; for s in ${ASHAPES//,/ }; do IFS=x read -r b h t d <<<"$s"; attn_list+="attn:B${b}H${h}S${t}D${d}c,"; done

echo "== tuning (GEMM ${GEMM_BUDGET:-240} s, attention ${ATTN_BUDGET:-48} s)"
rm -f "$RECORD" "$HELIOS_CACHE_DIR"/tuning-*.json # the default side reads no device file
helios-tune --shapes "${gemm_list%,}" --budget "${GEMM_BUDGET:-240}" --max-evals 40 --out "$RECORD" \
  --json "$OUT/tune_gemm.json" >"$OUT/tune_gemm.txt" 2>"$OUT/tune_gemm.log"
tail -n 30 "$OUT/tune_gemm.log"
helios-tune --shapes "${attn_list%,}" --budget "${ATTN_BUDGET:-48}" --max-evals 40 --tuning "$RECORD" \
  --out "$RECORD" --json "$OUT/tune_attention.json" >"$OUT/tune_attention.txt" 2>"$OUT/tune_attention.log"
tail -n 8 "$OUT/tune_attention.log"
helios-probe --tuning --tuning-file "$RECORD" >"$OUT/tuning_record.txt" 2>&1

echo "== default vs tuned, same process order per problem, sustained timing"
for side in default tuned; do
  args=(); [ "$side" = tuned ] && args=(--tuning "$RECORD")
  helios-bench gemm "${args[@]}" --kernel auto --dtype f16 --out f32 --shapes "$SHAPES" --layouts nn,nt,tn \
    --warmup 3 --repeat 10 --label "$side" --json "$OUT/gemm_$side.json" >"$OUT/gemm_$side.txt" 2>&1
  helios-bench attention "${args[@]}" --kernel coop --qkv f32 --masks causal --modes fwd --shapes "$ASHAPES" \
    --repeat 10 --passes 2 --label "$side" --json "$OUT/attention_$side.json" >"$OUT/attention_$side.txt" 2>&1
done
python3 bench/tune_compare.py --record "$RECORD" --gemm "$OUT/gemm_default.json" "$OUT/gemm_tuned.json" \
  --attention "$OUT/attention_default.json" "$OUT/attention_tuned.json" --tune "$OUT/tune_gemm.json" \
  "$OUT/tune_attention.json" --out "$OUT/tune_compare.json"
cat "$OUT/tune_compare.json"
