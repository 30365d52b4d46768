#pragma once
// Tiled GEMM: the register-tiled fallback matrix multiply (also the GEMM on devices without cooperative
// matrices). One workgroup computes a BM x BN tile of C, stepping through K in BK slices staged in shared
// memory; each invocation accumulates a TM x TN sub-tile in registers.
//
//   C[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * C[b])        (row-major, b = gl_WorkGroupID.z)
//   op(A) is M x K: A stored M x K, or K x M when transA ("TN");
//   op(B) is K x N: B stored K x N, or N x K when transB ("NT");
//   epilogue: + bias[n] (optional), then GELU (tanh form, optional). beta == 0 never reads C.
//
// Interface: bindings 0 = A, 1 = B, 2 = C (read when beta != 0), 3 = bias (only when `bias`);
// push constants GemmTiledPush (the strides only when batched: the first 20 bytes are the unbatched block
// and the GLSL oracle's); dispatch {ceil(N/BN), ceil(M/BM), batch}; local size {threads,1,1}.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// The tiling: what a performance sweep varies.
struct GemmTile {
  uint32_t BM = 128, BN = 128; // workgroup tile of C
  uint32_t BK = 8;             // K slice staged in shared memory per step (the unrolled inner loop)
  uint32_t TM = 8, TN = 8;     // per-invocation register tile; invocations = (BM/TM) * (BN/TN)
  uint32_t pad = 4;            // floats appended to every shared row (against bank conflicts)
  uint32_t stages = 2;         // shared buffers: 1 = load, barrier, compute, barrier; 2 = double-buffered

  uint32_t threads() const { return (BM / TM) * (BN / TN); }
  // Bytes of shared memory the kernel declares.
  uint32_t sharedBytes() const;
  // "128x128x8_8x8_p4_s2"; parse() accepts the same form ("_pN" and "_sN" optional) and throws
  // std::invalid_argument otherwise.
  std::string str() const;
  static GemmTile parse(const std::string& text);
  bool operator==(const GemmTile&) const = default;
};

// Host side of the push-constant block.
struct GemmTiledPush {
  uint32_t M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  uint32_t strideA = 0, strideB = 0, strideC = 0; // elements between batches (only when batched)
};
static_assert(sizeof(GemmTiledPush) == 32 && offsetof(GemmTiledPush, alpha) == 12 &&
              offsetof(GemmTiledPush, beta) == 16 && offsetof(GemmTiledPush, strideA) == 20 &&
              offsetof(GemmTiledPush, strideC) == 28);

// What the device allows (filled by the op from VkPhysicalDeviceLimits; defaults are a typical desktop GPU).
struct GemmDeviceLimits {
  uint32_t maxSharedBytes = 49152; // maxComputeSharedMemorySize
  uint32_t maxInvocations = 1024;  // maxComputeWorkGroupInvocations
  uint32_t subgroupSize = 32;
  uint32_t targetWorkgroups = 132; // workgroups that fill the GPU: its SM/CU count (ops::deviceComputeUnits)
};

struct GemmTiledParams {
  Elem inType = Elem::F32;  // storage of A and B (f16, bf16: widened to f32 on load)
  Elem outType = Elem::F32; // storage of C and of bias (rounded to nearest even when 16-bit)
  bool transA = false;      // A stored K x M (read directly)
  bool transB = false;      // B stored N x K
  bool batched = false;     // strided batches: strideA/B/C push constants, batch = gl_WorkGroupID.z
  bool bias = false;        // + bias[n]
  bool gelu = false;        // GELU (tanh form), applied last
  // Global memory accessed as 4-vectors: set by the op only when the contiguous dimension of every operand
  // (K or M for A, N or K for B, N for C) and the batch strides are multiples of 4 and the bindings are
  // 16-byte aligned. The generator may still use scalars for an operand whose tile does not split evenly.
  bool vec4Aligned = false;
  GemmTile tile;

  std::string cacheKey() const; // covers every field
  std::string name() const;     // e.g. "gemm_tiled_f32f32_nn_b_bias_gelu_v4_128x128x8_8x8_p4_s2"
  // Throws std::invalid_argument naming the broken constraint (tile divisibility, limits, ...).
  void validate(const GemmDeviceLimits& limits = {}) const;
};

codegen::Kernel generateGemmTiled(const GemmTiledParams& params, const GemmDeviceLimits& limits = {});

// The tilings the registered sweep generates (parameter sets to validate, no preference): the planner's
// candidates (engine/ops/gemm_plan_menu.hpp), BK 16, single buffering, no padding, rectangular tiles, 512
// invocations, an odd non-power-of-two geometry and the minimal fallback. The planner chooses among tiles.
std::vector<GemmTile> gemmTiledSweepTiles();

// Registers "gemm.tiled": default = f32 NN 128x128x8; sweep = every variant combination (types, transposes,
// batching, epilogues, vec4) on the default and the odd tiling, plus every sweep tiling on four variants.
void registerGemmTiled(KernelRegistry& registry);

} // namespace helios::codegen
