#pragma once
// The device's own MMA ceiling (helios-bench peak): a kernel that keeps a grid of independent accumulators
// in registers and runs cooperative-matrix MulAdds on them in a loop with no memory traffic. A and B are
// loaded once before the loop, every accumulator is stored once after it; subgroup scope (one grid per
// subgroup, VK_KHR_cooperative_matrix) or workgroup scope (one grid per workgroup, the granularities of
// VK_NV_cooperative_matrix2).
//
// Bindings: 0 operands (read): `rows` A matrices (M x K, row-major, M*K components each), then `cols` B
//             matrices (K x N, row-major); f16 components as halves, 8-bit ones packed four to a uint32.
//           1 out (write): per unit (a subgroup, or the workgroup at workgroup scope) the sum of its
//           rows*cols
//             accumulators, M x N row-major at u*M*N, in C's type (one matrix: the store stays a negligible
//             part of a call, and every accumulator still reaches memory, so none of the loop can be
//             dropped).
// Push constants: PeakMmaPush.
// Grid: any number of workgroups along x.
// Result: out = the sum over r, c of accumulator (r, c), which holds A_r B_c added `iterations` times,
// rounded as C's type rounds it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct PeakMmaPush {
  uint32_t iterations = 0; // MulAdds per accumulator
};
static_assert(isPushBlock<PeakMmaPush> && sizeof(PeakMmaPush) == 4);

// Component types of the coop configurations a device lists (probe::componentTypeName spells them).
enum class MmaType : uint8_t { F16, BF16, F32, S8, U8, S32, U32 };
const char* mmaTypeName(MmaType t); // the probe's spelling: "float16", "bfloat16", "sint8", ...
std::optional<MmaType> mmaTypeFromName(std::string_view probeName);
uint32_t mmaTypeBytes(MmaType t);
bool mmaTypeIsInt(MmaType t);

struct PeakMmaParams {
  uint32_t M = 16, N = 16, K = 16; // one MulAdd: the listed shape, or the workgroup-scope granularity
  MmaType ab = MmaType::F16;       // A and B components
  MmaType c = MmaType::F32;        // accumulator (C and Result) components
  bool workgroupScope = false;     // VK_NV_cooperative_matrix2 workgroup-scope matrices
  uint32_t subgroupSize = 32;      // the size the pipeline requires
  uint32_t subgroups = 4;          // per workgroup (workgroup scope: invocations / subgroupSize)
  uint32_t rows = 4, cols = 4;     // the accumulator grid: rows A matrices x cols B matrices
  bool lowered = false;            // cooperative matrices lowered to ordinary SPIR-V (subgroup scope only)

  uint32_t invocations() const { return subgroups * subgroupSize; }
  uint32_t unitsPerWorkgroup() const { return workgroupScope ? 1 : subgroups; }
  uint32_t accumulators() const { return rows * cols; }
  // Multiply-adds counted as 2 operations, per loop iteration of one workgroup.
  double opsPerIteration() const { return 2.0 * M * N * K * accumulators() * unitsPerWorkgroup(); }
  std::string cacheKey() const; // "peak_mma:16x16x16:float16:float32:sg:s32:w4:g4x4"
  std::string name() const;     // "peak_mma_16x16x16_f16_f32_sg_4x4"
  // Throws std::invalid_argument naming what a device cannot run: bf16 (the builder has no bfloat16 type
  // yet), a lowered workgroup scope or integer MulAdd, A and C types that no device lists together.
  void validate() const;
};

Kernel generatePeakMma(const PeakMmaParams& p);
void registerPeakMma(KernelRegistry& registry);

} // namespace helios::codegen
