#!/usr/bin/env bash
# The LoRA demo end to end, sizes as arguments: a small Llama-architecture model pretrained by Helios on the
# default corpus (as numbered ChatML turns, make_corpus.py says why; a byte-level ChatML tokenizer,
# make_tokenizer.py), exported as a Hugging Face directory, LoRA-tuned on generated two-digit additions
# (make_chats.py), the adapter exported for PEFT, and the held-out questions answered greedily through
# `helios-train sample --chat --prompts` and scored (evaluate.py). Writes OUT/summary.json (sizes, steps,
# rank, loss curves, wall times, accuracy, device; summarize.py) and
# prints its short form last.
#
#   examples/lora-demo/run-demo.sh --out runs/lora-demo [--layers 2 --dim 128 --heads 4 --kv-heads 2
#       --hidden 384 --seq-len 128 --pretrain-steps 400 --pretrain-batch 8 --pretrain-lr 3e-3
#       --lora-rank 16 --lora-alpha 32 --lora-steps 900 --lora-batch 8 --lora-lr 5e-3
#       --train 3000 --heldout 200 --seed 1 --device SEL --helios build/bin/helios-train --corpus FILE
#       --precision f32 --min-accuracy 0.9 --lora-checkpoint-every 0 --addend N]
# A directory OUT that holds an earlier demo is replaced (its runs are moved aside by helios-train
# --overwrite, the generated files rewritten). Exit status 1 when the accuracy is below --min-accuracy.
# --lora-checkpoint-every N keeps a LoRA checkpoint every N steps (to score them: bench/device/lora-demo.sh);
# --addend N asks "What is A + N?" instead of adding two two-digit numbers (make_chats.py).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

out='' layers=2 dim=128 heads=4 kv_heads=2 hidden=384 seq_len=128
pretrain_steps=400 pretrain_batch=8 pretrain_lr=3e-3
lora_rank=16 lora_alpha=32 lora_steps=900 lora_batch=8 lora_lr=5e-3
train=3000 heldout=200 seed=1 device='' helios="$ROOT/build/bin/helios-train" corpus='' precision=f32
min_accuracy=0.9 lora_checkpoint_every=0 addend=''
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
while [[ $# -gt 0 ]]; do
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $# -ge 2 ]] || { echo "run-demo.sh: $1 needs a value (--help)" >&2; exit 2; }
  case $1 in
    --out) out=$2 ;; --layers) layers=$2 ;; --dim) dim=$2 ;; --heads) heads=$2 ;; --kv-heads) kv_heads=$2 ;;
    --hidden) hidden=$2 ;; --seq-len) seq_len=$2 ;; --pretrain-steps) pretrain_steps=$2 ;;
    --pretrain-batch) pretrain_batch=$2 ;; --pretrain-lr) pretrain_lr=$2 ;; --lora-rank) lora_rank=$2 ;;
    --lora-alpha) lora_alpha=$2 ;; --lora-steps) lora_steps=$2 ;; --lora-batch) lora_batch=$2 ;;
    --lora-lr) lora_lr=$2 ;; --train) train=$2 ;; --heldout) heldout=$2 ;; --seed) seed=$2 ;;
    --device) device=$2 ;; --helios) helios=$2 ;; --corpus) corpus=$2 ;; --precision) precision=$2 ;;
    --min-accuracy) min_accuracy=$2 ;; --lora-checkpoint-every) lora_checkpoint_every=$2 ;;
    --addend) addend=$2 ;;
    *) echo "run-demo.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -n $out ]] || { echo "run-demo.sh: --out DIR is required (--help)" >&2; exit 2; }
[[ -x $helios ]] || { echo "run-demo.sh: $helios is not an executable helios-train (--helios)" >&2; exit 2; }
if [[ -z $corpus ]]; then # the default corpus, as helios-train finds it
  corpus=${HELIOS_CORPUS:-$(cd "$(dirname "$helios")/.." && pwd)/share/helios/corpus/kjv.txt}
