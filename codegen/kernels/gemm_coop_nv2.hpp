#pragma once
// The workgroup-scope variant of the cooperative-matrix GEMM (VK_NV_cooperative_matrix2): GemmCoopParams
// with workgroupScope = true. Same bindings, push constants and dispatch grid as the subgroup kernel
// (gemm_coop.hpp); generateGemmCoop() picks the builder. BM, BN, BK must be multiples of the device's
// flexible-dimension granularity (coopM, coopN, coopK hold it) and the workgroup must have exactly the
// invocation count that granularity was listed for.
#include "codegen/kernels/gemm_coop.hpp"

namespace helios::codegen {

// One f16 x f16 -> f32 workgroup-scope entry of
// vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV.
struct WorkgroupCoopShape {
  uint32_t M = 0, N = 0, K = 0; // granularity
  uint32_t invocations = 0;     // the workgroup size it applies to
};

// The kernel's words; pushBytes receives the push-constant block's size.
std::vector<uint32_t> buildGemmCoopWorkgroup(const GemmCoopParams& params, uint32_t& pushBytes);

// Tilings for these shapes, preferred first (NN, f32 out, no epilogue).
std::vector<GemmCoopParams> gemmCoopWorkgroupTilings(const std::vector<WorkgroupCoopShape>& shapes,
                                                     uint32_t subgroupSize = 32);

// The H100's list (580 driver): 32x32x16 at 256 invocations, 32x16x16 at 128, 16x16x16 at 64 and 32.
std::vector<WorkgroupCoopShape> h100WorkgroupCoopShapes();

} // namespace helios::codegen
