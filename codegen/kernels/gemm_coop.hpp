#pragma once
// Cooperative-matrix GEMM (VK_KHR_cooperative_matrix, subgroup scope): f16 x f16 or bf16 x bf16 (where the
// device lists bf16 x bf16 -> f32: VK_KHR_shader_bfloat16) -> f32 accumulate.
// One workgroup computes a BM x BN tile of C; its subgroups are laid out sgRows x sgCols over the tile and
// each holds (BM/sgRows/coopM) x (BN/sgCols/coopN) accumulator matrices. K is walked in BK slices staged in
// shared memory (copied as 16-byte vectors by every invocation, optionally double-buffered), and the coop
// loads read the staged slices: row-major A (NN/NT), column-major A straight from a K x M tile (TN),
// row-major B, or column-major B straight from an N x K tile (NT).
//
//   C[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * C[b])     (row-major, b = gl_WorkGroupID.z)
//   epilogue: + bias[n] (C's type, optional), then GELU (tanh form, optional). beta == 0 never reads C.
//
// Requirements (the dispatch policy guarantees them): M % BM == 0, N % BN == 0, K % BK == 0, batch strides
// multiples of 8 elements, A and B bindings 16-byte aligned; or none of these with `bounded` (only the last
// two, and M, N, K multiples of 8, with `boundedVectors`).
// Interface: bindings 0 = A, 1 = B (the operand type, or f32), 2 = C (f32 or the operand type; read when
// beta != 0), 3 = bias (C's type,
// only when `bias`), then with kSlices > 1 the partial tiles and the tile counters; push constants
// GemmCoopPush (same layout as the tiled GEMM's batched block); dispatch gemmCoopGroups(); local size
// {subgroups * subgroupSize, 1, 1}; requiredSubgroupSize = subgroupSize.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/gemm_coop_tile.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct GemmCoopParams {
  // Cooperative-matrix shape (probe::bestF16F32 on the device; 16x16x16 on NVIDIA).
  uint32_t coopM = 16, coopN = 16, coopK = 16;
  // Workgroup tile of C and the K slice per step.
  uint32_t BM = 128, BN = 128, BK = 32;
  // Subgroups laid out sgRows x sgCols over the tile: each covers (BM/sgRows) x (BN/sgCols).
  uint32_t sgRows = 2, sgCols = 2;
  uint32_t stages = 2; // 1: load, barrier, compute, barrier; 2: double-buffered shared memory
  // Copy subgroups (warp specialisation): this many extra subgroups only move the next K slice from global
  // to shared memory while the sgRows x sgCols subgroups compute on the current one, so the global loads'
  // latency hides behind MulAdds without prefetch registers in the computing subgroups. 0: every invocation
  // copies. Needs 2 stages.
  uint32_t producers = 0;
  uint32_t padA = 8,
           padB = 8;    // halves appended to each shared row (multiples of 8: rows stay 16-byte aligned)
  bool transA = false;  // A stored K x M (column-major coop loads; no explicit transpose)
  bool transB = false;  // B stored N x K
  bool batched = false; // batch = gl_WorkGroupID.z, element strides in push constants
  // Element types (bf16 in memory as uint16 bits: elem_io.hpp). operands: what the coop matrices hold, F16 or
  // BF16; accumulation is f32. storedA, storedB: A and B in memory, `operands` or F32 (rounded to `operands`
  // while staged: mixed precision without a cast kernel). storedC: C, bias and beta's read of C, F32 or
  // `operands`.
  Elem operands = Elem::F16;
  Elem storedA = Elem::F16, storedB = Elem::F16;
  Elem storedC = Elem::F32;
  bool alphaBeta = false; // apply alpha and beta (false: C = A*B [+bias][gelu], alpha/beta ignored)
  bool bias = false;      // + bias[n]
  bool gelu = false;      // GELU (tanh form), applied last
  uint32_t groupM = 0;    // workgroup raster swizzle: 0 = row-major; g = bands of g tile rows (L2 reuse)
  // Subgroup scope, no alpha/beta: C leaves through shared memory (each subgroup's accumulators, one row of
  // coop blocks at a time, then 16-byte row vectors to C) instead of coop stores straight to memory. Needs
  // C 16-byte aligned (8 for f16) and batch strides of C multiples of 4. Also on the bounded kernel with
  // vector copies (alpha/beta allowed there): its checked per-element store becomes one per 4-element vector.
  bool stagedStore = false;
  // Staged store of a 16-bit C with bias: the epilogue runs on the f32 row vectors (bias read as scalars)
  // instead of on coop matrices, so no 16-bit coop matrix is converted to f32. Mesa 25.0's ANV lowers such
  // cross-width conversions as if both packed alike (crash at SIMD8/16, wrong code elsewhere).
  bool biasOnVectors = false;
  // Any M, N, K, strides and 2-byte alignment (odd shapes without padding passes): A and B are read as
  // 16-bit scalars, bounds-checked (zeros past the edges) as they are staged, and C leaves through shared
  // memory as bounds-checked scalars with the epilogue applied per element. 16-bit operands in memory,
  // subgroup scope.
  bool bounded = false;
  // Bounded, with every operand row a multiple of 8 halves (M, N, K multiples of 8, batch strides too, A and
  // B 16-byte aligned): the copies read 16-byte vectors, each wholly inside the matrix or zeroed, instead of
  // scalars; the edges and C's store stay bounded.
  bool boundedVectors = false;
  // Bounded with scalar copies, per operand: each invocation's 8 halves come from 8 rows of one column of
  // the stored operand, and consecutive invocations take consecutive columns, so one load instruction of a
  // subgroup reads consecutive elements (1-2 cache lines, where 8 halves along a row touch a line per row).
  // The operand is staged in the other layout and its coop loads transposed (stagedTransA/B).
  bool crosswiseA = false, crosswiseB = false;
  // K cut in kSlices slices inside one dispatch (gl_WorkGroupID.z = slice), for problems whose tiles alone
  // leave the GPU idle: each slice stores its f32 partial tile to a workspace, bumps the tile's counter,
  // and the workgroup that arrives last sums the partials in slice order (deterministic whatever the
  // arrival order), resets the counter and runs the epilogue. Subgroup scope, not batched, no copy
  // subgroups. Two more bindings after C (and bias): the partial tiles (f32, tiles * kSlices * BM * BN)
  // and one u32 counter per tile, zero before the dispatch and left zero after it.
  uint32_t kSlices = 1;
  // Bounded, whole K (kSlices == 1, no copy subgroups), for M >= BM, N >= BN, K > BK (edgeShiftFits): a
  // tile that would cross M or N moves back inside (overlapping its neighbour and storing only its own rows
  // and columns), and the K steps start at K - steps * BK, so the first step alone reaches outside the
  // matrix (k < 0, staged as zeros). Only that step's copies are checked; the others run as the direct
  // kernel's (vector copies) or without their checks (scalar ones).
  bool edgeShift = false;
  // VK_NV_cooperative_matrix2 (gemm_coop_nv2.hpp): one workgroup-scope BM x BN accumulator, operands loaded
  // straight from global memory; coopM/N/K hold the flexible-dimension granularity, sgRows x sgCols only
  // sets the invocation count, and stages/padding do not apply (1 and 0).
  bool workgroupScope = false;
  bool tensorLayouts = false; // workgroup scope: A and B through tensor layouts (LoadTensorNV)
  uint32_t unroll = 1;        // workgroup scope: K slices per loop trip (the rest one by one)
  uint32_t subgroupSize = 32; // pipeline's required subgroup size (4 to 64, a power of two)
  // The coop instructions lowered to ordinary SPIR-V for subgroupSize (spv::ModuleOptions::
  // coopLowerSubgroup): devices without VK_KHR_cooperative_matrix. Subgroup scope only.
  bool lowered = false;
  uint32_t maxSharedBytes = 49152; // the device's maxComputeSharedMemorySize (checked by validate())

  // The tiling fields at once (menus, sweeps, the Tuning record's tiles), and back.
  GemmCoopParams& setTiling(const CoopTile& t) {
    BM = t.bm, BN = t.bn, BK = t.bk, sgRows = t.rows, sgCols = t.cols, stages = t.stages;
    return *this;
  }
  CoopTile tiling() const { return {BM, BN, BK, sgRows, sgCols, stages}; }
  uint32_t subgroups() const { return sgRows * sgCols; } // the computing subgroups
  uint32_t invocations() const { return (subgroups() + producers) * subgroupSize; }
  uint32_t copiers() const { return producers ? producers * subgroupSize : invocations(); } // copy slices
  bool halfC() const { return storedC != Elem::F32; }        // C (and bias) in the operands' 16-bit type
  bool stagedTransA() const { return transA != crosswiseA; } // A staged K-major (column-major coop loads)
  bool stagedTransB() const { return transB != crosswiseB; } // B staged N-major
  uint32_t warpM() const { return BM / sgRows; }             // rows of C per subgroup
  uint32_t warpN() const { return BN / sgCols; }
  uint32_t accM() const { return warpM() / coopM; } // accumulator matrices per subgroup, down
  uint32_t accN() const { return warpN() / coopN; } // and across
  uint32_t sharedBytes() const;                     // bytes of shared memory the kernel declares
  std::string cacheKey() const;                     // covers every field
  // e.g. "gemm_coop_nn_f32_128x128x32_sg2x2_s2_c16x16x16_p8_8" (+ "_ws4" with 4 copy subgroups, "_w64" on
  // subgroups of other than 32 lanes; "gemm_coop_bf16_..." on bf16 operands);
  // "gemm_coop2_nn_f32_128x128x32_wg256_g32x32x16" (+ "_u8" unrolled, "_tl" tensor layouts)
  std::string name() const;
  // Throws std::invalid_argument naming the broken constraint (divisibility, shared memory, ...).
  void validate() const;
  bool operator==(const GemmCoopParams&) const = default;
};

