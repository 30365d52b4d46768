#!/usr/bin/env bash
# GPT-2 small mixed, the non-GEMM step fusions on against off (GptConfig group_casts, norm_half_grads,
# residual_norms; bit-identical losses either way) in one call: the step census of each (helios-train
# --plan-only at the run's batch), sustained training throughput (runs alternated fused, unfused, fused,
# unfused so that clock drift hits both), the final losses side by side, and a per-kernel profile of each.
# Carry .gl, .dev (STAGE="helios-train helios-probe" bench/device/stage.sh), build/shaders, .deps/corpus and
# .mpi (bench/device/mpi-debs.sh) where helios-train links MPI.
#   [GPT2_BATCH=16] [STEPS=60] [ROUNDS=2] [HELIOS_COMMIT=<sha>] [BASE=.dev/base/helios-train]
#   bash bench/device/fuse-step.sh
# BASE: a stripped helios-train of the commit before the fusions (7c1300e), run as a third variant "base"
# (the unfused variant still has the two fusions without a switch: norm parameter gradients accumulated by
# the finish pass, dgamma and dbeta finished together).
# Results: $OUT/fuse-step.tgz (runs, censuses, profiles, fuse-step.json); the summary is printed last.
# About 8 minutes on an H200 (2 x 2 runs of 60 steps, 2 dry runs, 2 profiles of 8 steps, each with start-up).
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-fuse
mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
STEPS=${STEPS:-60} ROUNDS=${ROUNDS:-2}
batch=(); [ -n "${GPT2_BATCH:-}" ] && batch=(--batch "$GPT2_BATCH")
echo '{"gpt": {}}' >"$OUT/fused.json"
cp "$OUT/fused.json" "$OUT/base.json"
variants="fused unfused"; [ -n "${BASE:-}" ] && variants="fused unfused base"
exe() { if [ "$1" = base ]; then echo "$BASE"; else echo helios-train; fi; }
echo '{"gpt": {"group_casts": false, "norm_half_grads": false, "residual_norms": false}}' >"$OUT/unfused.json"
common=(--preset gpt2-small --precision mixed "${batch[@]}")
for v in $variants; do
  echo "== census $v"
  timeout 300 "$(exe $v)" "${common[@]}" --config "$OUT/$v.json" --plan-only --out "$OUT/plan-$v" --overwrite 2>&1 |
    sed -n '/training step (forward/,/evaluation:/p' >"$OUT/census-$v.txt"
  head -n 1 "$OUT/census-$v.txt"
done
for round in $(seq 1 "$ROUNDS"); do
  for v in $variants; do
    echo "== train $v, round $round"
    mkdir -p "$OUT/r$round"
    timeout 400 "$(exe $v)" "${common[@]}" --config "$OUT/$v.json" --steps "$STEPS" --out "$OUT/r$round/gpt2-small_$v-mixed" \
      --eval-every 100000 --checkpoint-every 100000 --log-every 10 2>&1 | tail -n 3
  done
  python3 bench/merge_train.py --runs "$OUT/r$round" --out "$OUT/r$round/train.json" >/dev/null
done
for v in $variants; do
  echo "== profile $v"
  timeout 200 "$(exe $v)" "${common[@]}" --config "$OUT/$v.json" --steps 8 --profile --out "$OUT/profile-$v" \
    --eval-every 100000 --checkpoint-every 100000 >"$OUT/profile-$v.txt" 2>&1
  grep -A24 "per-kernel GPU time" "$OUT/profile-$v.txt" | tee "$OUT/profile-$v-table.txt" >/dev/null
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.txt"
import json, os, re, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
def census(v):
    text = open(f"{out}/census-{v}.txt").read()
    m = re.search(r"(\d+) dispatches, (\d+) barriers", text)
    fam = {f: (int(d), int(b)) for f, d, b in re.findall(r"^\s+(\w+)\s+(\d+)\s+(\d+)\s+\d+\s", text, re.M)}
    return (int(m.group(1)), int(m.group(2))) if m else (None, None), fam
variants = [v for v in ("fused", "unfused", "base") if os.path.exists(f"{out}/census-{v}.txt")]
rates, losses = {v: [] for v in variants}, {v: [] for v in variants}
for r in range(1, rounds + 1):
    for row in json.load(open(f"{out}/r{r}/train.json"))["helios"]:
        v = row["config"].split("_")[1]
        rates[v].append(row["tokens_per_s"] or 0)
        losses[v].append(row["final_loss"])
result = {"census": {}, "tokens_per_s": rates, "final_loss": losses}
for v in variants:
    (d, b), fam = census(v)
    result["census"][v] = {"dispatches": d, "barriers": b, "families": fam}
json.dump(result, open(f"{out}/fuse-step.json", "w"), indent=1)
cf = result["census"]["fused"]
cu = result["census"]["base" if "base" in variants else "unfused"]  # the widest comparison available
print(f"family                      {'base' if 'base' in variants else 'unfused':7} (disp/barr)   fused (disp/barr)")
for f in sorted(set(cf["families"]) | set(cu["families"]), key=lambda f: -cu["families"].get(f, (0, 0))[0]):
    u, g = cu["families"].get(f, (0, 0)), cf["families"].get(f, (0, 0))
    if u != g:
        print(f"{f:28} {u[0]:6} / {u[1]:<6}       {g[0]:6} / {g[1]:<6}")
for v in variants:
    c = result["census"][v]
    print(f"step census {v}: {c['dispatches']} dispatches / {c['barriers']} barriers")
med = {v: statistics.median(x) if x else 0 for v, x in rates.items()}
for v in variants:
    print(f"gpt2-small mixed tokens/s {v}: median {med[v]:.0f} of {rates[v]}"
          f" (fused x{med['fused'] / med[v] if med[v] else 0:.3f})")
print("final losses: " + ", ".join(f"{v} {losses[v]}" for v in variants) + " (identical bits expected)")
PY
tar czf "$FINAL/fuse-step.tgz" -C "$OUT" --exclude='*.safetensors' .
cp "$OUT/summary.txt" "$FINAL/fuse-summary.txt"
