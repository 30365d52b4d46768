#!/usr/bin/env bash
# Training throughput on the H100: helios-train, PyTorch eager (f32, AMP) and torch.compile (AMP) on identical
# GPT configs, same run (NO_COMPILE=1 skips torch.compile).
# Carry .gl, .dev, build/shaders and .deps/corpus (bench/device/stage.sh). Results: $FINAL/train.tgz + summary.
#   HELIOS_COMMIT=<sha> [GPT2_BATCH=4] [PROFILE=1] [PROFILE_CONFIGS="char gpt2-small"] [UNFUSED_CONFIGS="char"]
#   [SPLIT_CONFIGS="gpt2-small"] [GPT_VARIANTS='f32hidden={"f16_hidden":false}']
#   [STEPS=60] [CHAR_STEPS=400] [CENSUS=1: gpt2-small's step census (helios-train --plan-only) first]
#   bash bench/device/h100-train.sh
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-train
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
# Enough steps for merge_train.py's steady-state windows after a 3 s warm-up, as PyTorch gets (the char
# model's mixed step is ~12 ms: 60 steps would end inside the warm-up).
STEPS=${STEPS:-60} CHAR_STEPS=${CHAR_STEPS:-400}
if [ -n "${CENSUS:-}" ]; then # dispatches and barriers per kernel family of one recorded step; a dry run
  echo "== helios-train gpt2-small mixed --plan-only"
  batch=(); [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
  timeout 300 helios-train --preset gpt2-small --precision mixed --plan-only "${batch[@]}" 2>&1 |
    sed -n '/training step (forward/,$p' | tee "$OUT/gpt2-small-census.txt"
fi
for cfg in ${CONFIGS:-char gpt2-small}; do
  for prec in ${PRECISIONS:-f32 mixed}; do
    echo "== helios-train $cfg $prec"
    batch=(); [ "$cfg" = gpt2-small ] && [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
    steps=$STEPS; [ "$cfg" = char ] && steps=$CHAR_STEPS
    timeout 300 helios-train --preset "$cfg" --precision "$prec" --steps "$steps" --out "$OUT/$cfg-$prec" "${batch[@]}" \
      --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 | tail -n 8 | tee "$OUT/$cfg-$prec.txt"
  done
done
# Other attention paths on the same configs, mixed precision: unfused (GEMM, softmax, GEMM) and split (the
# fused kernels on [B, H, T, D] copies of the heads).
for variant in unfused split; do
  configs=UNFUSED_CONFIGS; [ $variant = split ] && configs=SPLIT_CONFIGS
  for cfg in ${!configs:-}; do
    echo "== helios-train $cfg mixed, $variant attention"
    batch=(); [ "$cfg" = gpt2-small ] && [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
    steps=$STEPS; [ "$cfg" = char ] && steps=$CHAR_STEPS
    timeout 300 helios-train --preset "$cfg" --precision mixed --attention $variant --steps "$steps" \
      --out "$OUT/${cfg}_$variant-mixed" "${batch[@]}" --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 |
      tail -n 8 | tee "$OUT/${cfg}_$variant-mixed.txt"
  done
done
# GPT config variants of gpt2-small, mixed precision: GPT_VARIANTS="name={json} ..." (JSON without spaces,
# keys of the run's config.json "gpt" section), e.g. f32hidden={"f16_hidden":false}.
for v in ${GPT_VARIANTS:-}; do
  name=${v%%=*}
  echo "{\"gpt\": ${v#*=}}" >"$OUT/variant-$name.json"
  echo "== helios-train gpt2-small mixed, $name"
  batch=(); [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
  timeout 300 helios-train --preset gpt2-small --precision mixed --config "$OUT/variant-$name.json" --steps "$STEPS" \
    --out "$OUT/gpt2-small_$name-mixed" "${batch[@]}" --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 |
    tail -n 8 | tee "$OUT/gpt2-small_$name-mixed.txt"
done
echo "== PyTorch eager"
python3 bench/torch/gpt_train.py --configs char --vocab 63 --modes f32,amp --steps 40 --windows 5 --json "$OUT/torch_char.json" | tail -n 3
python3 bench/torch/gpt_train.py --configs gpt2-small --modes f32,amp --steps 10 ${GPT2_BATCH:+--batch $GPT2_BATCH} \
  --json "$OUT/torch_gpt2.json" | tail -n 3
echo "== PyTorch torch.compile (AMP)"
if [ -z "${NO_COMPILE:-}" ]; then
  python3 bench/torch/gpt_train.py --configs char --vocab 63 --modes amp --compile --steps 60 --windows 5 \
    --json "$OUT/torch_char_compile.json" | tail -n 2
  # The char model's steps are short enough that launching each kernel from Python shows: also with CUDA
  # graphs (2026-11-26-h100-train-adamw.json: 2.03-2.13M tokens/s without, 2.91M with).
  python3 bench/torch/gpt_train.py --configs char --vocab 63 --modes amp --compile --compile-mode reduce-overhead \
    --steps 60 --windows 5 --json "$OUT/torch_char_compile_graphs.json" | tail -n 2
  python3 bench/torch/gpt_train.py --configs gpt2-small --modes amp --compile --steps 20 ${GPT2_BATCH:+--batch $GPT2_BATCH} \
    --json "$OUT/torch_gpt2_compile.json" | tail -n 2
fi
python3 bench/merge_train.py --runs "$OUT" --torch "$OUT/torch_char.json" --torch "$OUT/torch_gpt2.json" \
  --torch "$OUT/torch_char_compile.json" --torch "$OUT/torch_gpt2_compile.json" \
  --torch "$OUT/torch_char_compile_graphs.json" \
  --out "$OUT/train.json" | tee "$OUT/summary.txt"
if [ -n "${PROFILE:-}" ]; then
  for cfg in ${PROFILE_CONFIGS:-char}; do
    echo "== per-kernel profile ($cfg mixed, 8 steps)"
    timeout 120 helios-train --preset "$cfg" --precision mixed --steps 8 --profile --out "/tmp/helios-profile-$cfg" \
      --eval-every 100000 --checkpoint-every 100000 >"$OUT/profile-$cfg-mixed.txt" 2>&1
    grep -A14 "per-kernel GPU time" "$OUT/profile-$cfg-mixed.txt"
  done
fi
tar czf "$FINAL/train.tgz" -C "$OUT" --exclude='*.safetensors' .
cp "$OUT/summary.txt" "$FINAL/"
