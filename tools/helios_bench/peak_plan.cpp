#include "peak_plan.hpp"

#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_policy.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace helios::bench {

namespace {

using codegen::MmaType;

// The case's params checked against the device, or the reason it cannot run there.
std::string whyNot(const codegen::PeakMmaParams& p, const PeakDevice& d) {
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (!d.subgroupSize) return "no subgroup size the coop pipelines can require";
  if (p.invocations() > d.maxInvocations) return "more invocations than the device's workgroups hold";
  if ((p.ab == MmaType::F16 || p.c == MmaType::F16) && !d.f16) return "no shaderFloat16 / 16-bit storage";
  if (codegen::mmaTypeBytes(p.ab) == 1 && !d.int8) return "no shaderInt8";
  return "";
}

// Params for one listed configuration; `why` receives what keeps it from the kernel ("" when nothing).
codegen::PeakMmaParams paramsFor(const std::string& a, const std::string& b, const std::string& c,
                                 const std::string& result, bool saturating, std::string& why) {
  codegen::PeakMmaParams p;
  const auto ab = codegen::mmaTypeFromName(a), acc = codegen::mmaTypeFromName(c);
  if (a != b || c != result || !ab || !acc) {
    why = "component types " + a + " x " + b + " + " + c + " -> " + result + " are not measured";
    return p;
  }
  if (saturating) why = "saturating accumulation is not measured";
  p.ab = *ab;
  p.c = *acc;
  return p;
}

void withGrid(codegen::PeakMmaParams& p, uint32_t lanes) {
  std::tie(p.rows, p.cols) = peakAccumulatorGrid(p.M, p.N, codegen::mmaTypeBytes(p.c), lanes, p.lowered);
}

PeakCase khrCase(const probe::CoopMatrixProperty& prop, const PeakDevice& d) {
  std::string why;
  codegen::PeakMmaParams p = paramsFor(prop.A, prop.B, prop.C, prop.Result, prop.saturating, why);
  p.M = prop.M, p.N = prop.N, p.K = prop.K;
  p.subgroupSize = std::max(d.subgroupSize, 1u);
  p.subgroups = std::clamp(d.maxInvocations / p.subgroupSize, 1u, 4u);
  withGrid(p, p.subgroupSize);
  if (prop.scope != "subgroup") why = "scope " + prop.scope + " is not measured";
  return {p, "VK_KHR_cooperative_matrix", why.empty() ? whyNot(p, d) : why};
}

PeakCase nv2Case(const probe::FlexibleDimensionsProperty& prop, const PeakDevice& d) {
  std::string why;
  codegen::PeakMmaParams p = paramsFor(prop.A, prop.B, prop.C, prop.Result, prop.saturatingAccumulation, why);
  p.M = prop.MGranularity, p.N = prop.NGranularity, p.K = prop.KGranularity;
  p.workgroupScope = true;
  p.subgroupSize = std::max(d.subgroupSize, 1u);
  p.subgroups = std::max(prop.workgroupInvocations / p.subgroupSize, 1u);
  if (prop.workgroupInvocations % p.subgroupSize)
    why = std::to_string(prop.workgroupInvocations) + " invocations are not whole subgroups";
  withGrid(p, prop.workgroupInvocations);
  return {p, "VK_NV_cooperative_matrix2", why.empty() ? whyNot(p, d) : why};
}

} // namespace

PeakDevice peakDevice(vk::Context& ctx) {
  const vk::Device& dev = ctx.device();
  PeakDevice d;
  if (dev.features().coopMatrixKhr) d.khr = probe::queryCoopMatrixProperties(VK_NULL_HANDLE, dev.physical());
  if (dev.features().coopMatrixNv2) d.nv2 = probe::queryFlexibleDimensions(VK_NULL_HANDLE, dev.physical());
  d.subgroupSize = ops::coopSubgroupSize(dev.subgroupSize(), dev.minSubgroupSize(), dev.maxSubgroupSize(),
                                         dev.subgroupSizeControllable());
  d.maxInvocations = dev.limits().maxComputeWorkGroupInvocations;
  d.f16 = dev.features().shaderFloat16 && dev.features().storageBuffer16BitAccess;
  d.int8 = dev.features().shaderInt8;
  d.lowered = ops::deviceTuning(dev).gemm.coopEmulate.value;
  return d;
}

std::pair<uint32_t, uint32_t> peakAccumulatorGrid(uint32_t M, uint32_t N, uint32_t cBytes, uint32_t lanes,
                                                  bool lowered) {
  static constexpr std::array<std::pair<uint32_t, uint32_t>, 5> kGrids{
      {{4, 4}, {4, 2}, {2, 2}, {2, 1}, {1, 1}}};
  const uint64_t perAccumulator = uint64_t(M) * N * cBytes / std::max(lanes, 1u);
  for (const auto& [r, c] : kGrids)
    if ((!lowered || r * c <= 4) && r * c * perAccumulator <= kPeakAccumulatorLaneBytes) return {r, c};
  return {1, 1};
}

std::vector<PeakCase> planPeakMma(const PeakDevice& device) {
  std::vector<PeakCase> out;
  if (device.lowered) {
    for (MmaType c : {MmaType::F32, MmaType::F16}) {
      codegen::PeakMmaParams p{
          .M = device.lowered->m, .N = device.lowered->n, .K = device.lowered->k, .c = c};
      p.subgroupSize = std::max(device.subgroupSize, 1u);
      p.subgroups = 2;
      p.lowered = true;
      withGrid(p, p.subgroupSize);
      out.push_back({p, "lowered", whyNot(p, device)});
    }
    return out; // emulation stands in for whatever the device lists
  }
  for (const auto& prop : device.khr)
    out.push_back(khrCase(prop, device));
  for (const auto& prop : device.nv2)
    if (prop.scope == "workgroup") out.push_back(nv2Case(prop, device));
  return out;
}

uint32_t peakMmaWorkgroups(uint32_t computeUnits) {
  return 24 * std::max(computeUnits, 1u);
}

uint64_t peakCopyBytes(uint64_t maxStorageBufferRange, uint64_t deviceHeapBytes) {
  const uint64_t bytes = std::min({uint64_t(256) << 20, maxStorageBufferRange, deviceHeapBytes / 8});
  return std::max<uint64_t>(bytes / 16 * 16, 16);
}

uint32_t peakCopyWorkgroups(uint64_t vectors, uint32_t computeUnits) {
  const uint64_t needed = (vectors + 255) / 256;
  return static_cast<uint32_t>(std::clamp<uint64_t>(needed, 1, 64ull * std::max(computeUnits, 1u)));
}

} // namespace helios::bench
