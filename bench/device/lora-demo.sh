#!/usr/bin/env bash
# On the GPU host: the LoRA demo (examples/lora-demo/run-demo.sh: a Llama-architecture model pretrained on the
# default corpus as numbered ChatML turns, exported as a Hugging Face directory, LoRA-tuned on two-digit
# additions, the adapter exported for PEFT, the held-out questions answered through helios-train sample --chat
# --prompts) at a larger size than lavapipe's, with a LoRA checkpoint every $EVERY steps (default 2000); then
#   1. every checkpoint's held-out accuracy (how many steps the adapters need for 90%), for rank 16 (the demo
#      run) and, with RANK64=1 (the default), rank 64 (a second LoRA run over the same base and chats);
#   2. transformers + PEFT on the exported base and rank-16 adapter: greedy generate on the held-out questions
#      with the chat template, every answer compared with Helios' (bench/device/lora-demo-peft.py).
# Stage first: STAGE="helios-train helios-probe" bench/device/stage.sh. Carry .gl, .mpi
# (bench/device/mpi-debs.sh), .dev and .deps/corpus. About 5 minutes, at most 10 (this model's step time on
# the H200 is not measured yet; RANK64=0 leaves the second run out, SIZE sets smaller budgets).
#   [SIZE="--layers 4 ..."] [EVERY=2000] [RANK64=1] bash bench/device/lora-demo.sh
# Work goes to $WORK (default /tmp/helios-lora-demo); the demo's summary, answers and logs, the PEFT comparison,
# the scores by step and at the end lora-demo-gpu.json (all of them) are copied into $OUT as each is written
# when the device call sets it. The last line is the summary.
set -uo pipefail
WORK=${WORK:-/tmp/helios-lora-demo}
EVERY=${EVERY:-2000} RANK64=${RANK64:-1}
mkdir -p "$WORK"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
export HELIOS_CORPUS=$PWD/.deps/corpus/kjv.txt
SIZE=${SIZE:---layers 4 --dim 256 --heads 8 --kv-heads 4 --hidden 768 --seq-len 128 --pretrain-steps 4000
  --pretrain-batch 32 --pretrain-lr 2e-3 --lora-rank 16 --lora-alpha 32 --lora-steps 6000 --lora-batch 64
  --lora-lr 3e-3 --train 6000 --heldout 400}
demo=$WORK/demo
# shellcheck disable=SC2086 # SIZE is a list of options
examples/lora-demo/run-demo.sh --out "$demo" --helios "$(command -v helios-train)" $SIZE \
  --lora-checkpoint-every "$EVERY"
demo_status=$?
keep() { # copies what exists into $OUT as soon as it is there (a call cut short by its limit keeps it)
  if [ -n "${OUT:-}" ]; then for f in "$@"; do [ -f "$f" ] && cp "$f" "$OUT/"; done; fi
}
keep "$demo/summary.json" "$demo/answers.jsonl" "$demo/lora.log" "$demo/pretrain.log"
python3 bench/device/lora-demo-peft.py --demo "$demo"
peft_status=$?
keep "$demo/peft.json" "$demo/peft-answers.jsonl"

# Rank 64 over the same base and chats, with the rank-16 run's other options (demo-args.json).
opts=$(python3 -c "
import json; a = json.load(open('$demo/demo-args.json'))
print(a['lora_steps'], a['lora_batch'], a['seq_len'], a['lora_lr'])")
read -r steps batch seq lr <<<"$opts"
if [ "$RANK64" = 1 ]; then
  helios-train --init-from "$demo/base-hf" --lora-rank 64 --lora-alpha 128 --chat-data "$demo/chats/train.jsonl" \
    --eval-data "$demo/chats/heldout.jsonl" --steps "$steps" --batch "$batch" --seq-len "$seq" --lr "$lr" \
    --warmup 20 --eval-every 500 --log-every 500 --checkpoint-every "$EVERY" --keep 1000 --overwrite \
    --out "$WORK/lora-r64" >"$WORK/lora-r64.log" 2>&1 \
    || echo "rank-64 run failed: $WORK/lora-r64.log"
fi

# Every checkpoint of both runs, scored on the held-out questions.
: >"$WORK/by-step.tsv"
for run in "$demo/lora-run" "$WORK/lora-r64"; do
  rank=$([[ $run == */lora-r64 ]] && echo 64 || echo 16)
  for ck in "$run"/checkpoints/step-*; do
    [ -d "$ck" ] || continue
    step=$((10#${ck##*step-}))
    line=$(python3 examples/lora-demo/evaluate.py --heldout "$demo/chats/heldout.jsonl" --run "$ck" \
      --helios "$(command -v helios-train)" 2>/dev/null | tail -1)
    printf '%s\t%s\t%s\n' "$rank" "$step" "$line" | tee -a "$WORK/by-step.tsv"
    keep "$WORK/by-step.tsv"
  done
done

python3 - "$WORK" "${OUT:-}" <<'PY'
import json, os, re, shutil, sys
work, out = sys.argv[1], sys.argv[2]
demo = os.path.join(work, "demo")
load = lambda p: json.load(open(p)) if os.path.exists(p) else {}
s, p = load(os.path.join(demo, "summary.json")), load(os.path.join(demo, "peft.json"))
by_step = []
for line in open(os.path.join(work, "by-step.tsv")):
    rank, step, text = line.rstrip("\n").split("\t")
    m = re.search(r"accuracy ([0-9.]+) \((\d+) of (\d+)", text)
    by_step.append({"rank": int(rank), "step": int(step), "accuracy": float(m.group(1)) if m else None,
                    "exact": int(m.group(2)) if m else None, "questions": int(m.group(3)) if m else None})
first = {r: min((b["step"] for b in by_step if b["rank"] == r and (b["accuracy"] or 0) >= 0.9), default=None)
         for r in (16, 64)}
doc = {"meta": s.get("meta", {}), "demo": s, "peft": p, "accuracy_by_step": by_step,
       "first_step_at_90_percent": {str(k): v for k, v in first.items()}}
path = os.path.join(work, "lora-demo-gpu.json")
json.dump(doc, open(path, "w"), indent=1)
if out:
    shutil.copy(path, out)
h = s.get("heldout", {})
print(f"summary: {s.get('device', '?')}: Helios held-out {h.get('exact', '?')}/{h.get('questions', '?')} "
      f"({'PASS' if s.get('passed') else 'FAIL'}) after {s.get('options', {}).get('lora_steps', '?')} LoRA steps; "
      f"first checkpoint at >= 90%: rank 16 step {first[16]}, rank 64 step {first[64]}; "
      f"PEFT agrees on {p.get('agree', '?')}/{p.get('questions', '?')}; {s.get('total_seconds', 0):.0f} s demo")
PY
[ $demo_status -eq 0 ] && [ $peft_status -eq 0 ]
