#pragma once
// What every kernel generator returns: SPIR-V words plus the interface the engine needs to build and
// dispatch a compute pipeline for it. Generators never touch Vulkan; the engine never looks inside words.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace helios::codegen {

struct Kernel {
  std::string name;               // human-readable family + variant, e.g. "gemm_tiled_f32_nn_64x64x16"
  std::string cacheKey;           // the parameter struct's cache key (same params -> same key -> same words)
  std::vector<uint32_t> spirv;    // a complete module, passes spirv-val for the Vulkan 1.3 environment
  uint32_t numBuffers = 0;        // storage buffers at set 0, bindings 0..numBuffers-1
  uint32_t pushConstantBytes = 0; // size of the push-constant block (0 = none)
  std::array<uint32_t, 3> localSize{1, 1, 1};
  uint32_t requiredSubgroupSize = 0; // 0 = any; otherwise pipeline must be created with this subgroup size
};

// The common case: a 1-D workgroup of `localSize` invocations along x, any subgroup size.
inline Kernel linearKernel(std::string name, std::string cacheKey, std::vector<uint32_t> spirv,
                           uint32_t numBuffers, uint32_t pushConstantBytes, uint32_t localSize) {
  return {.name = std::move(name),
          .cacheKey = std::move(cacheKey),
          .spirv = std::move(spirv),
          .numBuffers = numBuffers,
          .pushConstantBytes = pushConstantBytes,
          .localSize = {localSize, 1, 1}};
}

} // namespace helios::codegen
