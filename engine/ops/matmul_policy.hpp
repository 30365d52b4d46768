#pragma once
// Which GEMM path a matmul takes on a device with (or without) cooperative matrices: a pure function of the
// problem, a description of the device and the Tuning record's gemm fields, so it is unit-tested on captured
// device fixtures.
//
// Order: a problem whose M, N, K are multiples of a coop tile runs the coop kernel directly (TN directly too:
// the kernel reads the K x M A with column-major coop loads); a batched problem that shares one B across the
// batch is first rewritten into one GEMM with batch*M rows; an unaligned problem is padded to the tile on the
// GPU (slice_3d), run through the coop kernel and cropped back, when the padding adds at most `paddingCap`
// of the work and the problem has at least `minFlops`; unless gemm.bounded is "never", an unaligned problem
// of at least `boundedMinFlops` runs as it is through the bounds-checked coop kernel instead (one dispatch,
// no copies) when padding is over the cap, or the problem has at most `boundedMaxFlops`; everything else
// takes the tiled fallback, with the reason recorded.
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"
#include "engine/tuning/tuning.hpp"
#include "probe/caps.hpp"

namespace helios::ops {

enum class CoopDecision : uint8_t {
  DirectCoop,
  PaddedCoop,
  PaddedBatchedCoop,
  TransposedADirect,
  Rewrite,
  Bounded, // unaligned, run as it is by the bounds-checked coop kernel (GemmCoopParams::bounded)
  Fallback
};
inline constexpr uint32_t kCoopDecisionCount = 7;
// "direct", "padded", "padded_batched", "transposed_a_direct", "rewrite", "bounded", "fallback".
const char* coopDecisionName(CoopDecision d);
inline bool isCoop(CoopDecision d) {
  return d != CoopDecision::Fallback;
}

// Compute units assumed where the device reports none (Intel has no extension for it; probe::ShaderCores):
// the H100's 132 SMs the policy was tuned on, so such devices plan as before. Guessing too many costs a
// small GPU a smaller tile or K slices it did not need; guessing too few would leave a large GPU's units
// idle.
inline constexpr uint32_t kDefaultComputeUnits = 132;
// `cores`' count, or `fallback` when the device reports none.
uint32_t computeUnitsOr(const probe::ShaderCores& cores, uint32_t fallback);
// Workgroups of one grid that fill a GPU of `computeUnits` units (one "wave"): below it the policy prefers
// a smaller tile, more subgroups per tile, or K slices (tuning::defaultFillWorkgroups).
uint64_t fillWorkgroups(uint32_t computeUnits);

// What the device offers the coop kernels.
struct CoopDeviceInfo {
  bool coopMatrix = false; // VK_KHR_cooperative_matrix enabled with an f16 x f16 -> f32 shape
  uint32_t coopM = 0, coopN = 0, coopK = 0; // that shape (probe::bestF16F32)
  // bf16 x bf16 -> f32 listed at that very shape (the kernels share its tilings) with
  // VK_KHR_shader_bfloat16's cooperative-matrix feature enabled, or lowered (the lowering holds bf16 as
  // bits): the bf16 GEMM and attention run on coop matrices. Otherwise bf16 storage computes through the
  // tiled f32 kernel.
  bool bf16 = false;
  // Device-scope synchronisation under the Vulkan memory model (vulkanMemoryModelDeviceScope), which the
  // K-sliced kernel's hand-over between workgroups needs; without it no GEMM is cut into K slices.
  bool deviceScope = true;
  uint32_t subgroupSize = 32;
  uint32_t maxSharedBytes = 49152;              // the device's maxComputeSharedMemorySize
  uint32_t computeUnits = kDefaultComputeUnits; // SMs / CUs (probe::ShaderCores), for the grid-fill target
  // VK_NV_cooperative_matrix2: f16 x f16 -> f32 workgroup-scope granularities (empty: none; the live
  // device fills it only with HELIOS_COOP2=1) and the largest flexible dimension. When present, the
  // workgroup-scope kernel's tilings come first.
  std::vector<codegen::WorkgroupCoopShape> workgroupShapes;
  // Every such granularity the device lists, also while gemm.coop2 leaves them out of workgroupShapes: a
  // shape's tuned choice (GemmChoice::coop2) may still take the workgroup-scope kernel.
  std::vector<codegen::WorkgroupCoopShape> nv2Shapes;
  uint32_t workgroupMaxDimension = 256;
  // The coop kernels run lowered to ordinary SPIR-V for subgroupSize (HELIOS_COOP_EMULATE): the shape is the
  // emulated one, and every GemmCoopParams / AttentionCoopParams made for the device carries `lowered`.
  bool lowered = false;
  // Bytes of accumulators one subgroup may hold (coopRegisterPlan); 0: no limit known.
  uint32_t accumulatorBytes = 0;
  // GemmCoopParams::biasOnVectors for every tiling (coopRegisterPlan: on Intel).
  bool biasOnVectors = false;
  // The largest head dimension coop attention runs with (coopRegisterPlan; 0: none, the fallback instead).
  uint32_t attentionMaxHeadDim = 128;
};

// The subgroup size the subgroup-scope coop kernels run at and the accumulator bytes one subgroup may hold,
// from device facts. On Intel (vendor 0x8086) a subgroup is one hardware thread with 128 general registers,
// each one 32-bit value wide per lane of the matrix engine's native width, the coop shape's N (8 on Xe-HPG,
// 16 on Xe2): a 4 (8) KiB file whatever the subgroup size, of which accumulators get an eighth; the kernels
// run at that native width where the device's subgroup range has it. Elsewhere: the device's default size
// and no budget. Intel's staged f16 stores also take their bias on row vectors
// (GemmCoopParams::biasOnVectors: Mesa 25.0's ANV miscompiles f16 <-> f32 coop matrix conversions).
struct CoopRegisterPlan {
  uint32_t subgroupSize = 32;
  uint32_t accumulatorBytes = 0;
  bool biasOnVectors = false;
  // Coop attention's passes spilled on every Intel device swept and at D = 128 on NAVI31's 64 lanes
  // (bench/results/2026-11-25-vendor-compile-sweep.json): the fallback runs there until they fit.
  uint32_t attentionMaxHeadDim = 128;
};
CoopRegisterPlan coopRegisterPlan(uint32_t vendorId, uint32_t coopN, uint32_t minSubgroup,
                                  uint32_t maxSubgroup, uint32_t defaultSubgroup);
// Accumulator bytes one subgroup of `t` holds (f32: BM/sgRows x BN/sgCols x 4).
uint32_t coopAccumulatorBytes(const codegen::GemmCoopParams& t);
// Whether a lowered device (CoopDeviceInfo::lowered) takes tiling `t`: tiles of at most 64 x 32 whose
// subgroups copy at most 512 halves of A and B each per K step. Lavapipe expands each shared and global
// access of a kernel into a branch per lane, so a subgroup's unrolled copies and MulAdds set its compile
// time: minutes for the large tiles.
bool loweredTilingFits(const codegen::GemmCoopParams& t);
// `d` with coopRegisterPlan applied (subgroup size and accumulator budget), where it has coop matrices.
CoopDeviceInfo withRegisterPlan(CoopDeviceInfo d, uint32_t vendorId, uint32_t minSubgroup,
                                uint32_t maxSubgroup);
// The f16 x f16 -> f32 workgroup-scope entries of a probe's VK_NV_cooperative_matrix2 list.
std::vector<codegen::WorkgroupCoopShape>
workgroupShapesFromProperties(const std::vector<probe::FlexibleDimensionsProperty>& props);
// Best subgroup-scope f16 x f16 -> f32 shape in `props` (largest M*N*K, then M*N, then M, as the probe
// scores it); coopMatrix = false when there is none. bf16 where bf16 x bf16 -> f32 is listed at that shape
// (the feature check is the caller's).
CoopDeviceInfo coopDeviceFromProperties(const std::vector<probe::CoopMatrixProperty>& props,
                                        uint32_t subgroupSize, uint32_t maxSharedBytes);
// Whether `props` list bf16 x bf16 -> f32 at subgroup scope with shape m x n x k.
bool listsBF16At(const std::vector<probe::CoopMatrixProperty>& props, uint32_t m, uint32_t n, uint32_t k);
CoopDeviceInfo coopDeviceFromCaps(const probe::DeviceCaps& caps);
// The subgroup size the coop kernels run at (they support powers of two from 4 to 64): with subgroup size
// control, the device's default where it lies in [min, max] and is supported, else the largest supported size
// in [min, max]; without it, the default where the device has only that size. 0: none.
uint32_t coopSubgroupSize(uint32_t defaultSize, uint32_t minSize, uint32_t maxSize, bool controllable);

struct MatmulProblem {
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false; // A stored K x M; B stored N x K
  // A and B as multiplied (F16 or BF16 take the coop kernels; F32 does not), C as stored.
  codegen::Elem a = codegen::Elem::F16, b = codegen::Elem::F16, c = codegen::Elem::F32;
  bool sharedB = false;  // batched with one B for every batch (B batch stride 0)
  bool epilogue = false; // + bias or GELU after the product (split-K cannot apply them to partial sums)
  // A and B 16-byte aligned, batch strides whole 16-byte vectors: with M, N, K multiples of 8 the bounded
  // kernel copies vectors (GemmCoopParams::boundedVectors).
  bool vectorRows = true;
  double flops() const { return 2.0 * M * N * K * batch; }
};

// The policy reads its thresholds from the Tuning record's gemm fields (engine/tuning/tuning.hpp gives each
// with its reason and measurements); a test builds a tuning::GemmTuning with its own.

// The wave the policy plans against: gemm.fillWorkgroups where nonzero, else the device's.
uint64_t fillTarget(const tuning::GemmTuning& g, const CoopDeviceInfo& device);

// Tiles one K-sliced GEMM may have (the context's shared counters hold this many).
inline constexpr uint32_t kMaxSlicedTiles = 4096;

struct CoopPlan {
  CoopDecision decision = CoopDecision::Fallback;
  CoopDecision inner =
      CoopDecision::Fallback; // what runs: == decision, except Rewrite (direct/padded of `problem`)
  std::string reason;         // why, one clause; for misses e.g. "too small (0.5 MFLOP < 2 MFLOP)"
  std::string missKey;        // the reason without its numbers ("too small"), for the stats; empty for hits
  codegen::GemmCoopParams params;  // the coop kernel's tiling and layout (valid unless Fallback)
  MatmulProblem problem;           // the problem the coop kernel sees (rewritten: batch folded into M)
  uint32_t Mp = 0, Np = 0, Kp = 0; // padded sizes (== M, N, K when not padded)
  double paddingOverhead = 0;      // padded work / real work - 1
  // > 1: K is cut into splitK slices run as a batch into f32 partial sums, then summed (with alpha, beta)
  // into C. Only for TN problems (A stored K x M, B stored K x N: each slice is contiguous rows of both, as
  // in weight gradients X^T dY) whose tiles alone would leave the GPU idle.
  uint32_t splitK = 1;
  // C may leave the subgroup-scope kernel through shared memory where it fits (the Tuning record can turn
  // it off, for all GEMMs or one shape).
  bool stagedStore = true;
};

// K slices for tiling `t` on `problem` (1: none), as tuning::GemmTuning::maxKSlices describes (none without
// device-scope synchronisation).
uint32_t kSlicesFor(const codegen::GemmCoopParams& t, const MatmulProblem& problem,
                    const tuning::GemmTuning& g, const CoopDeviceInfo& device);

// Whether the bounded kernel's copies of `problem` can read 16-byte vectors: 16-byte aligned operands and
// every size a multiple of 8 (each vector then lies wholly inside the matrix or wholly outside).
bool vectorCopies(const MatmulProblem& problem);

// Makes `t` the bounded kernel on `problem`: vector copies when `vectors`, else scalar ones, crosswise as
// gemm.crosswiseA/B allow (B only stored N x K).
void makeBounded(codegen::GemmCoopParams& t, const MatmulProblem& problem, bool vectors,
                 const tuning::GemmTuning& g);

// Sets GemmCoopParams::edgeShift on a bounded plan's final tiling where gemm.edgeShift(Scalar) allow it and
// it fits (scalar copies shift only on grids under fillTarget()).
void shiftEdges(codegen::GemmCoopParams& t, const MatmulProblem& problem, const tuning::GemmTuning& g,
                const CoopDeviceInfo& device);

// The decision (pure; records nothing: matmul() records it in coopStats()), on the record's gemm fields `g`.
// `forced`: the only tiling to consider (tests, helios-coop-check: may bring its own K slices, padding and
// raster band), instead of gemm.tilings or the device's menu.
CoopPlan planMatmul(const MatmulProblem& problem, const CoopDeviceInfo& device,
                    const tuning::GemmTuning& g = {}, const codegen::GemmCoopParams* forced = nullptr);

// "0.5 MFLOP", "68.7 GFLOP" (MFLOP below 1 GFLOP).
std::string formatFlops(double flops);

} // namespace helios::ops
