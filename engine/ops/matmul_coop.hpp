#pragma once
// The cooperative-matrix path of matmul(): plans with the policy (matmul_policy.hpp) and runs the plan.
//   direct / transposed_a_direct: one coop dispatch on the caller's buffers.
//   padded / padded_batched: A and B (and C when beta != 0, and bias) padded to the tile on the GPU with
//     slice3d into temporaries, one coop dispatch on the padded problem with the whole epilogue (alpha, beta,
//     bias, GELU) applied there, then C cropped back with slice3d. Padded rows/cols of A and B are zero, so
//     the real region of the padded C is exactly the real result; the padding never reaches C.
//   rewrite: a batch sharing one B runs as one GEMM with batch*M rows (direct or padded).
//   fallback: the tiled kernel (matmul with MatmulKernel::Tiled).
// The padded path flushes the executor before its temporaries are released.
#include <optional>

#include "engine/ops/matmul.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"

namespace helios::ops {

// The live device as the policy sees it (VK_KHR_cooperative_matrix enabled and an f16 x f16 -> f32 subgroup
// shape listed); queried once per VkPhysicalDevice.
CoopDeviceInfo coopDeviceInfo(const vk::Device& device);

// The policy's view of `args`: sizes, layouts, types; sharedB when a batch shares one dense B (strideB 0 with
// dense A and C).
MatmulProblem matmulProblem(const MatmulArgs& args, bool boundedVectors = true);

struct CoopRunOptions {
  CoopPolicyConfig config;
  std::optional<CoopDeviceInfo> device; // instead of coopDeviceInfo(device) (tests, tuning)
  // Run the planned GEMM (direct or padded) with the tiled kernel instead of the coop kernel: the pad/crop
  // path end to end on devices without cooperative matrices.
  bool tiledInner = false;
  // Force a coop tiling (BM, BN, BK, subgroups, stages, padding, groupM); layout and epilogue come from args.
  std::optional<codegen::GemmCoopParams> tiling;
  bool record = true; // count the decision in coopStats()
  // Instead of the device's Tuning record (deviceTuning; the tuner's candidates).
  std::optional<tuning::Tuning> tuning;
};

// Plans and runs `args` (already checked by checkMatmulArgs). `force` (MatmulKernel::Coop): a plan that
// would fall back throws std::invalid_argument with the policy's reason instead. Returns the plan it ran.
CoopPlan matmulCoop(Executor& exec, const MatmulArgs& args, const CoopRunOptions& options = {},
                    bool force = false);

// The plan matmulCoop runs: planMatmul with the Tuning record's choices (the shape's tuned entry, then the
// fields a file, --tuning or the environment set; nullptr: none) and the buffers' layout checked.
CoopPlan planMatmulCoop(const MatmulArgs& args, const CoopDeviceInfo& device, CoopPolicyConfig config = {},
                        const tuning::Tuning* tuning = nullptr);

// The coop kernel matmulCoop dispatches for a direct plan (layout, output type and epilogue from args).
codegen::GemmCoopParams coopKernelParams(const CoopPlan& plan, const MatmulArgs& args);

} // namespace helios::ops
