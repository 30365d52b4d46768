#!/usr/bin/env bash
# Training throughput and peak memory of an open model's shape, Helios beside PyTorch in one device call
# (issue 41's bf16 and 45's whole step): a random-weight transformers checkpoint of each CONFIGS entry (the
# published config.json values, bench/torch/hf_train.py), trained by helios-train --init-from at --batch x
# --seq-len tokens per step in each Helios precision of HELIOS_MODES, and by PyTorch (hf_train.py: bf16
# parameters, and autocast over f32 parameters; eager and torch.compile). Helios' tokens/s is the median step
# time over the second half of its steps (metrics.jsonl); its peak memory is nvidia-smi's largest used figure
# during the run (the process alone holds the GPU) and the trainer's own bytes_allocated.
# Stage first: STAGE="helios-train helios-probe" bash bench/device/stage.sh; carry .gl .mpi .dev .deps/corpus.
#   HELIOS_COMMIT=<sha> [CONFIGS=qwen2.5-0.5b] [BATCH=8] [SEQ=1024] [STEPS=24] \
#     [HELIOS_MODES="bf16 bf16-params mixed"] [TORCH_MODES=bf16,amp-bf16] [COMPILE=1] bash bench/device/open-train.sh
# Writes $OUT/open-train.json (bench/results format) and prints one line per run last.
set -uo pipefail
OUT=${OUT:-/tmp/helios-open-train}
WORK=${WORK:-/tmp/helios-open-train-work}
mkdir -p "$OUT" "$WORK"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
CONFIGS=${CONFIGS:-qwen2.5-0.5b} BATCH=${BATCH:-8} SEQ=${SEQ:-1024} STEPS=${STEPS:-24}
HELIOS_MODES=${HELIOS_MODES:-bf16 bf16-params mixed} TORCH_MODES=${TORCH_MODES:-bf16,amp-bf16}

# name -> helios-train precision flags
flags() {
  case $1 in
  bf16) echo "--precision bf16" ;;
  bf16-params) echo "--precision bf16 --param-dtype bf16" ;;
  mixed) echo "--precision mixed" ;;
  f32) echo "--precision f32" ;;
  *) echo "unknown Helios mode $1" >&2 && return 1 ;;
  esac
}

for cfg in ${CONFIGS//,/ }; do
  dir=$WORK/$cfg
  python3 - "$cfg" "$dir" <<'PY' || { echo "$cfg: could not write the checkpoint"; continue; }
import sys, torch
sys.path.insert(0, "bench/torch")
import hf_train
name, out = sys.argv[1], sys.argv[2]
model = hf_train.make_model(name, torch.bfloat16)
model.save_pretrained(out)
print(f"{name}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters -> {out}")
PY
  for mode in $HELIOS_MODES; do
    run=$WORK/$cfg-$mode
    rm -rf "$run"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$run.mem" &
    smi=$!
    # shellcheck disable=SC2046
    timeout 240 helios-train --init-from "$dir" $(flags "$mode") --batch "$BATCH" --seq-len "$SEQ" \
      --steps "$STEPS" --warmup 2 --lr 1e-5 --eval-every 0 --checkpoint-every 100000 --keep 1 \
      --log-every 4 --time-every 0 --out "$run" >"$run.log" 2>&1
    echo "$cfg helios $mode: rc $?"
    kill $smi 2>/dev/null
    wait $smi 2>/dev/null
  done
  python3 bench/torch/hf_train.py --configs "$cfg" --modes "$TORCH_MODES" --batch "$BATCH" --seq "$SEQ" \
    --json "$WORK/$cfg-torch.json" >"$WORK/$cfg-torch.log" 2>&1 || echo "$cfg: hf_train.py eager failed"
  if [ "${COMPILE:-1}" = 1 ]; then
    python3 bench/torch/hf_train.py --configs "$cfg" --modes "$TORCH_MODES" --batch "$BATCH" --seq "$SEQ" \
      --compile --json "$WORK/$cfg-torch-compile.json" >"$WORK/$cfg-torch-compile.log" 2>&1 ||
      echo "$cfg: hf_train.py --compile failed"
  fi
done

python3 - "$WORK" "$OUT/open-train.json" "$CONFIGS" "$HELIOS_MODES" "$BATCH" "$SEQ" <<'PY'
import datetime, json, os, statistics, subprocess, sys
work, out, configs, modes, batch, seq = sys.argv[1:7]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip().split(", ")
meta = {"device": gpu[0], "driver": "NVIDIA " + gpu[-1], "commit": os.environ.get("HELIOS_COMMIT", "unknown"),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
rows = []
for cfg in configs.split(","):
    for mode in modes.split():
        run = os.path.join(work, f"{cfg}-{mode}")
        row = {"config": cfg, "stack": "helios", "mode": mode, "batch": int(batch), "seq": int(seq)}
        try:
            recs = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
            steps = [r for r in recs if "loss" in r and "ms" in r]
            ms = statistics.median(r["ms"] for r in steps[len(steps) // 2:])
            row.update(ms_per_step=ms, tokens_per_s=int(batch) * int(seq) / ms * 1000,
                       first_loss=steps[0]["loss"], last_loss=steps[-1]["loss"],
                       bytes_allocated=max(r.get("bytes_allocated", 0) for r in steps))
            mem = [int(x) for x in open(run + ".mem").read().split() if x.isdigit()]
            row["peak_mem_gib_nvidia_smi"] = max(mem) / 1024 if mem else None
        except (OSError, ValueError, IndexError) as e:
            row["error"] = f"{type(e).__name__}: {e}; log tail: " + " | ".join(
                open(run + ".log").read().splitlines()[-4:]) if os.path.exists(run + ".log") else str(e)
        rows.append(row)
    for suffix, compiled in (("torch", False), ("torch-compile", True)):
        path = os.path.join(work, f"{cfg}-{suffix}.json")
        if not os.path.exists(path):
            continue
        for r in json.load(open(path)).get("results", []):
            rows.append({"config": cfg, "stack": "torch.compile" if compiled else "torch", **r})
json.dump({"benchmark": "open-train", "meta": meta, "results": rows}, open(out, "w"), indent=1)
for r in rows:
    tps = r.get("tokens_per_s")
    mem = r.get("peak_mem_gib_nvidia_smi", r.get("peak_mem_gib"))
    print(f"{r['config']:14} {r['stack']:13} {r['mode']:12} " +
          (f"{tps / 1e3:8.1f}K tok/s  peak {mem:.2f} GiB" if tps and mem else r.get("error", "?")))
PY
