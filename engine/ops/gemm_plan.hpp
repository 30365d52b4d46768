#pragma once
// The GEMM planner: one pure function from a matmul's arguments and the device's profile to the plan the
// executors carry out: the kernel family, its parameters, its grid and the passes around it. It decides,
// in this order:
//   1. a forced tile (MatmulArgs::tile) or MatmulKernel::Tiled: the tiled kernel;
//   2. cooperative matrices where the profile has them: the policy (matmul_policy.hpp) on the Tuning
//      record's choices (planMatmulCoop): direct, transposed-A, bounded, padded (pad and crop passes), a
//      batch sharing B folded into M, K split into partial passes; MatmulKernel::Coop refuses a miss with the
//      policy's reason (std::invalid_argument);
//   3. the tiled kernel (the fallback), on 16-bit copies of A and B where f32 operands are multiplied as 16
//      bits (MatmulArgs::roundTo), its tile from the Tuning record's entry for the shape where it fits, else
//      the heuristic (chooseGemmTiling, gemm_plan_menu.hpp).
// Executors (matmul_coop.hpp, matmul_tiled.hpp) only carry a plan out; matmul() plans and runs.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/ops/device_profile.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"
#include "engine/vk/command_stream.hpp"

namespace helios::ops {

enum class GemmFamily : uint8_t { Coop, Tiled };

struct GemmPlan {
  GemmFamily family = GemmFamily::Tiled;
  // The coop policy's plan where it ran (decision, padded sizes, split-K passes; a miss: its reason);
  // matmul() counts it in coopStats().
  std::optional<CoopPlan> coop;
  // Coop: the kernel (layout, epilogue and types from the arguments; the staged store as on the caller's C,
  // the executor turns it off on a padded C that is not vector-aligned).
  codegen::GemmCoopParams coopParams;
  codegen::GemmTiledParams tiled; // Tiled: the kernel
  // A and B rounded into 16-bit copies first (roundTo on a path that cannot round while staging).
  bool halfCopies = false;
  // The kernel's grid: coop on the padded, folded or split problem; tiled {N/BN, M/BM, batch} rounded up.
  vk::Groups grid;
};

// The plan matmul() carries out for `args` (checked by checkMatmulArgs) on `profile`.
GemmPlan planGemm(const MatmulArgs& args, const DeviceProfile& profile);

// The policy's view of `args`: sizes, layouts, types; sharedB when a batch shares one dense B (strideB 0 with
// dense A and C).
MatmulProblem matmulProblem(const MatmulArgs& args, bool boundedVectors = true);

// The coop plan: planMatmul on the Tuning record (nullptr: the defaults), then the record's choices for the
// shape (its tuned entry, then the global tile, raster, slice and padding fields a file, --tuning or the
// environment set), and the buffers' layout checked. `forced`: planMatmul's.
CoopPlan planMatmulCoop(const MatmulArgs& args, const CoopDeviceInfo& device,
                        const tuning::Tuning* tuning = nullptr,
                        const codegen::GemmCoopParams* forced = nullptr);

// C's binding and batch stride allow the staged store's row vectors (GemmCoopParams::stagedStore).
bool rowVectorAligned(const codegen::GemmCoopParams& p, const vk::BufferRange& c, uint64_t strideC);
// MatmulKernel::Coop's refusal of a coop miss.
std::string coopRefusal(const CoopPlan& plan);
// The coop kernel for a plan (layout, output type and epilogue from args).
codegen::GemmCoopParams coopKernelParams(const CoopPlan& plan, const MatmulArgs& args);

// The coop part of planGemm for a coop `plan` of `args`: the kernel and its grid, 16-bit copies where the
// plan pads or folds f32 operands multiplied as 16 bits.
GemmPlan coopGemmPlan(const CoopPlan& plan, const MatmulArgs& args);

// Exactly the tiled-kernel parameters for `args` (args assumed valid): epilogue and types from args,
// vec4Aligned when every contiguous dimension, stride and binding offset allows it, tile from args.tile or
// chooseGemmTiling().
codegen::GemmTiledParams matmulTiledParams(const MatmulArgs& args, const codegen::GemmDeviceLimits& limits);
// The tiled part of planGemm: args.tile, else the tile the Tuning record chose for this shape where it fits
// the limits, else matmulTiledParams' choice; on 16-bit copies for roundTo.
GemmPlan tiledGemmPlan(const MatmulArgs& args, const codegen::GemmDeviceLimits& limits,
                       const tuning::Tuning* tuning);
// The tiled kernel for `args` on `device` (tiledGemmPlan's kernel on the live profile).
codegen::GemmTiledParams matmulTiledPlan(const MatmulArgs& args, const vk::Device& device);

} // namespace helios::ops
