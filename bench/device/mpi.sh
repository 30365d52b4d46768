#!/usr/bin/env bash
# Data-parallel helios-train under mpirun on the device machine (issue 33).
# Prepare here: bash bench/device/mpi-debs.sh (OpenMPI's .debs into .mpi/), STAGE="helios-train helios-probe"
# bash bench/device/stage.sh; carry .gl, .mpi, .dev, build/shaders and .deps/corpus. Then, on the device:
#   bash bench/device/mpi.sh                 (one GPU: correctness; several: also tokens/s per GPU)
#   [CHECK_STEPS=30] [STEPS=40] [GPT2_BATCH=8] [ACCUM=1] [RANKS="1 2 4 8"] [SKIP_CHECK=1] [SKIP_SCALING=1]
# Prints the launcher it uses; per check, the largest loss difference between 1 rank and 2 ranks sharing GPU 0
# (same global batch) with PASS/FAIL against the stated tolerance, and for char mixed whether 2 ranks with
# --overlap off match the overlapped default bit for bit; per rank count, gpt2-small mixed tokens/s in total
# and per GPU at a fixed per-GPU batch and the ratio to one GPU (the issue's goal: >= 0.9), with the exchange
# overlapped with the backward and after it, and the overlapped run's trace (exchange times vs backward end).
# Logs land in $OUT, run directories in $RUNS (/tmp/helios-mpi-runs).
set -uo pipefail
OUT=${OUT:-/tmp/helios-mpi}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
source "$(dirname "${BASH_SOURCE[0]}")/mpi-env.sh" # Debian's launcher and its settings: tmpi LIMIT N ...
GPUS=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')
[ "$GPUS" -ge 1 ] || GPUS=1
echo "launcher: $MPIRUN -> $(readlink -f "$MPIRUN") ($("$MPIRUN" --version 2>&1 | head -n 1)); not the PATH's" \
  "$(command -v mpirun || echo 'mpirun (none)')"
echo "helios-train's libmpi: $(ldd "$(command -v helios-train)" | awk '/libmpi\.so/ {print $3}'); GPUs: $GPUS"

# Largest |loss difference| over the steps two runs share (metrics.jsonl), and the verdict.
compare() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
la = [json.loads(l) for l in open(a + "/metrics.jsonl")]
lb = [json.loads(l) for l in open(b + "/metrics.jsonl")]
d = max(abs(x["loss"] - y["loss"]) for x, y in zip(la, lb) if x["loss"] is not None and y["loss"] is not None)
skips = sum(x["skipped"] != y["skipped"] for x, y in zip(la, lb))
ok = len(la) == len(lb) and d <= tol and skips == 0
print(f"  steps {len(la)}/{len(lb)}, max |loss diff| {d:.3g} (tolerance {tol:g}), skipped-step mismatches {skips}: "
      + ("PASS" if ok else "FAIL"))
PY
}

# 0 when two runs agree bit for bit on every step's loss, gradient norm, validation loss and skip.
same() {
  python3 - "$1" "$2" <<'PY'
import json, sys
la, lb = ([json.loads(l) for l in open(d + "/metrics.jsonl")] for d in sys.argv[1:3])
keys = ("loss", "grad_norm", "val_loss", "skipped", "loss_scale")
bad = [x["step"] for x, y in zip(la, lb) if any(x.get(k) != y.get(k) for k in keys)]
ok = len(la) == len(lb) and not bad
print(f"  steps {len(la)}/{len(lb)}, steps that differ: {bad[:5] or 'none'}: " + ("PASS" if ok else "FAIL"))
PY
}

# Medians over an --overlap-trace (steps after the 5th): when the first exchange began and the backward ended.
trace_summary() {
  python3 - "$1" <<'PY'
import json, sys, statistics as st
L = [json.loads(l) for l in open(sys.argv[1])][5:]
if not L: sys.exit(0)
m = lambda xs: f"{st.median(xs):.1f}"
print(f"    overlap trace ({len(L)} steps, {len(L[0]['ready_ms'])} cuts), median ms after the exchange began: "
      f"first cut exchanged {m([x['exchanged_ms'][0] for x in L])}, backward ended "
      f"{m([x['backward_end_ms'] for x in L])}, last cut exchanged {m([x['exchanged_ms'][-1] for x in L])}, "
      f"cuts exchanged before the backward ended {m([sum(e < x['backward_end_ms'] for e in x['exchanged_ms']) for x in L])}")
PY
}

# Run directories (checkpoints of gpt2-small are large) stay out of $OUT; logs go there.
RUNS=${RUNS:-/tmp/helios-mpi-runs}
mkdir -p "$RUNS"

