#!/usr/bin/env bash
# Issue 46 on the device machine: one training job on an NVIDIA GPU rank beside a lavapipe (CPU) rank, the
# char model (mixed precision, the preset's 64 x 256 tokens per step), shares chosen by measurement.
# Prepare here: bash bench/device/lavapipe-pack.sh (.lvp), bash bench/device/mpi-debs.sh (.mpi),
#   STAGE="helios-train helios-probe" bash bench/device/stage.sh (.dev); carry .gl .mpi .lvp .dev
#   build/shaders .deps/corpus. On the device: bash bench/device/hetero.sh  [STEPS=300] [FORCED_STEPS=6]
# Runs, each printing its share lines (the log's), steady tokens/s (median step time over the last half of
# the steps), its ratio to the GPU alone and how far its losses stray from the GPU alone's (the same global
# batch: within mixed precision's tolerance, whatever each rank's kernels):
#   1. the GPU alone (one process);
#   2. GPU + lavapipe, --share auto: lavapipe starts at one sequence, is measured and left out with the
#      warning; PASS when the job's steady tokens/s is >= 0.97x the GPU alone's; the balancing overhead (the
#      wall time its first steps cost beyond the GPU alone's);
#   3. the same with --slow-ranks keep: lavapipe kept at its smallest share, what even one sequence costs;
#   4. a forced 1:1 split (--share 1,1): each rank's busy and exchange-wait times show the GPU waiting;
#   5. with two or more GPUs: two GPUs even, one capped at a quarter (--share 3,1), and measured.
# Logs and run directories land in $OUT (/tmp/helios-hetero). Lavapipe is unpacked into $LAVAPIPE_PREFIX
# (/tmp/helios-lavapipe), not /: only the libraries this system lacks are exposed, to helios-train alone.
set -uo pipefail
OUT=${OUT:-/tmp/helios-hetero}
rm -rf "$OUT" && mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi-env.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
STEPS=${STEPS:-300} FORCED_STEPS=${FORCED_STEPS:-6}

source "$(dirname "${BASH_SOURCE[0]}")/lavapipe-env.sh" # lavapipe from .lvp beside NVIDIA: lvpenv CMD...
GPUS=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')

ARGS=(--preset char --precision mixed --eval-every 100000 --checkpoint-every 100000 --time-every 0 --log-every 50)
# name steps [mpirun ranks, 0: none] helios-train arguments...: the run's log in $OUT/name.txt.
run() {
  local name=$1 steps=$2 ranks=$3
  shift 3
  echo "== $name"
  if [ "$ranks" = 0 ]; then
    lvpenv timeout 300 helios-train "${ARGS[@]}" --steps "$steps" --out "$OUT/$name" "$@" >"$OUT/$name.txt" 2>&1
  else
    lvpenv tmpi 300 "$ranks" helios-train "${ARGS[@]}" --steps "$steps" --out "$OUT/$name" "$@" >"$OUT/$name.txt" 2>&1
  fi || { echo "  failed:"; tail -n 15 "$OUT/$name.txt"; return 1; }
  grep -hE "data parallel:|^    rank [0-9]|shares .* -> |warning:|^ranks " "$OUT/$name.txt" | sed 's/^ */  /'
}
# Steady tokens/s of a run (median step over the last half), its ratio to the GPU alone, and for measured
# runs the overhead: wall time up to the step the shares settled beyond the GPU alone's to that step.
summary() {
  python3 - "$OUT" "$@" <<'PY'
import json, statistics as st, sys
out, name, mode = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
load = lambda n: [json.loads(l) for l in open(f"{out}/{n}/metrics.jsonl")]
tok = 64 * 256
def steady(m):
    late = [x["ms"] for x in m[len(m) // 2:]]
    return tok / (st.median(late) * 1e-3)
m, alone = load(name), load("gpu-alone")
rate, base = steady(m), steady(alone)
line = f"  {name}: {rate / 1e3:.1f}k tok/s steady, {rate / base:.3f}x the GPU alone ({base / 1e3:.1f}k)"
measured = [x for x in m if "ranks" in x]
if mode == "pass":
    line += f": {'PASS' if rate >= 0.97 * base else 'FAIL'} (>= 0.97x)"
    settled = measured[-1]["step"] + 2 if measured else 1 # the last decision, then its settling steps
    if settled <= min(len(m), len(alone)):
        extra = m[settled - 1]["elapsed_s"] - alone[settled - 1]["elapsed_s"]
        line += (f"; balancing overhead {extra:.2f} s: its first {settled} steps (lavapipe's start-up, the"
                 f" measured steps, the change) beyond the GPU alone's")
if name != "gpu-alone": # the same model as the GPU alone's, within mixed precision's tolerance (mpi.sh's)
    d = max(abs(x["loss"] - y["loss"]) for x, y in zip(m, alone))
    line += f"\n    losses against the GPU alone's over {min(len(m), len(alone))} steps: max |diff| {d:.2g}"
    line += f" ({'PASS' if d <= 5e-3 else 'FAIL'}, tolerance 5e-3)"
if measured:
    for r in measured[-1]["ranks"]:
        line += (f"\n    step {measured[-1]['step']}: rank {r['rank']} {r['device']}: {r['rows']} sequences,"
                 f" {r['busy_ms']:.1f} ms busy, {r['wait_ms']:.1f} ms exchange wait, {r['tok_s'] / 1e3:.1f}k tok/s")
print(line)
PY
}

run gpu-alone "$STEPS" 0 && summary gpu-alone
run measured "$STEPS" 2 --device nvidia,llvmpipe --share auto && summary measured pass
run measured-keep 30 2 --device nvidia,llvmpipe --share auto --slow-ranks keep && summary measured-keep
run forced-even "$FORCED_STEPS" 2 --device nvidia,llvmpipe --share 1,1 && summary forced-even
if [ "$GPUS" -ge 2 ]; then
  run two-gpus-even "$STEPS" 2 --device nvidia,nvidia --share even && summary two-gpus-even
  run two-gpus-capped "$STEPS" 2 --device nvidia,nvidia --share 3,1 && summary two-gpus-capped
  run two-gpus-measured "$STEPS" 2 --device nvidia,nvidia --share auto && summary two-gpus-measured
fi
