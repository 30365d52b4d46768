#!/usr/bin/env bash
# On the GPU host: a gpt2-small run exported as Hugging Face GPT-2 and checked against transformers'
# GPT2LMHeadModel (bench/device/hf-check.py, logits within 1e-3), then sampling tokens/s with the KV cache
# and with a full-window forward per token. Carry .gl, .dev, build/shaders and .deps/corpus (stage.sh).
#   [RUN=runs/existing] [STEPS=50] [TOKENS=256] [PROMPT="And God said"] bash bench/device/hf-sample.sh
# Prints hf-check's JSON and one "sampled N tokens in S s: R tokens/s (...)" line per sampling mode.
set -uo pipefail
OUT=${OUT:-/tmp/helios-hf}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
RUN=${RUN:-$OUT/gpt2-small}
if [ ! -d "$RUN/checkpoints" ]; then
  echo "== training gpt2-small (mixed, ${STEPS:-50} steps) into $RUN"
  timeout 300 helios-train --preset gpt2-small --precision mixed --steps "${STEPS:-50}" --out "$RUN" \
    --eval-every 100000 --log-every 10 2>&1 | tail -n 4
fi
echo "== export (f32, reference logits for 256 tokens)"
helios-train export --format hf --run "$RUN" --out "$OUT/hf" --reference-logits 256
python3 bench/device/hf-check.py "$OUT/hf" | tee "$OUT/hf-check.json"
for dtype in f16 bf16; do helios-train export --format hf --run "$RUN" --out "$OUT/hf-$dtype" --dtype $dtype; done
echo "== sampling ${TOKENS:-256} tokens, greedy"
for mode in "" --no-kv-cache; do
  helios-train sample --resume "$RUN" --prompt "${PROMPT:-And God said}" --tokens "${TOKENS:-256}" \
    --temperature 0 $mode 2>&1 >/dev/null | tee -a "$OUT/sample.txt"
done
