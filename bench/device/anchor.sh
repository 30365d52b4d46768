#!/usr/bin/env bash
# Helios against the reachable limit, in one device call (issue 45, item 1; about 6 minutes on the H200, the
# Triton anchor's autotuning and compiles a third of it; run it with a 600 s limit):
# the device's own ceilings (helios-bench peak), then every GEMM of a GPT-2-small and of a Qwen2.5-0.5B
# training step in the layout the step runs it (forward NT, input gradient NN, weight gradient TN, the LM head's
# chunk GEMMs; f16 operands, f32 C) and the attention shapes, forward and forward + backward, each timed by
# Helios, by the Triton anchor on warp-level MMA (--mma v2) and on wgmma (--mma v3), and by cuBLAS / SDPA;
# bench/merge_anchor.py puts them side by side and prints the table last.
# Carry .gl and .dev (STAGE="helios-bench helios-probe" bash bench/device/stage.sh).
#   HELIOS_COMMIT=<sha> bash bench/device/anchor.sh
# Writes $FINAL/anchor.json (the merged result: copy it to bench/results/<date>-h200-anchor.json) and every
# input and log under $FINAL/anchor-run/ as it is made, so a run cut short still brings back what it measured.
# Knobs: STEPS="peak helios anchor torch" (default: all; the merge runs on what exists), GEMM_SHAPES /
# ATTENTION_SHAPES to narrow the lists.
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=$FINAL/anchor-run
rm -rf "$OUT" && mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
steps=" ${STEPS:-peak helios anchor torch} "
start=$SECONDS
stage() { echo "== [$((SECONDS - start)) s] $*"; }

# GPT-2 small, B16 x T1024 (16384 tokens, width 768, MLP 3072, vocab 50304; the LM head in 7 chunks of 2432
# rows) and Qwen2.5-0.5B, B8 x T1024 (8192 tokens, width 896, QKV 896 + 2 x 128, SwiGLU 4864, vocab 151936; the
# head in 11 chunks of 768 rows). Linear weights are [out, in]: y = x W^T (NT), dx = dy W (NN), dW = dy^T x (TN).
gpt2="16384x2304x768:nt,16384x768x768:nt,16384x3072x768:nt,16384x768x3072:nt,2432x50304x768:nt"
gpt2+=",16384x768x2304:nn,16384x768x768:nn,16384x768x3072:nn,16384x3072x768:nn,2432x768x50304:nn"
gpt2+=",2304x768x16384:tn,768x768x16384:tn,3072x768x16384:tn,768x3072x16384:tn,50304x768x2432:tn"
qwen="8192x1152x896:nt,8192x896x896:nt,8192x4864x896:nt,8192x896x4864:nt,768x151936x896:nt"
qwen+=",8192x896x1152:nn,8192x896x896:nn,8192x896x4864:nn,8192x4864x896:nn,768x896x151936:nn"
qwen+=",1152x896x8192:tn,896x896x8192:tn,4864x896x8192:tn,896x4864x8192:tn,151936x896x768:tn"
GEMM_SHAPES=${GEMM_SHAPES:-$gpt2,$qwen}
# B x H x S x D, or B x H x Hkv x S x D (grouped-query): GPT-2's, the D = 128 shape, Qwen's.
ATTENTION_SHAPES=${ATTENTION_SHAPES:-16x12x1024x64,8x16x2048x128,8x14x2x1024x64}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"

if [[ $steps == *" peak "* ]]; then
  stage "helios-bench peak: MMA per listed coop configuration, memory bandwidth"
  timeout 150 helios-bench peak --target-ms 1 --warmup-ms 100 --windows 5 --repeat 5 --json "$OUT/peak.json" 2>&1 |
    tee "$OUT/peak.txt" | grep -v "skipped"
fi

