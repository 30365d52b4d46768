#!/usr/bin/env bash
# On the GPU host: bench/device/hf-models-check.py (random-weight SmolLM2-135M, Qwen2.5-0.5B and
# Llama-3.2-1B configurations from transformers against helios-train logits, then 20 training steps,
# export and AutoModelForCausalLM again). Stage first: STAGE="helios-train helios-probe" bench/device/stage.sh.
# Carry .gl, .mpi (bench/device/mpi-debs.sh), .dev and .deps/corpus.
#   [PRECISION=f32|mixed|bf16] [MODELS=smollm2-135m,qwen2.5-0.5b,llama-3.2-1b] [STEPS=20] \
#     bash bench/device/hf-models-check.sh
# Models and runs go to $WORK (default /tmp/helios-hf-models); the table is printed last and the JSON is
# copied into $OUT when the device call sets it.
set -uo pipefail
WORK=${WORK:-/tmp/helios-hf-models}
mkdir -p "$WORK"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
python3 bench/device/hf-models-check.py --precision "${PRECISION:-f32}" --out "$WORK" \
  ${MODELS:+--models "$MODELS"} ${STEPS:+--steps "$STEPS"}
status=$?
if [ -n "${OUT:-}" ] && [ -f "$WORK/hf-models-check.json" ]; then cp "$WORK/hf-models-check.json" "$OUT/"; fi
exit $status
