#!/usr/bin/env bash
# One device session on the H100: probe, every test suite on the GPU, benchmarks beside PyTorch/cuBLAS from
# the same run. Run from the repository root on the device machine with .gl, .dev and build/shaders carried
# (bench/device/stage.sh prepares them). Writes logs and JSON under $OUT.
#   HELIOS_COMMIT=<sha> bash bench/device/h100.sh [probe] [tests] [gemm] [coop] [attention] [dispatch]
#                                                 [coopnum] [splitk] [sweep] [explore]   (default: the first six)
# coopnum: only the coop-matrix test cases ([coop] tags) of every test binary; splitk: the weight-gradient
# GEMMs (TN, K = 16384) beside cuBLAS; sweep: every coop GEMM tiling timed at 4096^3 with warm clocks;
# explore: the same plus the candidates off the menus (helios-coop-check --explore), numerics checked first.
# Knobs: COOP2=0 (skip the coopmat2 pass), COOP_CHECK=0 (skip the numerical check), ATTENTION_KERNELS
# (KERNEL[:VAR=value,...] entries),
# TESTS="test_a test_b" (only these test binaries in the tests and coopnum steps), COOP_TEST_VARIANTS
# (VAR=value[,VAR=value] entries: test_attention's [coop] cases rerun under each).
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-out   # everything lands here; packed into $FINAL/results.tgz at the end (few files come back)
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# Tests were built with absolute paths to /work/main (fixtures, GLSL oracles): make them resolve here.
mkdir -p /work && [ -e /work/main ] || ln -s "$PWD" /work/main
export HELIOS_RUN_EXE=$PWD/.dev/bin/helios-run
steps=${*:-probe tests gemm coop attention dispatch}
has() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"

if has probe; then
  echo "== probe"
  helios-probe --device nvidia | tee "$OUT/probe.txt"
  helios-probe --device nvidia --json >"$OUT/probe.json"
fi

if has tests; then
  echo "== test suites on the GPU"
  : >"$OUT/tests.txt"
  for t in .dev/bin/test_*; do
    name=$(basename "$t")
    [ -n "${TESTS:-}" ] && [[ " $TESTS " != *" $name "* ]] && continue
    if HELIOS_GEMM_ALL_TILES=1 timeout "${TEST_TIMEOUT:-300}" "$t" >"$OUT/$name.log" 2>&1; then res=ok; else res=FAIL; fi
    printf '%-28s %s  %s\n' "$name" "$res" "$(tail -n 2 "$OUT/$name.log" | tr '\n' ' ' | cut -c1-120)" | tee -a "$OUT/tests.txt"
  done
fi

if has gemm; then
  echo "== tiled f32 GEMM vs cuBLAS f32 (TF32 off)"
  TILES=${TILES:-auto,128x128x8_8x8_p4_s2,128x128x16_8x8_p4_s2,256x128x8_8x8_p4_s2,128x128x8_8x8_p4_s1,128x128x8_8x8_p0_s2,128x64x8_8x4_p4_s2,64x128x8_4x8_p4_s2,64x64x16_4x4_p4_s2}
  helios-bench gemm --kernel tiled --shapes 4096x4096x4096,1024x1024x1024 --tiles "$TILES" --warmup 3 --repeat 10 \
    --json "$OUT/helios_gemm_f32.json" | tee "$OUT/helios_gemm_f32.txt"
  python3 bench/torch/gemm.py --shapes 4096x4096x4096,1024x1024x1024 --dtypes f32 >"$OUT/torch_gemm_f32.json"
  python3 bench/merge_gemm.py --helios "$OUT/helios_gemm_f32.json" --torch "$OUT/torch_gemm_f32.json" \
    --out "$OUT/gemm_tiled_f32.json" | tee -a "$OUT/summary.txt"
fi

