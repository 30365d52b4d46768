#!/usr/bin/env bash
# Peak memory and throughput of training before and after the step memory plan, beside PyTorch eager AMP, in
# one device call (about 4-5 minutes on the H100). Carry .gl, .dev (this branch: bench/device/stage.sh),
# BASE_DIR (a staged helios-train of the base commit: its bin/helios-train) and .deps/corpus.
#   bash bench/device/memory.sh BASE_DIR            e.g. bash bench/device/memory.sh .dev-base
# Prints one line per run (peak in use / reserved as helios-train reports them, tokens/s of the "done:"
# summary, barriers per step, final loss) and
# writes $FINAL/memory.txt and $FINAL/memory.tgz (every run's output and metrics). Runs use the default seed,
# so each is bit-identical run to run; the base and the planned run of a config should end on the same loss
# bits (the plan moves memory, not arithmetic): the summary says whether they do.
set -uo pipefail
BASE=${1:?usage: bench/device/memory.sh BASE_DIR (holding bin/helios-train of the base commit)}
BASE=$(cd "$BASE" && pwd)
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-memory
rm -rf "$OUT" && mkdir -p "$OUT" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
GPT2_STEPS=${GPT2_STEPS:-40} CHAR_STEPS=${CHAR_STEPS:-300}
common=(--precision mixed --eval-every 100000 --checkpoint-every 100000 --log-every 10)

# run NAME EXE PRESET STEPS [flags...]: one helios-train run, its output in $OUT/NAME.txt.
run() {
  local name=$1 exe=$2 preset=$3 steps=$4
  shift 4
  echo "== $name: $(basename "$(dirname "$(dirname "$exe")")")/helios-train --preset $preset $*"
  timeout 150 "$exe" --preset "$preset" --steps "$steps" "${common[@]}" --out "$OUT/$name" "$@" >"$OUT/$name.txt" 2>&1
  echo "   exit $?"
  grep -E "^memory|^done|max-memory|^per step|^phases" "$OUT/$name.txt" | sed 's/^/   /'
  tail -n 1 "$OUT/$name/metrics.jsonl" 2>/dev/null | python3 -c \
    'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print("   last loss", r.get("loss"))'
}

NEW=$PWD/.dev/bin/helios-train
echo "== what the plan expects (dry run, nothing trained)"
timeout 90 "$NEW" --preset gpt2-small --precision mixed --plan-only --out "$OUT/plan-only" 2>&1 | tail -n 11 | tee "$OUT/plan-only.txt"
run gpt2-base "$BASE/bin/helios-train" gpt2-small "$GPT2_STEPS"
run gpt2-planned "$NEW" gpt2-small "$GPT2_STEPS"
run gpt2-max22 "$NEW" gpt2-small "$GPT2_STEPS" --max-memory 22GiB
run gpt2-max8 "$NEW" gpt2-small "$GPT2_STEPS" --max-memory 8GiB
run char-base "$BASE/bin/helios-train" char "$CHAR_STEPS"
run char-planned "$NEW" char "$CHAR_STEPS"

echo "== PyTorch eager AMP (peak_mem_gib: torch.cuda.max_memory_allocated over the timed steps)"
timeout 120 python3 bench/torch/gpt_train.py --configs gpt2-small --modes amp --steps 5 --windows 3 \
  --json "$OUT/torch_gpt2.json" | tail -n 3
timeout 60 python3 bench/torch/gpt_train.py --configs char --vocab 63 --modes amp --steps 20 --windows 3 \
  --json "$OUT/torch_char.json" | tail -n 3

python3 - "$OUT" <<'PY' | tee "$OUT/memory.txt"
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def helios(name):
    t = (out / f"{name}.txt").read_text(errors="replace") if (out / f"{name}.txt").exists() else ""
    m = re.search(r"memory: peak (\S+ \S+) in use, (\S+ \S+) reserved", t)
    d = re.search(r"^done:.*?\| (\S+) tok/s", t, re.M)  # the summary, not a progress line
    b = re.search(r"^per step .*?(\d+) barriers", t, re.M)
    try:
        loss = json.loads((out / name / "metrics.jsonl").read_text().splitlines()[-1])["loss"]
    except Exception:
        loss = None
    return (m.group(1) if m else "-", m.group(2) if m else "-", d.group(1) if d else "-", loss,
            b.group(1) if b else "-")
print(f"{'run':<14} {'peak in use':>12} {'reserved':>12} {'tok/s':>10} {'barriers':>9} last loss")
res = {}
for name in ["gpt2-base", "gpt2-planned", "gpt2-max22", "gpt2-max8", "char-base", "char-planned"]:
    res[name] = helios(name)
    use, rsv, tok, loss, bar = res[name]
    print(f"{name:<14} {use:>12} {rsv:>12} {tok:>10} {bar:>9} {loss}")
for f in ["torch_gpt2.json", "torch_char.json"]:
    try:
        for r in json.loads((out / f).read_text())["results"]:
            print(f"torch-{r['config']:<8} {r['peak_mem_gib']:>8} GiB {'':>12} {r['tokens_per_s']:>10}")
    except Exception as e:
        print(f"{f}: {e}")
for cfg in ["gpt2", "char"]:
    a, b = res[f"{cfg}-base"][3], res[f"{cfg}-planned"][3]
    print(f"{cfg}: base and planned end on the same loss: {'yes' if a is not None and a == b else 'NO'} ({a} / {b})")
PY
tar czf "$FINAL/memory.tgz" -C "$OUT" --exclude='*.safetensors' .
cp "$OUT/memory.txt" "$FINAL/"
