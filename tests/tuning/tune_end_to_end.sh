#!/usr/bin/env bash
# helios-tune on one small GEMM shape with a few seconds of budget writes the device's tuning file in a fresh
# cache directory; helios-probe --tuning then reports the shape's entry from the file, and helios-bench runs
# the shape on the tile the record chose. Usage: tune_end_to_end.sh BIN_DIR
set -euo pipefail
bin=$1
HELIOS_CACHE_DIR=$(mktemp -d)
export HELIOS_CACHE_DIR
trap 'rm -rf "$HELIOS_CACHE_DIR"' EXIT
shape=96x80x64
"$bin/helios-tune" --shapes "gemm:nn:$shape" --budget 6 --max-evals 8 --windows 2 --repeat 2 --warmup-ms 5 \
  --json "$HELIOS_CACHE_DIR/summary.json" >/dev/null
file=$(ls "$HELIOS_CACHE_DIR"/tuning-*.json)
python3 - "$file" "$HELIOS_CACHE_DIR/summary.json" <<'PY'
import json, sys
record, summary = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
shapes = record["fields"]["gemm.shapes"]
assert [s["shape"] for s in shapes] == ["nn:96x80x64"], shapes
r = summary["results"][0]
assert r["evaluated"] >= 1 and r["tuned_us"] > 0 and r["tuned_us"] <= r["default_us"], r
PY
"$bin/helios-probe" --tuning --json | python3 -c '
import json, sys
f = json.load(sys.stdin)["fields"]["gemm.shapes"]
assert f["source"] == "file" and f["value"][0]["shape"] == "nn:96x80x64", f'
# On coop devices the entry may keep the policy's coop kernel; on others it names the tiled tile.
tile=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fields"]["gemm.shapes"][0].get("tiled", ""))' "$file")
"$bin/helios-bench" gemm --shapes "$shape" --layouts nn --kernel auto --warmup 1 --repeat 1 --windows 1 --warmup-ms 1 \
  --json "$HELIOS_CACHE_DIR/bench.json" >/dev/null
python3 - "$HELIOS_CACHE_DIR/bench.json" "$tile" <<'PY'
import json, sys
doc, tile = json.load(open(sys.argv[1])), sys.argv[2]
kernels = [r["kernel_name"] for r in doc["results"]]
assert kernels, doc
if tile:
    assert all(("tiled " + tile) in k for k in kernels), (kernels, tile)
PY
# A corrupt file: one warning, the defaults, and the bench still runs.
echo '{"helios_tuning": 1, "key": ' >"$file"
out=$("$bin/helios-bench" gemm --shapes "$shape" --layouts nn --warmup 1 --repeat 1 --windows 1 --warmup-ms 1 2>&1 >/dev/null)
[ "$(grep -c 'tuning file' <<<"$out")" = 1 ] || { echo "expected one warning, got: $out"; exit 1; }
grep -q 'not valid JSON' <<<"$out"
echo ok
