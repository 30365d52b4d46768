#!/usr/bin/env bash
# The GEMM planner (engine/ops/gemm_plan, issue #44) on the GPU: every benchmark and training GEMM shape
# dispatches the same kernel as the baseline build and runs no slower. helios-bench gemm (f16 and bf16, nn,
# nt and tn), baseline and new alternating ROUNDS times; then per row the kernel each build named (must be
# equal) and new/base of the median times. Prints a summary last.
# With COOP_CHECK=1 (default), first helios-coop-check --quick --no-timing (the checks' policy fields and the
# self-test read the device's Tuning record since planner2): its last line is printed before the summary.
# Run from the repository root on the device machine. Carry: .gl, .dev (bash bench/device/stage.sh with
# STAGE="helios-probe helios-bench helios-coop-check"), build-base/dev (the baseline's stripped helios-bench
# and its libraries, staged the same way from a build of main). Writes under $OUT.
#   ROUNDS (default 3), SHAPES (MxNxK list), SLOWER (ratio counted as slower, default 1.05)
set -uo pipefail
OUT=${OUT:-/tmp/helios-gemm-planner}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
COOP_SUMMARY="coop-check: skipped"
if [ "${COOP_CHECK:-1}" = 1 ] && [ -x .dev/bin/helios-coop-check ]; then
  timeout 300 .dev/bin/helios-coop-check --quick --no-timing --seed 1 --json "$OUT/coop-check.json" \
    >"$OUT/coop-check.txt" 2>&1
  COOP_SUMMARY="coop-check: exit $? ($(tail -1 "$OUT/coop-check.txt"))"
fi
SHAPES=${SHAPES:-4096x4096x4096,8192x8192x8192,1000x1000x1000,511x513x257,16384x2304x768,16384x768x768,16384x3072x768,16384x768x3072,16384x50304x768,8192x1152x896,8192x896x896,8192x4864x896,8192x896x4864,8192x151936x896,8192x6144x2048,8192x2048x8192}
for round in $(seq 1 "${ROUNDS:-3}"); do
  for side in base new; do
    bin=.dev/bin/helios-bench
    [ "$side" = base ] && bin=build-base/dev/helios-bench
    for dtype in f16 bf16; do
      LD_LIBRARY_PATH=$(dirname "$bin"):$LD_LIBRARY_PATH $bin gemm --kernel auto --dtype $dtype --out f32 \
        --shapes "$SHAPES" --layouts nn,nt,tn --warmup 3 --repeat 10 --label "$side" \
        --json "$OUT/gemm_${side}_${dtype}_$round.json" >"$OUT/gemm_${side}_${dtype}_$round.txt" 2>&1
      echo "gemm $side $dtype round $round: exit $?"
    done
  done
done
echo "$COOP_SUMMARY"
python3 - "$OUT" "${SLOWER:-1.05}" <<'EOF'
import glob, json, statistics, sys
out, slower = sys.argv[1], float(sys.argv[2])
rows = {}  # (dtype, M, N, K, layout) -> side -> {"us": [...], "kernel": set()}
for path in glob.glob(f"{out}/gemm_*_*_*.json"):
    side, dtype = path.split("/")[-1].split("_")[1:3]
    for r in json.load(open(path)).get("results", []):
        key = (dtype, r["M"], r["N"], r["K"], r["layout"])
        e = rows.setdefault(key, {}).setdefault(side, {"us": [], "kernel": set(), "ok": True})
        if "us" in r: e["us"].append(r["us"])
        e["kernel"].add(r.get("kernel_name", r.get("error", "?")))
        e["ok"] &= r.get("ok", False)
same = differ = slow = wrong = 0
ratios = []
for key in sorted(rows):
    b, n = rows[key].get("base"), rows[key].get("new")
    if not b or not n or not b["us"] or not n["us"]:
        print("missing", key); differ += 1; continue
    ratio = statistics.median(n["us"]) / statistics.median(b["us"])
    ratios.append(ratio)
    if b["kernel"] != n["kernel"]:
        differ += 1; print("kernel differs", key, sorted(b["kernel"]), "->", sorted(n["kernel"]))
    else:
        same += 1
    if ratio > slower:
        slow += 1; print(f"slower {ratio:.3f}", key, sorted(n["kernel"]))
    if not n["ok"]: wrong += 1; print("WRONG", key)
geo = statistics.geometric_mean(ratios) if ratios else float("nan")
print(f"SUMMARY gemm planner: {len(rows)} rows, kernels same {same}, differ {differ}; "
      f"new/base median time geomean {geo:.3f}, max {max(ratios, default=float('nan')):.3f}, "
      f"{slow} over {slower}; wrong results {wrong}")
EOF
