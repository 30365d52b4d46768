#!/usr/bin/env bash
# bf16 against f16 on the GPU, all in one call: the probe's bf16 line, the coop GEMM (bf16 x bf16 -> f32 beside
# f16 x f16 -> f32) at every GEMM of a GPT-2-small and a Qwen2.5-0.5B training step, and the fused attention
# (bf16 q/k/v beside f16) at both models' shapes, forward and forward + backward. Writes the helios-bench JSON
# files and bench/merge_bf16.py's summary ($OUT/bf16.json, bench/results format: device, driver, commit) and
# prints the bf16/f16 ratio per shape last. Target: bf16 >= 0.95x f16 everywhere.
#   Stage first (here): STAGE="helios-bench helios-probe" bash bench/device/stage.sh
#   Carry: .gl .dev        Run: HELIOS_COMMIT=<sha> bash bench/device/bf16.sh
set -uo pipefail
OUT=${OUT:-/tmp/helios-bf16}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
helios-probe --device nvidia | grep -E "Best (b)?f16|GEMMs run|shaderBFloat16" | tee "$OUT/probe.txt"
helios-probe --device nvidia --json >"$OUT/probe.json"

# Every GEMM of one training step (y = x W^T forward: NT; dx = dy W: NN; dW = dy^T x: TN, K = tokens).
# GPT-2 small at 16 x 1024 tokens: C 768, QKV 2304, MLP 3072, vocab 50304.
GPT2_NT=16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,16384x50304x768
GPT2_NN=16384x768x2304,16384x768x768,16384x768x3072,16384x3072x768,16384x768x50304
GPT2_TN=2304x768x16384,768x768x16384,3072x768x16384,768x3072x16384,50304x768x16384
# Qwen2.5-0.5B at 8 x 1024 tokens: hidden 896, 14 query heads and 2 kv heads of 64 (QKV 896 + 2 x 128 =
# 1152), SwiGLU intermediate 4864 (gate and up alike), vocab 151936 (tied head).
QWEN_NT=8192x1152x896,8192x896x896,8192x4864x896,8192x896x4864,8192x151936x896
QWEN_NN=8192x896x1152,8192x896x896,8192x896x4864,8192x4864x896,8192x896x151936
QWEN_TN=1152x896x8192,896x896x8192,4864x896x8192,896x4864x8192,151936x896x8192
gemm() { # model layout shapes dtype out
  helios-bench gemm --kernel auto --dtype "$4" --out "$5" --shapes "$3" --layouts "$2" --warmup 3 --repeat 10 \
    --label "$1" --json "$OUT/gemm_$1_$2_$4_$5.json" >"$OUT/gemm_$1_$2_$4_$5.txt" 2>&1 ||
    echo "helios-bench gemm $1 $2 $4 $5 failed (rc $?)"
}
for dtype in f16 bf16; do
  echo "== GEMM $dtype"
  gemm gpt2 nt "$GPT2_NT" $dtype $dtype # the forward writes 16-bit activations
  gemm gpt2 nn "$GPT2_NN" $dtype f32
  gemm gpt2 tn "$GPT2_TN" $dtype f32
  gemm qwen nt "$QWEN_NT" $dtype $dtype
  gemm qwen nn "$QWEN_NN" $dtype f32
  gemm qwen tn "$QWEN_TN" $dtype f32
done

# Attention: GPT-2 small B16 H12 S1024 D64; Qwen2.5-0.5B B8 H14 (2 kv heads) S1024 D64; causal, 16-bit q/k/v.
for qkv in f16 bf16; do
  echo "== attention $qkv"
  helios-bench attention --kernel coop --qkv $qkv --shapes 16x12x1024x64,8x14x2x1024x64 --masks causal \
    --modes fwd,fwdbwd --json "$OUT/attention_$qkv.json" >"$OUT/attention_$qkv.txt" 2>&1 ||
    echo "helios-bench attention $qkv failed (rc $?)"
done

python3 bench/merge_bf16.py --dir "$OUT" --out "$OUT/bf16.json"