fi
[[ -f $corpus ]] || { echo "run-demo.sh: no corpus at $corpus (--corpus, or run third_party/bootstrap.sh)" >&2; exit 2; }
dev=(); [[ -n $device ]] && dev=(--device "$device")
keep=(); [[ $lora_checkpoint_every != 0 ]] && keep=(--checkpoint-every "$lora_checkpoint_every" --keep 1000)
add=(); [[ -n $addend ]] && add=(--addend "$addend")
mkdir -p "$out"
phase() { # phase NAME command...: runs it with its output in OUT/NAME.log, and times it
  local name=$1 t0; shift
  t0=$(date +%s.%N)
  echo "== $name: $*" >&2
  if ! "$@" >"$out/$name.log" 2>&1; then
    tail -20 "$out/$name.log" >&2
    echo "run-demo.sh: $name failed (log: $out/$name.log)" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$name" "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" >>"$out/phases.tsv"
  tail -2 "$out/$name.log" >&2
}

rm -f "$out/phases.tsv"
cat >"$out/demo-args.json" <<JSON
{"layers": $layers, "dim": $dim, "heads": $heads, "kv_heads": $kv_heads, "hidden": $hidden, "seq_len": $seq_len,
 "pretrain_steps": $pretrain_steps, "pretrain_batch": $pretrain_batch, "pretrain_lr": $pretrain_lr,
 "lora_rank": $lora_rank, "lora_alpha": $lora_alpha, "lora_steps": $lora_steps, "lora_batch": $lora_batch,
 "lora_lr": $lora_lr, "train_questions": $train, "heldout_questions": $heldout, "seed": $seed,
 "precision": "$precision", "addend": ${addend:-null}}
JSON
cat >"$out/model.json" <<JSON
{"model": "gpt", "gpt": {"vocab": 0, "context": $seq_len, "layers": $layers, "dim": $dim, "heads": $heads,
 "kv_heads": $kv_heads, "head_dim": $((dim / heads)), "hidden": $hidden, "norm": "rmsnorm", "norm_eps": 1e-5,
 "mlp": "swiglu", "rope": true, "rope_theta": 10000, "bias": "none", "tied_head": true, "family": "llama"}}
JSON
phase tokenizer python3 "$HERE/make_tokenizer.py" "$out/tokenizer"
phase corpus python3 "$HERE/make_corpus.py" --corpus "$corpus" --out "$out/pretrain.txt"
phase prepare "$helios" prepare --data "$out/pretrain.txt" --tokenizer "$out/tokenizer" --out "$out/shards"
phase pretrain "$helios" --config "$out/model.json" --data-dir "$out/shards" --precision "$precision" \
  --steps "$pretrain_steps" --batch "$pretrain_batch" --seq-len "$seq_len" --lr "$pretrain_lr" \
  --eval-every 0 --log-every 50 --seed "$seed" --overwrite --out "$out/base-run" "${dev[@]}"
rm -rf "$out/base-hf" "$out/adapter"
phase export-hf "$helios" export --format hf --run "$out/base-run" --out "$out/base-hf"
phase chats python3 "$HERE/make_chats.py" --out "$out/chats" --train "$train" --heldout "$heldout" --seed "$seed" \
  "${add[@]}"
phase lora "$helios" --init-from "$out/base-hf" --lora-rank "$lora_rank" --lora-alpha "$lora_alpha" \
  --precision "$precision" --chat-data "$out/chats/train.jsonl" --eval-data "$out/chats/heldout.jsonl" \
  --steps "$lora_steps" --batch "$lora_batch" --seq-len "$seq_len" --lr "$lora_lr" --warmup 20 \
  --eval-every 100 --eval-batches 4 --log-every 50 --seed "$seed" --overwrite --out "$out/lora-run" "${dev[@]}" \
  "${keep[@]}"
phase export-peft "$helios" export --format peft --run "$out/lora-run" --out "$out/adapter"
phase evaluate python3 "$HERE/evaluate.py" --heldout "$out/chats/heldout.jsonl" --run "$out/lora-run" \
  --helios "$helios" --answers-out "$out/answers.jsonl" --report "$out/score.json" "${dev[@]}"

probe=$(dirname "$helios")/helios-probe # names the device's driver in summary.json, where it is there
[[ -x $probe ]] || probe=''
python3 "$HERE/summarize.py" --out "$out" --min-accuracy "$min_accuracy" ${probe:+--probe "$probe"}
