#!/usr/bin/env bash
# Cooperative-matrix GEMM device check on an NVIDIA H100 (or any Vulkan device with VK_KHR_cooperative_matrix):
# numerics of every tiling/variant/epilogue vs a float64 reference, odd shapes through the policy, bit-identical
# repeats, timing of every tiling at 4096^3 and a few shapes, registers/spills per pipeline. Takes ~1-2 minutes.
#
#   bench/h100/run.sh [OUT_DIR] [extra helios-coop-check flags...]
#
# Binary: $HELIOS_COOP_CHECK if set, else build-coop/ or build/ (tools/helios_coop_check/helios-coop-check);
# built with `cmake --build <dir> --target helios-coop-check` when missing and cmake is available.
# Vulkan loader: .gl/*.deb are unpacked when present (device machines without libvulkan), and the NVIDIA ICD
# under /usr/local/nvidia is used when the loader finds no driver. Extra shared libraries (e.g. libfmt) may be
# placed next to the binary; they are put on LD_LIBRARY_PATH.
# Output: OUT_DIR/coop_check.json (report), OUT_DIR/coop_check.log (console). Exit status of the check.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-${OUT:-$root/build-coop/h100}}"
shift || true
mkdir -p "$out"

bin="${HELIOS_COOP_CHECK:-}"
if [[ -z "$bin" ]]; then
  for d in build-coop build; do
    if [[ -x "$root/$d/tools/helios_coop_check/helios-coop-check" ]]; then bin="$root/$d/tools/helios_coop_check/helios-coop-check"; break; fi
  done
fi
if [[ -z "$bin" ]] && command -v cmake >/dev/null; then
  cmake -S "$root" -B "$root/build-coop" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$root/build-coop" --target helios-coop-check -j"$(nproc)" &&
    bin="$root/build-coop/tools/helios_coop_check/helios-coop-check"
fi
[[ -x "$bin" ]] || { echo "run.sh: helios-coop-check not found (set HELIOS_COOP_CHECK)"; exit 2; }

if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && compgen -G "$root/.gl/*.deb" >/dev/null; then
  for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [[ -z "${VK_DRIVER_FILES:-}" && -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] &&
   ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HELIOS_CACHE_DIR="${HELIOS_CACHE_DIR:-$out/pipeline-cache}"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$out/gpu.txt"
"$bin" --json "$out/coop_check.json" "$@" 2>&1 | tee "$out/coop_check.log"
status=${PIPESTATUS[0]}
echo "run.sh: exit $status, report in $out/coop_check.json"
exit "$status"
