#!/usr/bin/env bash
# Runs a command under an emulated Intel or AMD GPU: Debian's ANV or RADV with Mesa's no-op DRM shim
# preloaded (built by third_party/mesa-shims.sh). Pipelines compile with the vendor's real compiler;
# submissions execute nothing, so only device queries and pipeline creation are meaningful.
# Usage: tools/vendor-env.sh DEVICE -- command [args...]
#   DEVICE: dg2 mtl tgl lnl bmg (Intel, ANV)  navi31 gfx1150 navi21 navi10 (AMD, RADV)
#   tools/vendor-env.sh --list   prints the devices
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INTEL=(dg2 mtl tgl lnl bmg)
AMD=(navi31 gfx1150 navi21 navi10)
usage() { echo "usage: $0 DEVICE -- command [args...]   (DEVICE: ${INTEL[*]} ${AMD[*]})" >&2; exit 2; }

[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then printf '%s\n' "${INTEL[@]}" "${AMD[@]}"; exit 0; fi
dev=$1; shift
[ $# -ge 2 ] && [ "$1" = -- ] || usage
shift

SHIMS=$("$ROOT/third_party/mesa-shims.sh" 2>/dev/null) || {
  echo "$0: the Mesa DRM shims are missing and could not be built (run third_party/mesa-shims.sh)" >&2; exit 1; }
ICD_DIR=/usr/share/vulkan/icd.d
vendor=""
for d in "${INTEL[@]}"; do [ "$d" = "$dev" ] && vendor=intel; done
for d in "${AMD[@]}"; do [ "$d" = "$dev" ] && vendor=amd; done
case "$vendor" in
  intel)
    export LD_PRELOAD=$SHIMS/libintel_noop_drm_shim.so${LD_PRELOAD:+:$LD_PRELOAD}
    export INTEL_STUB_GPU_PLATFORM=$dev
    icd=$ICD_DIR/intel_icd.json ;;
  amd)
    export LD_PRELOAD=$SHIMS/libamdgpu_noop_drm_shim.so${LD_PRELOAD:+:$LD_PRELOAD}
    export AMDGPU_GPU_ID=$dev
    icd=$ICD_DIR/radeon_icd.json ;;
  *) echo "$0: unknown device '$dev'" >&2; usage ;;
esac
[ -f "$icd" ] || { echo "$0: $icd is missing (install mesa-vulkan-drivers)" >&2; exit 1; }
# One ICD only, so the emulated GPU is the only device (VK_ICD_FILENAMES for older loaders).
export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
# The shims print one line per unhandled ioctl; the stub's own noise is not the command's output.
export DRM_SHIM_DEBUG=${DRM_SHIM_DEBUG:-0}
unset HELIOS_DEVICE
exec "$@"
