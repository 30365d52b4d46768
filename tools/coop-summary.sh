#!/usr/bin/env bash
# Totals the JUnit reports of the coop-emulated ctest entries (tests/CMakeLists.txt,
# helios_coop_emulated_tests): how many coop test cases ran lowered, and fails when any was skipped or none
# ran (no report at all: a filtered run without these entries). Usage: tools/coop-summary.sh [build dir]
set -euo pipefail
DIR=${1:-${HELIOS_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build}}/coop-emulated
shopt -s nullglob
reports=("$DIR"/*.xml)
sum() { # attribute name -> its total over every report's <testsuite>
  cat "${reports[@]}" | grep -o "<testsuite [^>]*" | grep -o " $1=\"[0-9]*\"" | grep -o "[0-9]*" |
    awk '{ s += $1 } END { print s + 0 }'
}
if [ ${#reports[@]} -eq 0 ]; then
  echo "coop emulated: no coop-emulated entry ran"
  exit 0
fi
tests=$(sum tests) skipped=$(sum skipped) failures=$(( $(sum failures) + $(sum errors) ))
echo "coop emulated: ${tests} test cases executed lowered in ${#reports[@]} runs, ${skipped} skipped, ${failures} failed"
[ "$tests" -gt 0 ] && [ "$skipped" -eq 0 ] && [ "$failures" -eq 0 ]
