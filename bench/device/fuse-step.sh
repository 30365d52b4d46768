#!/usr/bin/env bash
# GPT-2 small mixed, the non-GEMM step fusions on against off (GptConfig group_casts, norm_half_grads,
# residual_norms; bit-identical losses either way) in one call: the step census of each (helios-train
# --plan-only at the run's batch), sustained training throughput (runs alternated fused, unfused, fused,
# unfused so that clock drift hits both), the final losses side by side, and a per-kernel profile of each.
# Carry .gl, .dev (STAGE="helios-train helios-probe" bench/device/stage.sh), build/shaders, .deps/corpus.
#   [GPT2_BATCH=16] [STEPS=60] [ROUNDS=2] [HELIOS_COMMIT=<sha>] bash bench/device/fuse-step.sh
# Results: $OUT/fuse-step.tgz (runs, censuses, profiles, fuse-step.json); the summary is printed last.
# About 12 minutes on an H200 (2 x 2 runs of 60 steps, 2 dry runs, 2 profiles of 8 steps).
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-fuse
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
STEPS=${STEPS:-60} ROUNDS=${ROUNDS:-2}
batch=(); [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
echo '{"gpt": {}}' >"$OUT/fused.json"
echo '{"gpt": {"group_casts": false, "norm_half_grads": false, "residual_norms": false}}' >"$OUT/unfused.json"
common=(--preset gpt2-small --precision mixed "${batch[@]}")
for v in fused unfused; do
  echo "== census $v"
  timeout 300 helios-train "${common[@]}" --config "$OUT/$v.json" --plan-only --out "$OUT/plan-$v" --overwrite 2>&1 |
    sed -n '/training step (forward/,/evaluation:/p' >"$OUT/census-$v.txt"
  head -n 1 "$OUT/census-$v.txt"
done
for round in $(seq 1 "$ROUNDS"); do
  for v in fused unfused; do
    echo "== train $v, round $round"
    mkdir -p "$OUT/r$round"
    timeout 400 helios-train "${common[@]}" --config "$OUT/$v.json" --steps "$STEPS" --out "$OUT/r$round/gpt2-small_$v-mixed" \
      --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 | tail -n 3
  done
  python3 bench/merge_train.py --runs "$OUT/r$round" --out "$OUT/r$round/train.json" >/dev/null
done
for v in fused unfused; do
  echo "== profile $v"
  timeout 200 helios-train "${common[@]}" --config "$OUT/$v.json" --steps 8 --profile --out "$OUT/profile-$v" \
    --eval-every 100000 --checkpoint-every 100000 >"$OUT/profile-$v.txt" 2>&1
  grep -A24 "per-kernel GPU time" "$OUT/profile-$v.txt" | tee "$OUT/profile-$v-table.txt" >/dev/null
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.txt"
import json, re, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
def census(v):
    text = open(f"{out}/census-{v}.txt").read()
    m = re.search(r"(\d+) dispatches, (\d+) barriers", text)
    fam = {f: (int(d), int(b)) for f, d, b in re.findall(r"^\s+(\w+)\s+(\d+)\s+(\d+)\s+\d+\s", text, re.M)}
    return (int(m.group(1)), int(m.group(2))) if m else (None, None), fam
rates, losses = {"fused": [], "unfused": []}, {"fused": [], "unfused": []}
for r in range(1, rounds + 1):
    for row in json.load(open(f"{out}/r{r}/train.json"))["helios"]:
        v = row["config"].split("_")[1]
        rates[v].append(row["tokens_per_s"] or 0)
        losses[v].append(row["final_loss"])
result = {"census": {}, "tokens_per_s": rates, "final_loss": losses}
for v in ("fused", "unfused"):
    (d, b), fam = census(v)
    result["census"][v] = {"dispatches": d, "barriers": b, "families": fam}
json.dump(result, open(f"{out}/fuse-step.json", "w"), indent=1)
cf, cu = result["census"]["fused"], result["census"]["unfused"]
print("family                      unfused (disp/barr)   fused (disp/barr)")
for f in sorted(set(cf["families"]) | set(cu["families"]), key=lambda f: -cu["families"].get(f, (0, 0))[0]):
    u, g = cu["families"].get(f, (0, 0)), cf["families"].get(f, (0, 0))
    if u != g:
        print(f"{f:28} {u[0]:6} / {u[1]:<6}       {g[0]:6} / {g[1]:<6}")
print(f"step census: unfused {cu['dispatches']} dispatches / {cu['barriers']} barriers, "
      f"fused {cf['dispatches']} / {cf['barriers']}")
med = {v: statistics.median(x) if x else 0 for v, x in rates.items()}
print(f"gpt2-small mixed tokens/s (median of {rounds}): unfused {med['unfused']:.0f}, fused {med['fused']:.0f}"
      f" (x{med['fused'] / med['unfused'] if med['unfused'] else 0:.3f}); per round fused {rates['fused']}, unfused {rates['unfused']}")
print(f"final losses: fused {losses['fused']}, unfused {losses['unfused']} (identical bits expected)")
PY
tar czf "$FINAL/fuse-step.tgz" -C "$OUT" --exclude='*.safetensors' .
cp "$OUT/summary.txt" "$FINAL/fuse-summary.txt"
