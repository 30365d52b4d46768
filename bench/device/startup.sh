#!/usr/bin/env bash
# Start-up on the device: GPT-2 small (mixed precision) from a cold cache (fresh Helios and driver caches),
# then again warm, printing each run's per-step elapsed seconds from metrics.jsonl and the pipelines line.
# Carry .gl and .dev (bench/device/stage.sh; .dev/kjv.txt as the corpus). Usage: bash bench/device/startup.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=${HELIOS_CORPUS:-$PWD/.dev/kjv.txt}
CACHE=/tmp/startup-cache
rm -rf "$CACHE" && mkdir -p "$CACHE/nv"
export HELIOS_CACHE_DIR=$CACHE __GL_SHADER_DISK_CACHE_PATH=$CACHE/nv
for run in cold warm; do
  echo "== $run"
  start=$(date +%s%N)
  timeout 240 helios-train --preset ${PRESET:-gpt2-small} --precision mixed --steps ${STEPS:-40} --log-every 1 \
    --out /tmp/startup-$run --eval-every 100000 --checkpoint-every 100000 2>&1 | grep -E "start-up|phases|memory|coop_matmul|pipelines"
  echo "wall $(( ($(date +%s%N) - start) / 1000000 )) ms (process start to exit)"
  /usr/bin/env python3 - /tmp/startup-$run/metrics.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "elapsed_s" in r]
print("elapsed by step:", " ".join(f"{r['step']}:{r['elapsed_s']:.2f}" for r in rows[:12]), "...",
      f"{rows[-1]['step']}:{rows[-1]['elapsed_s']:.2f}")
dt = [b["elapsed_s"] - a["elapsed_s"] for a, b in zip(rows, rows[1:])]
print("step times (s):", " ".join(f"{d:.3f}" for d in dt[:16]))
PY
done
