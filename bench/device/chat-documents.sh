#!/usr/bin/env bash
# On the GPU host: sequence packing's document masks on the H200's coop attention passes (KHR, and the NV
# coopmat2 row-ops variants lavapipe cannot run) against float64, the packed GPT and the chat-data tests on
# the GPU, then the masked passes timed beside plain causal ones (f16 q/k/v, forward and forward+backward).
# Stage and carry (from the repository root here):
#   STAGE="helios-bench test_attention test_model test_train" bash bench/device/stage.sh; bash bench/device/mpi-debs.sh
#   carry: .gl .dev .mpi build/shaders          run: bash bench/device/chat-documents.sh
# Prints one line per test binary (exit status, Catch2's totals), the timing table, and a last summary line.
set -uo pipefail
OUT=${OUT:-/tmp/helios-chat}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
fails=0
check() { # name, then the command
  local name=$1
  shift
  timeout 180 "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && fails=$((fails + 1))
  echo "$name: exit $rc $(grep -E 'test cases|All tests passed' "$OUT/$name.log" | tail -n 1)"
  [ $rc -ne 0 ] && grep -B2 -A12 -m3 'FAILED' "$OUT/$name.log" | head -n 60
}
check attention-documents test_attention "[documents]"
check attention-coop test_attention "[attention][coop]"
check gpt-pack test_model "[pack]"
check train-chat test_train "[chat]"
echo "== document masks against causal (coop, f16 q/k/v; docsN: causal inside documents of N tokens)"
timeout 180 helios-bench attention --kernel coop --qkv f16 --shapes 8x16x2048x64,8x16x2048x128 \
  --masks causal,docs1024,docs256 --modes fwd,fwdbwd --json "$OUT/attention-documents.json" 2>&1 |
  grep -E '^attention' | tee "$OUT/bench.txt"
bad=$(python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['results']
print(sum(1 for x in r if not x.get('ok')))" "$OUT/attention-documents.json" 2>/dev/null || echo '?')
echo "summary: $fails failing test binaries; $bad timed rows over tolerance or failed; results in $OUT"
