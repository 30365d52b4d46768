#include "engine/tuning/defaults.hpp"

#include <algorithm>

namespace helios::tuning {

uint64_t defaultFillWorkgroups(uint32_t computeUnits) {
  // At most one unit in 11 left without a workgroup (one workgroup per unit, not the units' occupancy).
  return std::max<uint64_t>(1, computeUnits - computeUnits / 11);
}

Tuning defaultTuning(const DeviceFacts& facts) {
  Tuning t; // the member initialisers are the device-independent defaults (tuning.hpp)
  t.key = facts.key;
  t.gemm.fillWorkgroups.value = defaultFillWorkgroups(facts.computeUnits);
  // The subgroup size, coop shape and tilings stay 0 / unset here: ops derives them from the same facts
  // (coopRegisterPlan, probe::bestF16F32, the tiling menus) unless a file or override sets them.
  return t;
}

} // namespace helios::tuning
