#pragma once
// The tiled GEMM's executor: carries out a tiled plan (gemm_plan.hpp), 16-bit copies of A and B first where
// the plan asks for them, then one dispatch of codegen/kernels/gemm_tiled on the plan's grid.
#include "engine/ops/gemm_plan.hpp"

namespace helios::ops {

void runTiledGemm(Executor& exec, const GemmPlan& plan, const MatmulArgs& args);
// The tiled kernel on the live device for `args` (tiledGemmPlan on its limits and record), run: the coop
// executor's fallback and stand-in.
void runTiledGemm(Executor& exec, const MatmulArgs& args);

// For args.roundTo on paths that cannot round while staging: args with A and B replaced by 16-bit copies
// (temporaries retained by exec until the GPU is done), aType = roundTo and roundTo off.
MatmulArgs withHalfCopies(Executor& exec, const MatmulArgs& args);

} // namespace helios::ops
