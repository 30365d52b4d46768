#pragma once
// Small sample kernels built with helios::spv: examples for kernel authors, test subjects, and the
// `helios-spv demo` output. All validate for Vulkan 1.3.
#include <cstdint>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::spv::samples {

// c[i] = a[i] + b[i] for i < n (push constant uint n); bindings a=0, b=1, c=2.
codegen::Kernel vectorAdd(uint32_t localSize = 256);
// out[wg] = sum of in[i] over a grid-stride loop and a workgroup-shared tree reduction; push constant n.
codegen::Kernel reduceSum(uint32_t localSize = 256);
// out[wg * NumSubgroups + SubgroupId] = subgroup sum of in[gid] (GroupNonUniformArithmetic).
codegen::Kernel subgroupSum(uint32_t localSize = 128);
// out32[i] = float(in16[i]) * scale; out16[i] = half(out32[i]); push constants {uint n, float scale}.
codegen::Kernel halfConvert(uint32_t localSize = 256);
// One subgroup computes C(16x16 f32) += A(16x16 f16) * B(16x16 f16), all row-major (coop matrix KHR).
codegen::Kernel coopMatMul16(uint32_t subgroupSize = 32);
// y[i] = x[i] * alpha with local size and alpha as spec constants 0..3 (LocalSizeId).
codegen::Kernel specScale();

// Registers every sample above under "sample.*".
void registerSamples(codegen::KernelRegistry& registry);

} // namespace helios::spv::samples
