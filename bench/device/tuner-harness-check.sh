#!/usr/bin/env bash
# The tuners' shared search harness (tools/helios_tune/search_harness) on the GPU, in one device call (about
# 5 minutes; give it the 600 s limit): lavapipe runs only the tiled GEMM candidates and the lowered attention
# passes, so here the coop GEMM candidates (subgroup and workgroup scope), the spill gate the driver reports
# and the attention search on real cooperative matrices go through it.
#  (a) test_tuner: the gates' planted candidates, the axes, the attention policy's choice, the harness' own
#      test (every gate by name);
#  (b) helios-tune on two coop GEMM shapes (NN, TN) and one causal attention shape, forward and backward,
#      with --compare: every search must evaluate candidates, and the before/after table must have its rows.
# Output under $OUT (default /tmp/helios-harness): check.log; the last lines are the summary.
# Stage here:
#   cmake --build build --target test_tuner helios-tune helios-probe &&
#   STAGE="test_tuner helios-tune helios-probe" bash bench/device/stage.sh && bash bench/device/mpi-debs.sh
# then carry .gl .dev .mpi and run from the repository root:
#   bash bench/device/tuner-harness-check.sh
set -uo pipefail
OUT=${OUT:-/tmp/helios-harness}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec > >(tee "$OUT/check.log") 2>&1
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== (a) test_tuner"
timeout 300 test_tuner --reporter compact 2>&1 | tail -n 25
tests_rc=${PIPESTATUS[0]}

echo "== (b) helios-tune: gemm nn/tn 2048x2048x2048, attention B2H8S1024D64 causal"
rm -f "$HELIOS_CACHE_DIR"/tuning-*.json
timeout 240 helios-tune --shapes gemm:nn:2048x2048x2048,gemm:tn:2048x2048x2048,attn:B2H8S1024D64c --budget 90 \
  --max-evals 24 --compare --compare-rounds 1 --out "$OUT/tuning.json" --json "$OUT/tune.json" 2>"$OUT/tune.err"
tune_rc=$?
tail -n 20 "$OUT/tune.err"
summary=$(python3 - "$OUT/tune.json" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no report ({e})"); sys.exit(0)
rows = j.get("results", [])
searched = [r for r in rows if r.get("evaluated", 0) > 0]
timed = [r for r in rows if r.get("default_us", 0) > 0]
rejected = sum(r.get("rejected", 0) for r in rows)
print(f"{len(rows)} searches, {len(searched)} with candidates evaluated, {len(timed)} with the policy's choice "
      f"timed, {rejected} candidates rejected in all; compare rows: {len(j.get('compare', {}).get('rows', []))} "
      f"(geomean {j.get('compare', {}).get('geomean', 0):.3f})")
EOF
)
echo "== summary"
echo "test_tuner: $([ "$tests_rc" = 0 ] && echo pass || echo "FAIL (rc $tests_rc)")"
echo "helios-tune: rc $tune_rc; $summary"
echo "total: $(( $(date +%s) - start )) s"
