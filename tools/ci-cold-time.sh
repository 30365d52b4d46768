#!/usr/bin/env bash
# Times a genuinely cold `.ci/run` (issue #43: at most 45 min on a 2-core machine). A fresh clone of this
# repository's HEAD goes into SCRATCH, and HOME and XDG_CACHE_HOME point at an empty directory there, so
# nothing built before is found: no ~/.cache/helios (SPIRV-Tools, glslang and Mesa's DRM shims are built
# again), no Helios pipeline cache, no Mesa shader cache; ccache is off. The Debian packages the bootstrap
# installs stay as they are (the machine's part, not the clone's). Prints the phases (each bootstrap step,
# the build, the tests) and ctest's slowest entries; the whole log stays in SCRATCH/ci.log.
# Usage: tools/ci-cold-time.sh [SCRATCH]   (default /tmp/helios-ci-cold, emptied first). Run it on a quiet
# machine: other work on the two cores is measured too.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=${1:-/tmp/helios-ci-cold}
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH/home" || exit 1
git clone -q --no-hardlinks "$ROOT" "$SCRATCH/clone" && git -C "$SCRATCH/clone" checkout -q "$(git -C "$ROOT" rev-parse HEAD)" || exit 1

export HOME=$SCRATCH/home XDG_CACHE_HOME=$SCRATCH/home/.cache CCACHE_DISABLE=1
unset HELIOS_CACHE HELIOS_CACHE_DIR HELIOS_DEPS HELIOS_BUILD_DIR MESA_SHADER_CACHE_DIR MESA_SHADER_CACHE_DISABLE \
  CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER JOBS
start=$EPOCHSECONDS
(cd "$SCRATCH/clone" && ./.ci/run) 2>&1 | while IFS= read -r line; do
  printf '%6d %s\n' $((EPOCHSECONDS - start)) "$line"
done >"$SCRATCH/ci.log"
status=${PIPESTATUS[0]}
total=$((EPOCHSECONDS - start))

mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
at() { grep -m1 -E "$1" "$SCRATCH/ci.log" | awk '{ print $1 }'; } # seconds at the first line matching
boot_end=$(at '\[bootstrap\] done' || true)
tests_start=$(at '^ *[0-9]+ Test project' || true)
echo "cold .ci/run of $(git -C "$ROOT" rev-parse --short HEAD): $(mmss "$total") (exit status $status; log $SCRATCH/ci.log)"
echo "  bootstrap steps (seconds since the start):"
grep -E '^ *[0-9]+ \[bootstrap\]' "$SCRATCH/ci.log" | sed 's/^/    /'
[ -n "$boot_end" ] && echo "  bootstrap: $(mmss "$boot_end")"
[ -n "$boot_end" ] && [ -n "$tests_start" ] && echo "  build: $(mmss $((tests_start - boot_end)))"
[ -n "$tests_start" ] && echo "  tests (ctest, the coop summary, the vendor tables): $(mmss $((total - tests_start)))"
echo "  slowest ctest entries:"
# ctest's lines: " 3/94 Test #335: NAME (may hold spaces) ....   Passed    0.02 sec"
sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: (.*[^ .]) [ .]*(Passed|\*\*\*[A-Za-z]+).* ([0-9.]+) sec.*$/\3\t\1/p' \
  "$SCRATCH/clone/build/ctest.log" 2>/dev/null | sort -rn | head -n 15 | awk -F'\t' '{ printf "    %7.1f s  %s\n", $1, $2 }'
grep -E 'tests passed|tests failed' "$SCRATCH/clone/build/ctest.log" 2>/dev/null | tail -n 1 | sed 's/^/  /'
exit "$status"
