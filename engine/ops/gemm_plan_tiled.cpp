// The tiled kernel's part of the GEMM planner (gemm_plan.hpp): its parameters, tile and grid.
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/gemm_plan.hpp"
#include "engine/ops/gemm_plan_menu.hpp"

#include <stdexcept>

namespace helios::ops {

using codegen::Elem;

codegen::GemmTiledParams matmulTiledParams(const MatmulArgs& a, const codegen::GemmDeviceLimits& limits) {
  codegen::GemmTiledParams p;
  p.inType = a.aType;
  p.outType = a.outType;
  p.transA = a.transA;
  p.transB = a.transB;
  p.batched = a.batch > 1;
  p.bias = a.bias.buffer != VK_NULL_HANDLE;
  p.gelu = a.gelu;
  // vec4: every contiguous dimension (A: K or M, B: N or K, C: N) a multiple of 4, strides too, and the
  // bindings aligned to a whole 4-vector.
  const uint64_t M = a.M, N = a.N, K = a.K;
  const uint32_t ldA = a.transA ? a.M : a.K, ldB = a.transB ? a.K : a.N;
  const uint32_t inVec = 4 * codegen::elemBytes(a.aType), outVec = 4 * codegen::elemBytes(a.outType);
  bool v4 = ldA % 4 == 0 && ldB % 4 == 0 && a.N % 4 == 0 && a.a.offset % inVec == 0 &&
            a.b.offset % inVec == 0 && a.c.offset % outVec == 0;
  if (p.batched)
    v4 = v4 && batchStride(a.strideA, M * K) % 4 == 0 && batchStride(a.strideB, K * N) % 4 == 0 &&
         batchStride(a.strideC, M * N) % 4 == 0;
  p.vec4Aligned = v4;
  if (a.tile) {
    p.tile = *a.tile;
    return p;
  }
  return chooseGemmTiling(a.M, a.N, a.K, a.batch, limits, p);
}

namespace {

// `p` on the tile the Tuning record chose for this shape, where it has one that fits the device.
codegen::GemmTiledParams withTunedTile(codegen::GemmTiledParams p, const MatmulArgs& a,
                                       const codegen::GemmDeviceLimits& limits, const tuning::Tuning& t) {
  const tuning::GemmChoice* c =
      tuning::findGemm(t, gemmShape(a.M, a.N, a.K, a.batch, a.transA, a.transB, codegen::isHalf(a.outType)));
  if (!c || !c->tiled) return p;
  codegen::GemmTiledParams tuned = p;
  try {
    tuned.tile = codegen::GemmTile::parse(*c->tiled);
    tuned.validate(limits);
  } catch (const std::invalid_argument&) {
    return p; // a file from a device with other limits: the menu's choice stays
  }
  return tuned;
}

} // namespace

GemmPlan tiledGemmPlan(const MatmulArgs& args, const codegen::GemmDeviceLimits& limits,
                       const tuning::Tuning* tuning) {
  GemmPlan plan;
  plan.family = GemmFamily::Tiled;
  plan.halfCopies = args.roundTo != Elem::F32;
  MatmulArgs run = args;
  if (plan.halfCopies) run.aType = args.roundTo, run.roundTo = Elem::F32, run.a.offset = run.b.offset = 0;
  plan.tiled = matmulTiledParams(run, limits);
  if (!args.tile && tuning) plan.tiled = withTunedTile(plan.tiled, run, limits, *tuning);
  const codegen::GemmTile& t = plan.tiled.tile;
  plan.grid = {(args.N + t.BN - 1) / t.BN, (args.M + t.BM - 1) / t.BM, args.batch};
  return plan;
}

codegen::GemmTiledParams matmulTiledPlan(const MatmulArgs& args, const vk::Device& device) {
  const DeviceProfile profile = deviceProfile(device);
  return tiledGemmPlan(args, profile.limits, profile.tuning).tiled;
}

} // namespace helios::ops
