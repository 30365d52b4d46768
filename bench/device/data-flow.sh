#!/usr/bin/env bash
# The whole data path on the device, in one call: a folder of text (the KJV corpus cut into 16 files) ->
# tokenizers -> token shards -> training -> a resumed continuation -> sampling (KV cache, and a full-window
# forward per token for comparison) -> Hugging Face export -> transformers: GPT2LMHeadModel's logits
# (bench/device/hf-check.py) and the exported tokenizer's ids (bench/device/hf-tokenizer-check.py).
#   GPT-2 BPE leg: merges trained on the first $BPE_FILES files by tests/text/gpt2_reference.py (OpenAI's
#     algorithm; Helios has no GPT-2 BPE trainer), then prepare, train, resume, sample, a short --pack run
#     (unfused attention, documents masked), export, both checks.
#   SentencePiece leg: helios-train tokenizer on the folder, prepare, a 2-step tiny run, export (tokenizer.model
#     only: LlamaTokenizer gave other ids on the H200, so no transformers class is named).
# Carry .gl, .dev (STAGE="helios-train helios-probe" bash bench/device/stage.sh), build/shaders and
# .deps/corpus; .mpi as well where helios-train links MPI (bench/device/mpi-debs.sh).
#   [STEPS=200] [PRESET=gpt2-small] [BATCH=8] [PRECISION=mixed] [MERGES=1500] [BPE_FILES=2] [VOCAB=8192]
#   [PACK_STEPS=20]
#   bash bench/device/data-flow.sh
# Prints one summary (also $OUT/data-flow.log); each stage's full output lands in $OUT/data-flow.tgz.
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
W=/tmp/helios-data-flow
rm -rf "$W" && mkdir -p "$W/texts" "$W/gpt2tok" "$FINAL"
exec > >(tee "$FINAL/data-flow.log") 2>&1
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
STEPS=${STEPS:-200} PRESET=${PRESET:-gpt2-small} BATCH=${BATCH:-8} PRECISION=${PRECISION:-mixed}
MERGES=${MERGES:-1500} BPE_FILES=${BPE_FILES:-2} VOCAB=${VOCAB:-8192}
FAILED=()
run() { # name, then the command line: its output in $W/name.txt, its last $TAIL lines shown
  local name=$1 rc start=$SECONDS
  shift
  echo "== $name: $*"
  timeout "${LIMIT:-120}" "$@" >"$W/$name.txt" 2>&1
  rc=$?
  echo "   exit $rc, $((SECONDS - start)) s"
  tail -n "${TAIL:-2}" "$W/$name.txt" | sed 's/^/   /'
  [ $rc -eq 0 ] || FAILED+=("$name")
  return $rc
}
split -n l/16 -d -a 2 --additional-suffix=.txt .deps/corpus/kjv.txt "$W/texts/part"

# GPT-2 BPE leg.
python3 -c 'import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/*.txt"))[: int(sys.argv[2])]
json.dump([open(f, encoding="utf-8").read() for f in files], open(sys.argv[3], "w"))' \
  "$W/texts" "$BPE_FILES" "$W/bpe-corpus.json"
run gpt2-tokenizer python3 tests/text/gpt2_reference.py train "$W/bpe-corpus.json" "$MERGES" "$W/gpt2tok"
tokens=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$W/gpt2tok/encoder.json")
vocab=$(((tokens + 127) / 128 * 128)) # the model's vocabulary padded to a multiple of 128
echo "   GPT-2 BPE: $tokens tokens (model vocabulary $vocab)"
run prepare helios-train prepare --data "$W/texts/*.txt" --tokenizer "$W/gpt2tok" --out "$W/shards"
half=$((STEPS / 2))
common=(--preset "$PRESET" --vocab "$vocab" --batch "$BATCH" --precision "$PRECISION" --data-dir "$W/shards"
  --log-every 20)
LIMIT=150 TAIL=4 run train helios-train "${common[@]}" --eval-every "$half" --out "$W/run" --steps "$half"
LIMIT=150 TAIL=4 run resume helios-train --resume "$W/run" --steps "$STEPS" --log-every 20
for mode in kv full; do
  flags=(--top-p 0.9 --temperature 0.8)
  [ $mode = full ] && flags+=(--no-kv-cache)
  TAIL=3 run "sample-$mode" helios-train sample --resume "$W/run" --prompt "And God said" --tokens 128 \
    --seed 1 "${flags[@]}"
done
# Sequence packing on the same shards: the unfused attention (GEMM, softmax with the document mask, GEMM).
LIMIT=90 TAIL=2 run pack helios-train "${common[@]}" --pack --attention unfused --eval-every 0 \
  --out "$W/pack-run" --steps "${PACK_STEPS:-20}"
TAIL=3 run export helios-train export --format hf --run "$W/run" --out "$W/hf" --reference-logits 256
TAIL=12 run hf-logits python3 bench/device/hf-check.py "$W/hf"
TAIL=40 run hf-tokenizer python3 bench/device/hf-tokenizer-check.py "$W/hf"

# SentencePiece leg.
run sp-tokenizer helios-train tokenizer --data "$W/texts" --vocab "$VOCAB" --type bpe --quiet --out "$W/sp.model"
run sp-prepare helios-train prepare --data "$W/texts/*.txt" --tokenizer "$W/sp.model" --out "$W/sp-shards"
run sp-train helios-train --preset tiny --vocab 0 --data-dir "$W/sp-shards" --steps 2 --eval-every 0 --out "$W/sp-run"
run sp-export helios-train export --format hf --run "$W/sp-run" --out "$W/sp-hf" --reference-logits 16

echo "== summary"
for f in prepare sp-prepare sp-tokenizer train resume pack; do
  grep -ah "^100.0%.*tok/s\|^done:\|^wrote .*sp.model" "$W/$f.txt" 2>/dev/null | tail -n 1 | sed "s/^/   $f: /"
done
grep -aoh "sampled [0-9].*" "$W"/sample-*.txt | sed 's/^/   /'
python3 - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
def load(name):
    try:
        text = open(f"{w}/{name}.txt").read()
        return json.loads(text[text.index("{"): text.rindex("}") + 1])
    except (OSError, ValueError):
        return None
logits, tok, sp = load("hf-logits"), load("hf-tokenizer"), None
if logits:
    print(f"   transformers logits: max |diff| {logits['max_abs_diff']:.3g} (tolerance {logits['tolerance']}), "
          f"argmax agreement {logits['argmax_agreement']:.4f}, ok {logits['ok']}")
for leg, r in (("GPT-2 BPE", tok), ("SentencePiece", sp)):
    if r:
        for name, t in r["tokenizers"].items():
            state = t.get("skipped") or t.get("error") or (f"{'same ids' if t['ok'] else 'DIFFERENT ids'} on {r['strings']} "
                                         f"strings ({t['class']}, eos {t['eos_token_id']})")
            print(f"   {leg} tokenizer in transformers, {name}: {state}")
EOF
ls -la "$W/run/checkpoints/latest" "$W/run/checkpoints/"*/ "$W/hf" >"$W/files.txt" 2>&1
tar -C /tmp -czf "$FINAL/data-flow.tgz" --exclude='*.bin' --exclude='*.safetensors' --exclude='*.npy' \
  --exclude='*.json.gz' --exclude=texts --exclude=bpe-corpus.json helios-data-flow
echo "failed stages: ${FAILED[*]:-none}; $SECONDS s in all"
[ ${#FAILED[@]} -eq 0 ]
