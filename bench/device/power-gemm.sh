#!/usr/bin/env bash
# Power draw and SM clock while each side multiplies under sustained load: nvidia-smi samples the GPU every
# 50 ms while helios-bench (once per variant) and then torch.matmul (cuBLAS) each time one GEMM after BUSY_MS
# of back-to-back calls. Run from the repository root on the device machine with .gl and .dev carried
# (bench/device/stage.sh):
#   HELIOS_COMMIT=<sha> [SHAPE=4096x4096x4096] [LAYOUT=nn] [OUTT=f32] [BUSY_MS=2000] \
#     bash bench/device/power-gemm.sh "label=VAR=v[,VAR=v]" ...      (an entry "base=" runs with no variable)
# Result: $OUT/power-gemm.json (bench/power_gemm.py: per phase, TFLOP/s, median SM clock and power, FLOP per
# SM clock, TFLOP/s per kW, the throttle reasons seen) and its summary lines on stdout.
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
WORK=$(mktemp -d /tmp/helios-power.XXXX)
mkdir -p "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
SHAPE=${SHAPE:-4096x4096x4096} LAYOUT=${LAYOUT:-nn} OUTT=${OUTT:-f32} BUSY_MS=${BUSY_MS:-2000}
now() { date '+%Y/%m/%d %H:%M:%S.%3N'; } # nvidia-smi's timestamps: local time
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 50 >"$WORK/smi.csv" &
smi=$!
sleep 1
: >"$WORK/phases.txt"
for entry in "$@"; do
  label=${entry%%=*}; envs=${entry#*=}
  start=$(now)
  env ${envs//,/ } helios-bench gemm --dtype f16 --out "$OUTT" --shapes "$SHAPE" --layouts "$LAYOUT" \
    --warmup-ms "$BUSY_MS" --label "$label" --json "$WORK/helios_$label.json" >"$WORK/helios_$label.txt" 2>&1 ||
    tail -n 3 "$WORK/helios_$label.txt"
  printf '%s\t%s\t%s\t%s\n' "helios:$label" "$start" "$(now)" "$WORK/helios_$label.json" >>"$WORK/phases.txt"
  sleep 1
done
start=$(now)
python3 bench/torch/gemm.py --shapes "$SHAPE" --layouts "$LAYOUT" --dtypes f16 --outs "$OUTT" \
  --busy-ms "$BUSY_MS" >"$WORK/torch.json"
printf '%s\t%s\t%s\t%s\n' "cublas" "$start" "$(now)" "$WORK/torch.json" >>"$WORK/phases.txt"
sleep 0.5
kill "$smi"
python3 bench/power_gemm.py --phases "$WORK/phases.txt" --smi "$WORK/smi.csv" --busy-ms "$BUSY_MS" \
  --out "$FINAL/power-gemm.json"