if [ -z "${SKIP_CHECK:-}" ]; then
  # Correctness: 2 ranks sharing GPU 0 against 1 rank at the same global batch. HELIOS_DEVICE (nvidia) names
  # the device, so both ranks take it. Tolerance: f32 rounding of row sums in other orders, grown over the
  # steps (1e-4 on lavapipe after 8 steps); mixed adds f16 rounding of differently split GEMMs. Where the
  # fourth word is "exact", 2 ranks with the exchange after the backward (--overlap off) must also match the
  # overlapped default bit for bit.
  CHECK_STEPS=${CHECK_STEPS:-30}
  for cfg in "char f32 1e-3" "char mixed 5e-3 exact" "gpt2-small mixed 5e-3"; do
    set -- $cfg
    args=(--preset "$1" --precision "$2" --steps "$CHECK_STEPS" --eval-every 10 --eval-batches 2 --time-every 0
          --checkpoint-every 100000 --log-every 10 --check-every 10)
    [ "$1" = gpt2-small ] && args+=(--batch 8)
    [ "${4:-}" = exact ] && args+=(--bucket-mb 1) # several buckets even for the char model
    echo "== check: $1 $2, 1 rank vs 2 ranks on one GPU"
    timeout 600 helios-train "${args[@]}" --out "$RUNS/check-$1-$2-1" >"$OUT/check-$1-$2-1.txt" 2>&1 ||
      { echo "  1 rank failed:"; tail -n 5 "$OUT/check-$1-$2-1.txt"; continue; }
    tmpi 600 2 helios-train "${args[@]}" --out "$RUNS/check-$1-$2-2" >"$OUT/check-$1-$2-2.txt" 2>&1 ||
      { echo "  2 ranks failed:"; tail -n 15 "$OUT/check-$1-$2-2.txt"; continue; }
    compare "$RUNS/check-$1-$2-1" "$RUNS/check-$1-$2-2" "$3"
    grep -h "tok/s (last" "$OUT/check-$1-$2-1.txt" "$OUT/check-$1-$2-2.txt" | sed 's/^/  /'
    if [ "${4:-}" = exact ]; then
      echo "== check: $1 $2, 2 ranks, --overlap on vs off (bit-identical)"
      tmpi 600 2 helios-train "${args[@]}" --overlap off --out "$RUNS/check-$1-$2-2off" \
        >"$OUT/check-$1-$2-2off.txt" 2>&1 || { echo "  2 ranks failed:"; tail -n 15 "$OUT/check-$1-$2-2off.txt"; continue; }
      same "$RUNS/check-$1-$2-2" "$RUNS/check-$1-$2-2off"
    fi
  done
fi

if [ -z "${SKIP_SCALING:-}" ]; then
  # Scaling: GPT-2 small, mixed, GPT2_BATCH sequences per GPU, one GPU per rank (the slot picks by local rank).
  # Several ranks run twice: gradients exchanged overlapped with the backward (the default) and after it.
  unset HELIOS_DEVICE
  B=${GPT2_BATCH:-8} STEPS=${STEPS:-40}
  RANKS=${RANKS:-$(for n in 1 2 4 8; do [ "$n" -le "$GPUS" ] && echo -n "$n "; done)}
  base=""
  echo "== scaling: gpt2-small mixed, batch $B per GPU x ${ACCUM:-1} micro-batches per exchange, $STEPS steps"
  for n in $RANKS; do
    modes="on off"
    [ "$n" = 1 ] && modes=single
    for mode in $modes; do
      log="$OUT/scale-$n-$mode.txt"
      extra=()
      [ "$mode" != single ] && extra=(--overlap "$mode")
      [ "$mode" = on ] && extra+=(--overlap-trace "$OUT/scale-$n-trace.jsonl")
      tmpi 900 "$n" helios-train --preset gpt2-small --precision mixed --batch $((B * n)) --steps "$STEPS" \
        --grad-accum "${ACCUM:-1}" --eval-every 100000 --checkpoint-every 100000 --time-every 0 --log-every 10 --out "$RUNS/scale-$n-$mode" \
        "${extra[@]}" >"$log" 2>&1 || { echo "  $n ranks ($mode) failed:"; tail -n 15 "$log"; continue; }
      tok=$(grep "^done:" "$log" | grep -o '[0-9.]*[kM]\? tok/s (last' | awk '{print $1}')
      per=$(python3 -c "import sys; s=sys.argv[1]; m={'k':1e3,'M':1e6}.get(s[-1],1); v=float(s.rstrip('kM'))*m; print(v/$n)" "$tok")
      [ -z "$base" ] && base=$per
      ratio=$(python3 -c "print(f'{$per/$base:.3f}')")
      label=$([ "$mode" = single ] && echo "" || echo ", overlap $mode")
      echo "  ranks $n$label: $tok tok/s total, $(printf '%.0f' "$per") tok/s per GPU, $ratio x one GPU"
      [ "$mode" = on ] && trace_summary "$OUT/scale-$n-trace.jsonl"
    done
  done
fi