if has coop; then
  echo "== f16 GEMM through matmul() (policy: coop where it applies) vs cuBLAS f16"
  SHAPES=${COOP_SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,511x513x257,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,4096x50304x768}
  # The policy's default (KHR subgroup scope), then with the NV coopmat2 workgroup-scope kernel first
  # (HELIOS_COOP2=1), both beside the same cuBLAS run.
  for out in f32 f16; do
    helios-bench gemm --kernel auto --dtype f16 --out $out --shapes "$SHAPES" --layouts nn,nt,tn --warmup 3 --repeat 10 \
      --label default --json "$OUT/helios_gemm_f16_$out.json" >"$OUT/helios_gemm_f16_$out.txt" 2>&1
  done
  coop2=()
  if [ "${COOP2:-1}" = 1 ]; then
    HELIOS_COOP2=1 helios-bench gemm --kernel auto --dtype f16 --out f32 --shapes "$SHAPES" --layouts nn,nt,tn --warmup 3 \
      --repeat 10 --label coop2 --json "$OUT/helios_gemm_f16_f32_coop2.json" >"$OUT/helios_gemm_f16_f32_coop2.txt" 2>&1
    coop2=(--helios "$OUT/helios_gemm_f16_f32_coop2.json")
  fi
  python3 bench/torch/gemm.py --shapes "$SHAPES" --layouts nn,nt,tn --dtypes f16 >"$OUT/torch_gemm_f16.json"
  python3 bench/merge_gemm.py --helios "$OUT/helios_gemm_f16_f32.json" --helios "$OUT/helios_gemm_f16_f16.json" \
    "${coop2[@]}" --torch "$OUT/torch_gemm_f16.json" --out "$OUT/gemm_coop_f16.json" |
    tee -a "$OUT/summary.txt"
  if [ "${COOP_CHECK:-1}" = 1 ] && [ -x bench/h100/run.sh ] && [ -x .dev/bin/helios-coop-check ]; then
    echo "== coop GEMM numerical check"
    HELIOS_COOP_CHECK=$PWD/.dev/bin/helios-coop-check timeout 240 bash bench/h100/run.sh "$OUT/coop" --seed 1 2>&1 | tail -40
  fi
fi