if [[ $steps == *" helios "* ]]; then
  for layout in nt nn tn; do
    shapes=$(tr ',' '\n' <<<"$GEMM_SHAPES" | grep ":$layout\$" | sed "s/:$layout//" | paste -sd,)
    [ -z "$shapes" ] && continue
    stage "helios-bench gemm $layout"
    timeout 90 helios-bench gemm --kernel auto --dtype f16 --out f32 --layouts "$layout" --shapes "$shapes" \
      --warmup-ms 200 --label "step-$layout" --json "$OUT/helios_gemm_$layout.json" >"$OUT/helios_gemm_$layout.txt" 2>&1 ||
      tail -n 3 "$OUT/helios_gemm_$layout.txt"
  done
  stage "helios-bench attention (coop, f16 q/k/v)"
  timeout 120 helios-bench attention --kernel coop --qkv f16 --shapes "$ATTENTION_SHAPES" --masks causal,dense \
    --modes fwd,fwdbwd --passes 2 --warmup-ms 200 --json "$OUT/helios_attention.json" \
    >"$OUT/helios_attention.txt" 2>&1 || tail -n 3 "$OUT/helios_attention.txt"
fi

if [[ $steps == *" anchor "* ]]; then
  for mma in v2 v3; do
    stage "Triton anchor --mma $mma"
    timeout 180 python3 bench/torch/triton_anchor.py --mma "$mma" --gemm "$GEMM_SHAPES" --outs f32 \
      --attention "$ATTENTION_SHAPES" --busy-ms 200 --json "$OUT/anchor_$mma.json" >"$OUT/anchor_$mma.txt" 2>&1
    tail -n 1 "$OUT/anchor_$mma.txt"
  done
fi

if [[ $steps == *" torch "* ]]; then
  stage "cuBLAS (bench/torch/gemm.py) and SDPA (bench/torch/attention.py)"
  timeout 120 python3 bench/torch/gemm.py --shapes "$GEMM_SHAPES" --dtypes f16 --outs f32 --busy-ms 200 \
    >"$OUT/torch_gemm.json" 2>"$OUT/torch_gemm.err" || tail -n 3 "$OUT/torch_gemm.err"
  (cd bench/torch && timeout 90 python3 attention.py --shapes "$ATTENTION_SHAPES" --dtypes f16 --busy-ms 200) \
    >"$OUT/torch_attention.json" 2>"$OUT/torch_attention.err" || tail -n 3 "$OUT/torch_attention.err"
fi

stage "merge"
[ -s "$OUT/peak.json" ] || echo '{}' >"$OUT/peak.json"
args=()
for f in "$OUT"/helios_gemm_*.json; do [ -s "$f" ] && args+=(--helios-gemm "$f"); done
[ -s "$OUT/helios_attention.json" ] && args+=(--helios-attention "$OUT/helios_attention.json")
for mma in v2 v3; do [ -s "$OUT/anchor_$mma.json" ] && args+=(--anchor-$mma "$OUT/anchor_$mma.json"); done
[ -s "$OUT/torch_gemm.json" ] && args+=(--torch-gemm "$OUT/torch_gemm.json")
[ -s "$OUT/torch_attention.json" ] && args+=(--torch-attention "$OUT/torch_attention.json")
python3 bench/merge_anchor.py --peak "$OUT/peak.json" "${args[@]}" --out "$FINAL/anchor.json" \
  --note "anchor.sh: GPT-2 small (B16 T1024) and Qwen2.5-0.5B (B8 T1024) step GEMMs in their layouts (f16 in, f32 C), attention $ATTENTION_SHAPES; Helios, Triton warp-MMA (v2) and wgmma (v3), cuBLAS/SDPA, helios-bench peak from one device call" \
  >"$OUT/table.txt" 2>&1
stage "done; the measured peak, then the table (TFLOP/s for GEMMs, us for attention; frac = of the warp-MMA anchor)"
grep -E "^peak (mma|copy)" "$OUT/peak.txt" 2>/dev/null | grep -v skipped
cat "$OUT/table.txt"