// Host side of the push-constant block (both scopes; the generators declare its members in this order, each
// 4 bytes: M, N, K, alpha, beta, strideA, strideB, strideC).
struct GemmCoopPush {
  uint32_t M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  uint32_t strideA = 0, strideB = 0, strideC = 0; // elements between batches (ignored unless batched)
};
static_assert(sizeof(GemmCoopPush) == 32 && offsetof(GemmCoopPush, alpha) == 12 &&
              offsetof(GemmCoopPush, beta) == 16 && offsetof(GemmCoopPush, strideA) == 20 &&
              offsetof(GemmCoopPush, strideC) == 28);

struct GemmCoopGroups {
  uint32_t x = 1, y = 1, z = 1;
};
// {N / BN, M / BM, batch or kSlices} (rounded up when bounded).
GemmCoopGroups gemmCoopGroups(const GemmCoopParams& p, uint32_t M, uint32_t N, uint32_t batch);
// With kSlices > 1: the f32 elements of the partial-tile workspace, and the counters (one per C tile).
uint64_t gemmCoopPartialElements(const GemmCoopParams& p, uint32_t M, uint32_t N);
// Whether an edgeShift kernel may run on M x N x K (its tiles fit inside, and K has a step besides the
// first).
bool edgeShiftFits(const GemmCoopParams& p, uint32_t M, uint32_t N, uint32_t K);

