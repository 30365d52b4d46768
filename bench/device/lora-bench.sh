#!/usr/bin/env bash
# LoRA fine-tuning speed and memory on the GPU host, Helios beside PyTorch + PEFT, in one device call: the
# Qwen2.5-0.5B shape at 8 x 1024 and the SmolLM2-1.7B shape at 4 x 1024 (bench/configs/*.json, random base
# weights), rank 16 on every projection, alpha 32, a half-precision base, activation checkpointing.
#   Helios   helios-train --config bench/configs/M.json --lora-rank 16 --lora-alpha 32 --base-dtype f16
#            --precision mixed --checkpoint-activations block: the "done:" tokens/s (last 20 steps) and the
#            "memory: peak" line (Helios' own accounting), plus nvidia-smi's largest memory.used while it ran
#   PyTorch  bench/torch/hf_train.py --modes lora --checkpointing (bf16 base, f32 adapters, autocast bf16),
#            eager and with --compile (PARTS=helios,eager,compile picks; the default runs all three)
# Stage first: STAGE="helios-train helios-probe" bench/device/stage.sh. Carry .gl, .mpi
# (bench/device/mpi-debs.sh), .dev and .deps/corpus. About 4-5 minutes (torch.compile is most of it).
#   [STEPS=40] [PARTS=helios,eager,compile] bash bench/device/lora-bench.sh
# Prints one line per run and writes $OUT/lora-bench.txt (and every run's log in $OUT/lora-bench/).
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
LOGS=/tmp/helios-lora-bench
rm -rf "$LOGS" && mkdir -p "$LOGS" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
STEPS=${STEPS:-40} PARTS=${PARTS:-helios,eager,compile}
SHAPES=("qwen2.5-0.5b 8" "smollm2-1.7b 4")
summary=$FINAL/lora-bench.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# helios MODEL BATCH: one helios-train LoRA run with nvidia-smi sampling memory.used beside it.
helios() {
  local model=$1 batch=$2 log=$LOGS/helios-$1.txt smi=$LOGS/smi-$1.txt
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$smi" 2>/dev/null &
  local smi_pid=$!
  timeout 240 helios-train --config "bench/configs/$model.json" --batch "$batch" --seq-len 1024 \
    --lora-rank 16 --lora-alpha 32 --base-dtype f16 --precision mixed --checkpoint-activations block \
    --steps "$STEPS" --lr 1e-4 --warmup 5 --eval-every 100000 --checkpoint-every 100000 --log-every 10 \
    --out "$LOGS/run-$model" >"$log" 2>&1
  local rc=$?
  kill "$smi_pid" 2>/dev/null
  wait "$smi_pid" 2>/dev/null
  local smi_max
  smi_max=$(sort -n "$smi" 2>/dev/null | tail -n 1)
  say "helios  $model ${batch}x1024 exit $rc | $(grep -E '^done:' "$log" | head -n 1)"
  say "        $(grep -E '^memory:' "$log" | head -n 1) | nvidia-smi max ${smi_max:-?} MiB"
}

# torch MODEL BATCH [--compile]: bench/torch/hf_train.py's LoRA mode, one JSON line per result.
torch_run() {
  local model=$1 batch=$2 tag=${3:+compile}
  timeout 240 python3 bench/torch/hf_train.py --configs "$model" --modes lora --rank 16 --batch "$batch" \
    --seq 1024 --checkpointing ${3:-} >"$LOGS/torch-${tag:-eager}-$model.txt" 2>&1
  say "torch-${tag:-eager} $model ${batch}x1024 exit $? | $(grep -E '^\{' "$LOGS/torch-${tag:-eager}-$model.txt" |
    tail -n 1 | python3 -c 'import json, sys; r = json.loads(sys.stdin.read() or "{}"); print(
      "tokens/s", r.get("tokens_per_s"), "| ms/step", r.get("ms_per_step"), "| peak GiB", r.get("peak_mem_gib"))')"
}

for shape in "${SHAPES[@]}"; do
  set -- $shape
  [[ ,$PARTS, == *,helios,* ]] && helios "$1" "$2"
  [[ ,$PARTS, == *,eager,* ]] && torch_run "$1" "$2"
  [[ ,$PARTS, == *,compile,* ]] && torch_run "$1" "$2" --compile
done
mkdir -p "$FINAL/lora-bench" && cp "$LOGS"/*.txt "$FINAL/lora-bench/" 2>/dev/null
echo "== summary ($summary)"
cat "$summary"
