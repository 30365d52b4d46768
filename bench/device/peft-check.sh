#!/usr/bin/env bash
# On the GPU host: bench/device/peft-check.py (Helios LoRA runs over random-weight Llama, Qwen2 and
# Qwen2.5-0.5B-shaped transformers models, their exported adapters through PeftModel.from_pretrained and their
# merged exports through AutoModelForCausalLM, logits against helios-train logits within 1e-3).
# Stage first: STAGE="helios-train helios-probe" bench/device/stage.sh. Carry .gl, .mpi
# (bench/device/mpi-debs.sh), .dev and .deps/corpus. About 3.5 minutes (a bf16-base run joins the f16 one).
#   [MODELS=llama-small,qwen2-small,qwen2.5-0.5b] [STEPS=8] bash bench/device/peft-check.sh
# Models and runs go to $WORK (default /tmp/helios-peft-check); the table is printed last and the JSON is
# copied into $OUT when the device call sets it.
set -uo pipefail
WORK=${WORK:-/tmp/helios-peft-check}
mkdir -p "$WORK"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
python3 bench/device/peft-check.py --out "$WORK" ${MODELS:+--models "$MODELS"} ${STEPS:+--steps "$STEPS"}
status=$?
if [ -n "${OUT:-}" ] && [ -f "$WORK/peft-check.json" ]; then cp "$WORK/peft-check.json" "$OUT/"; fi
exit $status