uint32_t gemmCoopTileCount(const GemmCoopParams& p, uint32_t M, uint32_t N);

codegen::Kernel generateGemmCoop(const GemmCoopParams& params);

// Tilings worth timing for a coop shape and subgroup size, fastest measured on the H100 first, then small
// tiles with few accumulators per subgroup (narrow shapes, small register files); only those that validate
// (the sweep and the device check's menu). Each is a GemmCoopParams with only the tiling fields set (NN, f32
// out, no epilogue).
std::vector<GemmCoopParams> gemmCoopTilings(uint32_t coopM = 16, uint32_t coopN = 16, uint32_t coopK = 16,
                                            uint32_t maxSharedBytes = 49152, uint32_t subgroupSize = 32);
// Default tiling for a device's shape: the first of gemmCoopTilings() that validates.
GemmCoopParams gemmCoopDefault(uint32_t coopM = 16, uint32_t coopN = 16, uint32_t coopK = 16,
                               uint32_t maxSharedBytes = 49152, uint32_t subgroupSize = 32);
// The f16 x f16 -> f32 subgroup shapes (M, N, K) and subgroup sizes the sweeps cover: NVIDIA's 16x16x16,
// 16x8x16, 16x8x8, Intel's 8x8x16 and 8x16x16, AMD's 16x16x16 at 32 and 64 lanes.
std::vector<std::array<uint32_t, 3>> coopSweepShapes();
std::vector<uint32_t> coopSweepSubgroupSizes();

// The registry's sweep as parameter sets (distinct cache keys).
std::vector<GemmCoopParams> gemmCoopSweep();

// Registers "gemm.coop": default = NN f32 128x128x64 2x2 subgroups, single-stage (fastest measured); sweep =
// every tiling x representative variants + every variant (layouts, f16 out, batched, alpha/beta, bias, GELU)
// on two tilings, and the variants again on bf16 operands.
void registerGemmCoop(KernelRegistry& registry);

} // namespace helios::codegen