if has attention; then
  echo "== fused attention (fallback f32, and coop) vs PyTorch SDPA (f16 flash and f32)"
  ASHAPES=${ATTENTION_SHAPES:-1x8x512x64,2x8x256x64,4x12x1024x64,8x16x2048x128,1x8x4096x64}
  (cd bench/torch && python3 attention.py --shapes "$ASHAPES") >"$OUT/torch_attention.json"
  # Entries: KERNEL[:VAR=value,...] (e.g. coop:HELIOS_ATTENTION_ROWOPS=0); coop-nopf = coop without prefetch;
  # coop-h16 = coop on f16 q, k, v.
  for entry in ${ATTENTION_KERNELS:-fallback coop}; do
    kernel=${entry%%:*}; envs=; [ "$entry" != "$kernel" ] && envs=${entry#*:}
    [ "$kernel" = coop-nopf ] && kernel=coop && envs=HELIOS_ATTENTION_PREFETCH=0
    qkv=f32; [ "$kernel" = coop-h16 ] && kernel=coop && qkv=f16 # q, k, v stored as f16, as SDPA f16 reads them
    label=$(echo "$entry" | tr ':=,' '-__')
    # Two passes over the shapes, the second recorded: the first shape of a process read 2-10x slow even
    # with 1 s of warm-up per measurement.
    env ${envs//,/ } helios-bench attention --kernel "$kernel" --qkv $qkv --shapes "$ASHAPES" --repeat 10 --passes 2 \
      --label "$label" --json "$OUT/helios_attention_$label.json" >"$OUT/helios_attention_$label.txt" 2>&1
    python3 bench/merge_attention.py --helios "$OUT/helios_attention_$label.json" --torch "$OUT/torch_attention.json" \
      --out "$OUT/attention_$label.json" | tee -a "$OUT/summary.txt"
  done
fi

if has coopnum; then
  echo "== coop-matrix test cases on the GPU"
  for t in .dev/bin/test_*; do
    name=$(basename "$t")
    [ -n "${TESTS:-}" ] && [[ " $TESTS " != *" $name "* ]] && continue
    "$t" --list-tags 2>/dev/null | grep -q '\[coop\]' || continue
    if timeout "${TEST_TIMEOUT:-300}" "$t" '[coop]' >"$OUT/$name.coop.log" 2>&1; then res=ok; else res=FAIL; fi
    printf '%-28s [coop] %s  %s\n' "$name" "$res" "$(tail -n 2 "$OUT/$name.coop.log" | tr '\n' ' ' | cut -c1-160)" |
      tee -a "$OUT/tests-coop.txt"
    if [ "$name" = test_attention ]; then # coop attention variants (COOP_TEST_VARIANTS)
      for v in ${COOP_TEST_VARIANTS:-HELIOS_ATTENTION_PREFETCH=0 HELIOS_ATTENTION_ROWOPS=0 HELIOS_ATTENTION_TILE=128 HELIOS_ATTENTION_SUBGROUPS=8 HELIOS_ATTENTION_PAD=0}; do
        if env ${v//,/ } timeout "${TEST_TIMEOUT:-300}" "$t" '[coop]' >"$OUT/$name.coop-$v.log" 2>&1; then res=ok; else res=FAIL; fi
        printf '%-28s [coop] %s %s  %s\n' "$name" "$v" "$res" \
          "$(tail -n 2 "$OUT/$name.coop-$v.log" | tr '\n' ' ' | cut -c1-140)" | tee -a "$OUT/tests-coop.txt"
      done
    fi
  done
fi

if has splitk; then
  echo "== weight-gradient GEMMs (TN, K = 16384 tokens) vs cuBLAS"
  KSHAPES=1152x384x16384,384x384x16384,1536x384x16384,384x1536x16384,2304x768x16384,768x3072x16384
  helios-bench gemm --kernel auto --dtype f16 --out f32 --shapes "$KSHAPES" --layouts tn --repeat 20 --label splitk \
    --json "$OUT/helios_gemm_splitk.json" >"$OUT/helios_gemm_splitk.txt" 2>&1
  python3 bench/torch/gemm.py --shapes "$KSHAPES" --layouts tn --dtypes f16 >"$OUT/torch_gemm_splitk.json"
  python3 bench/merge_gemm.py --helios "$OUT/helios_gemm_splitk.json" --torch "$OUT/torch_gemm_splitk.json" \
    --out "$OUT/gemm_splitk.json" | tee -a "$OUT/summary.txt"
fi

if has sweep; then
  echo "== coop GEMM tiling sweep at 4096^3 (timing only, warm clocks)"
  HELIOS_COOP_CHECK=$PWD/.dev/bin/helios-coop-check timeout 300 bash bench/h100/run.sh "$OUT/sweep" --no-checks \
    --warmup-ms 300 2>&1 | tail -30
fi

if has explore; then
  echo "== coop GEMM candidates off the menus (helios-coop-check --explore): checked, then timed at 4096^3"
  # EXPLORE_FLAGS: e.g. "--only-explored --no-checks --rasters 0" (coopmat2 pipelines take seconds each to build)
  HELIOS_COOP_CHECK=$PWD/.dev/bin/helios-coop-check timeout 420 bash bench/h100/run.sh "$OUT/explore" --explore \
    --seed 1 --warmup-ms 300 ${EXPLORE_FLAGS:-} 2>&1 | grep -E "FAIL|ERROR|sweep|fastest|exit" | tail -120
fi

if has dispatch; then
  echo "== 1000 small dispatches: graph vs one submit per dispatch"
  helios-bench dispatch --count 1000 --repeat 5 --json "$OUT/helios_dispatch.json"
fi
tar czf "$FINAL/results.tgz" -C "$OUT" .
cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null
ls -la "$OUT" "$FINAL"
