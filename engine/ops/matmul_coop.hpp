#pragma once
// The cooperative-matrix executor of matmul(): runs the plan gemm_plan.hpp made with the policy
// (matmul_policy.hpp).
//   direct / transposed_a_direct: one coop dispatch on the caller's buffers.
//   padded / padded_batched: A and B (and C when beta != 0, and bias) padded to the tile on the GPU with
//     slice3d into temporaries, one coop dispatch on the padded problem with the whole epilogue (alpha, beta,
//     bias, GELU) applied there, then C cropped back with slice3d. Padded rows/cols of A and B are zero, so
//     the real region of the padded C is exactly the real result; the padding never reaches C.
//   rewrite: a batch sharing one B runs as one GEMM with batch*M rows (direct or padded).
//   fallback: decided by the planner (the tiled executor, matmul_tiled.hpp).
// The padded path flushes the executor before its temporaries are released.
#include <optional>

#include "engine/ops/gemm_plan.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"

namespace helios::ops {

struct CoopRunOptions {
  std::optional<CoopDeviceInfo> device; // instead of coopDeviceInfo(device) (tests, tuning)
  // Run the planned GEMM (direct or padded) with the tiled kernel instead of the coop kernel: the pad/crop
  // path end to end on devices without cooperative matrices.
  bool tiledInner = false;
  // Force a coop tiling (BM, BN, BK, subgroups, stages, padding, groupM); layout and epilogue come from args.
  std::optional<codegen::GemmCoopParams> tiling;
  bool record = true; // count the decision in coopStats()
  // Instead of the device's Tuning record (deviceTuning; the tuner's candidates, tests' own policy fields).
  std::optional<tuning::Tuning> tuning;
};

// Plans and runs `args` (already checked by checkMatmulArgs). `force` (MatmulKernel::Coop): a plan that
// would fall back throws std::invalid_argument with the policy's reason instead. Returns the plan it ran.
CoopPlan matmulCoop(Executor& exec, const MatmulArgs& args, const CoopRunOptions& options = {},
                    bool force = false);

// Carries out a coop plan (gemm_plan.hpp) of `args`: 16-bit copies first where the plan asks, the batch
// folded into M for a rewrite, then execute (direct, padded or split K). tiledInner: CoopRunOptions'.
void runCoopGemm(Executor& exec, const GemmPlan& plan, const MatmulArgs& args, bool tiledInner = false);

} // namespace helios::ops
