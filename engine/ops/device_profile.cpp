#include "engine/ops/device_profile.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/tuning/values.hpp"

namespace helios::ops {

void lowerCoop(CoopDeviceInfo& info, const tuning::MatShape& s) {
  const uint32_t sg = info.subgroupSize;
  if ((s.m * s.k) % sg || (s.k * s.n) % sg || (s.m * s.n) % sg)
    throw std::invalid_argument("HELIOS_COOP_EMULATE=" + tuning::text(s) +
                                ": its matrices do not split evenly over the device's subgroups of " +
                                std::to_string(sg));
  info.coopMatrix = true;
  info.lowered = true;
  info.bf16 = true;        // the lowering holds bf16 as bits: no bf16 type or coop feature needed
  info.deviceScope = true; // lowered modules keep the GLSL450 memory model
  info.coopM = s.m, info.coopN = s.n, info.coopK = s.k;
  info.workgroupShapes.clear(); // no NV2 when lowered
  info.nv2Shapes.clear();
}

DeviceProfile profileFromCaps(const std::string& name, const probe::DeviceCaps& caps,
                              const tuning::Tuning& tuning) {
  DeviceProfile p{name, coopDeviceFromCaps(caps), {}, &tuning};
  const tuning::GemmTuning& g = tuning.gemm;
  if (!g.coop2.value) p.coop.workgroupShapes.clear();
  if (g.coopEmulate.value) {
    lowerCoop(p.coop, *g.coopEmulate.value);
    p.coop = withRegisterPlan(p.coop, caps.vendor_id, caps.min_subgroup_size, caps.max_subgroup_size);
  }
  p.limits.maxSharedBytes = caps.max_compute_shared_memory;
  if (caps.max_workgroup_invocations)
    p.limits.maxInvocations = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
  p.limits.subgroupSize = caps.subgroup_size;
  p.limits.targetWorkgroups = p.coop.computeUnits;
  return p;
}

} // namespace helios::ops
