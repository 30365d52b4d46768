#!/usr/bin/env bash
# The data side of a real run on the device: a folder of text (the KJV corpus cut into 16 files) -> a
# SentencePiece BPE tokenizer -> token shards -> training on the shards -> a resumed continuation -> a sample.
# Carry .gl, .dev (bench/device/stage.sh, STAGE="helios-train"), build/shaders and .deps/corpus.
#   [VOCAB=8192] [STEPS=200] [PRESET=gpt2-small] [BATCH=8] [PRECISION=mixed] bash bench/device/data-flow.sh
# Prints each stage's summary line (tokenizer time, prepare tokens/s, training tok/s and losses, the resume,
# the sample); everything else lands in $FINAL/data-flow.tgz.
set -uo pipefail
FINAL=${OUT:-/tmp/helios-final}
OUT=/tmp/helios-data-flow
rm -rf "$OUT" && mkdir -p "$OUT/texts" "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
VOCAB=${VOCAB:-8192} STEPS=${STEPS:-200} PRESET=${PRESET:-gpt2-small} BATCH=${BATCH:-8} PRECISION=${PRECISION:-mixed}
split -n l/16 -d -a 2 --additional-suffix=.txt .deps/corpus/kjv.txt "$OUT/texts/part"
run() { # name, then the command line: its output in $OUT/name.txt, its last lines shown
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  "$@" >"$OUT/$name.txt" 2>&1
  echo "exit $?, $((SECONDS - start)) s"; tail -n "${TAIL:-3}" "$OUT/$name.txt"
}
run tokenizer helios-train tokenizer --data "$OUT/texts" --vocab "$VOCAB" --type bpe --quiet --out "$OUT/tok.model"
run prepare helios-train prepare --data "$OUT/texts/*.txt" --tokenizer "$OUT/tok.model" --out "$OUT/shards"
half=$((STEPS / 2))
common=(--preset "$PRESET" --vocab 0 --batch "$BATCH" --precision "$PRECISION" --data-dir "$OUT/shards"
  --eval-every "$half" --log-every 20 --out "$OUT/run")
TAIL=8 run train helios-train "${common[@]}" --steps "$half"
TAIL=8 run resume helios-train --resume "$OUT/run" --steps "$STEPS" --log-every 20
run sample helios-train sample --resume "$OUT/run" --prompt "And God said" --tokens 60 --temperature 0.8
ls -la "$OUT/run/checkpoints/latest" "$OUT/run/checkpoints/"*/ >"$OUT/checkpoints.txt" 2>&1
tar -C /tmp -czf "$FINAL/data-flow.tgz" --exclude='*.bin' --exclude='*.safetensors' helios-data-flow
