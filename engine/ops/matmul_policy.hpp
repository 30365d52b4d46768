#pragma once
// Which GEMM path a matmul takes on a device with (or without) cooperative matrices: a pure function of the
// problem, a description of the device and a small config, so it is unit-tested on captured device fixtures.
//
// Order: a problem whose M, N, K are multiples of a coop tile runs the coop kernel directly (TN directly too:
// the kernel reads the K x M A with column-major coop loads); a batched problem that shares one B across the
// batch is first rewritten into one GEMM with batch*M rows; an unaligned problem is padded to the tile on the
// GPU (slice_3d), run through the coop kernel and cropped back, when the padding adds at most `paddingCap`
// of the work and the problem has at least `minFlops`; with `allowBounded`, an unaligned problem of at
// least `boundedMinFlops` runs as it is through the bounds-checked coop kernel instead (one dispatch, no
// copies) when padding is over the cap, or the problem has at most `boundedMaxFlops`; everything else takes
// the tiled fallback, with the reason recorded.
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"
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

enum class CoopDType : uint8_t { F16, F32, BF16 };
const char* coopDTypeName(CoopDType t); // "f16", "f32", "bf16"

// What the device offers the coop kernels.
struct CoopDeviceInfo {
  bool coopMatrix = false; // VK_KHR_cooperative_matrix enabled with an f16 x f16 -> f32 shape
  uint32_t coopM = 0, coopN = 0, coopK = 0; // that shape (probe::bestF16F32)
  uint32_t subgroupSize = 32;
  uint32_t maxSharedBytes = 49152;
  // VK_NV_cooperative_matrix2: f16 x f16 -> f32 workgroup-scope granularities (empty: none; the live
  // device fills it only with HELIOS_COOP2=1) and the largest flexible dimension. When present, the
  // workgroup-scope kernel's tilings come first.
  std::vector<codegen::WorkgroupCoopShape> workgroupShapes;
  uint32_t workgroupMaxDimension = 256;
};
// The f16 x f16 -> f32 workgroup-scope entries of a probe's VK_NV_cooperative_matrix2 list.
std::vector<codegen::WorkgroupCoopShape>
workgroupShapesFromProperties(const std::vector<probe::FlexibleDimensionsProperty>& props);
// Best subgroup-scope f16 x f16 -> f32 shape in `props` (largest M*N*K, then M*N, then M, as the probe
// scores it); coopMatrix = false when there is none.
CoopDeviceInfo coopDeviceFromProperties(const std::vector<probe::CoopMatrixProperty>& props,
                                        uint32_t subgroupSize, uint32_t maxSharedBytes);
CoopDeviceInfo coopDeviceFromCaps(const probe::DeviceCaps& caps);

struct MatmulProblem {
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false; // A stored K x M; B stored N x K
  CoopDType a = CoopDType::F16, b = CoopDType::F16, c = CoopDType::F32;
  bool sharedB = false;  // batched with one B for every batch (B batch stride 0)
  bool epilogue = false; // + bias or GELU after the product (split-K cannot apply them to partial sums)
  double flops() const { return 2.0 * M * N * K * batch; }
};

struct CoopPolicyConfig {
  double paddingCap = 0.20; // padded work / real work - 1, inclusive
  double minFlops = 2e6;    // padded paths need at least this much work (inclusive)
  bool allowPadding = true;
  bool allowRewrite = true;
  bool allowSplitK = true;
  // Unaligned problems of at least boundedMinFlops run as they are by the bounds-checked kernel when padding
  // is over the cap, or when they have at most boundedMaxFlops. Defaults from the H100 (bench/results/
  // 2026-11-24-h100-gemm-odd-shapes.json): over the cap it beat the tiled fallback from ~100 MFLOP
  // (511x513x257 1.2-1.4x, 200x3000x1000 1.4-1.5x) and lost below (300^3, 127x513x33); within the cap
  // padding beat it (1000^3: 58 against 42 TFLOP/s).
  bool allowBounded = true;
  double boundedMinFlops = 1e8;
  double boundedMaxFlops = 0;
  // A single GEMM (direct or bounded; not the TN split above) whose tiles leave the GPU idle cuts K into up
  // to maxKSlices slices inside its one dispatch (GemmCoopParams::kSlices): the slice count doubles while the
  // grid is under a wave and each slice keeps at least minSliceSteps K steps, or while it is under four waves
  // and each slice keeps at least busySliceSteps. 1 turns it off. On the H100
  // (2026-11-24-h100-gemm-k-slices.json) the hand-over (partial store, counter, reload) costs about 3.5 us,
  // more than 4 steps save (511x513x257, 9 steps: 13.6 TFLOP/s whole, 9.7 in 2 slices), while long K gains
  // (65x384x16384: 2.4 -> 15.3; 256x256x4096: 16.3 -> 43.9 in 8 slices; 768x768x16384, 144 tiles: 88.8 ->
  // 136.8 in 4).
  uint32_t maxKSlices = 16;
  uint32_t minSliceSteps = 8;
  uint32_t busySliceSteps = 64;
  // Tilings to consider, preferred first (empty: codegen::gemmCoopTilings() for the device: the default
  // tile, then a 64x64 one for small or awkward shapes).
  std::vector<codegen::GemmCoopParams> tilings;
};

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
};

// K slices for tiling `t` on `problem` (1: none), as CoopPolicyConfig::maxKSlices describes.
uint32_t kSlicesFor(const codegen::GemmCoopParams& t, const MatmulProblem& problem,
                    const CoopPolicyConfig& config);

// The decision (pure; records nothing: matmul() records it in coopStats()).
CoopPlan planMatmul(const MatmulProblem& problem, const CoopDeviceInfo& device,
                    const CoopPolicyConfig& config = {});

// "0.5 MFLOP", "68.7 GFLOP" (MFLOP below 1 GFLOP).
std::string formatFlops(double flops);

} // namespace helios::ops
