#!/usr/bin/env bash
# On the GPU host, after the layering change (issue #44 item 3): the live device list and --device /
# HELIOS_DEVICE selection now in engine/vk (device_probe), and every non-GEMM family's push constants
# declared from its header's struct, checked where lavapipe cannot: the native coop attention passes
# (AttentionCoopPush) and the peak MMA kernel (PeakMmaPush) run on real cooperative matrices. The SPIR-V is
# byte-identical to before (helios-spv hashes), so this is a correctness check, not a measurement.
#   Stage first (here): STAGE="helios-probe test_probe test_vk_runtime test_softmax test_norm test_elementwise
#     test_reduce test_column_sum test_cross_entropy test_embedding test_adamw test_slice3d test_peak
#     test_attention" bash bench/device/stage.sh
#   Carry: .gl .dev build/shaders        Run: bash bench/device/layers.sh
# Prints one line per check and "layers: N of M checks passed" last.
set -uo pipefail
OUT=${OUT:-/tmp/helios-layers}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
pass=0 total=0
check() { # name command...: runs it, keeps its output in $OUT/NAME.txt, prints one line
  local name=$1
  shift
  total=$((total + 1))
  if "$@" >"$OUT/$name.txt" 2>&1; then
    pass=$((pass + 1))
    echo "ok    $name"
  else
    echo "FAIL  $name (rc $?, $OUT/$name.txt: $(tail -n 1 "$OUT/$name.txt"))"
  fi
}
# The live list through vk::probeDevices: every device without a selector, one with HELIOS_DEVICE (setup.sh
# sets "nvidia"), --device overriding it, and a selector that matches nothing refused in one sentence.
DEV=$HELIOS_DEVICE
check probe_all sh -c 'unset HELIOS_DEVICE; helios-probe --json | grep -c "\"vendor_id\"" | grep -qv "^0$"'
check probe_env sh -c 'helios-probe --json | grep -c "\"vendor_id\"" | grep -qx 1 && helios-probe | grep -qi "$0"' "$DEV"
check probe_flag sh -c 'HELIOS_DEVICE=no-such-device helios-probe --device "$0" | grep -qi "$0"' "$DEV"
check probe_refuses sh -c 'HELIOS_DEVICE=no-such-device helios-probe 2>&1 >/dev/null | grep -q "No Vulkan device name contains \"no-such-device\""'
check test_probe test_probe
check test_device_select test_vk_runtime "*select*"
for t in softmax norm elementwise reduce column_sum cross_entropy embedding adamw slice3d peak attention; do
  check "test_$t" timeout 600 "test_$t"
done
echo "layers: $pass of $total checks passed"
