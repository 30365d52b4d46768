// The GEMM planner's order (gemm_plan.hpp): forced tiled kernel, coop policy, tiled fallback.
#include "engine/ops/gemm_plan.hpp"

#include <stdexcept>

namespace helios::ops {

using codegen::Elem;

std::string coopRefusal(const CoopPlan& plan) {
  return "matmul: coop GEMM not available for this problem (MatmulKernel::Coop): " + plan.reason;
}

GemmPlan coopGemmPlan(const CoopPlan& coop, const MatmulArgs& args) {
  GemmPlan plan;
  plan.family = GemmFamily::Coop;
  plan.coop = coop;
  // roundTo: the direct kernels round f32 operands as they stage them; padding works on 16-bit copies.
  const bool direct = coop.inner == CoopDecision::DirectCoop || coop.inner == CoopDecision::TransposedADirect;
  plan.halfCopies = args.roundTo != Elem::F32 && !direct;
  MatmulArgs run = args;
  if (plan.halfCopies) run.aType = args.roundTo, run.roundTo = Elem::F32, run.a.offset = run.b.offset = 0;
  if (coop.decision == CoopDecision::Rewrite) {
    run.M = args.M * args.batch, run.batch = 1;
    run.strideA.reset(), run.strideB.reset(), run.strideC.reset();
  }
  // The K slices run as one batched pass into f32 partial sums (alpha and beta come after, elementwise).
  if (coop.splitK > 1) run.alpha = 1.0f, run.beta = 0.0f, run.batch = coop.splitK;
  plan.coopParams = coopKernelParams(coop, run);
  const bool padded = !direct && coop.inner != CoopDecision::Bounded;
  if (coop.splitK > 1) plan.coopParams.batched = true, plan.coopParams.kSlices = 1;
  const auto g =
      codegen::gemmCoopGroups(plan.coopParams, padded ? coop.Mp : run.M, padded ? coop.Np : run.N, run.batch);
  plan.grid = {g.x, g.y, g.z};
  return plan;
}

GemmPlan planGemm(const MatmulArgs& args, const DeviceProfile& profile) {
  const bool coop = args.kernel == MatmulKernel::Coop ||
                    (args.kernel == MatmulKernel::Auto && !args.tile && profile.coop.coopMatrix);
  if (!coop) return tiledGemmPlan(args, profile.limits, profile.tuning);
  const CoopPlan plan = planMatmulCoop(args, profile.coop, profile.tuning);
  if (isCoop(plan.decision)) return coopGemmPlan(plan, args);
  if (args.kernel == MatmulKernel::Coop) throw std::invalid_argument(coopRefusal(plan));
  GemmPlan tiled = tiledGemmPlan(args, profile.limits, profile.tuning);
  tiled.coop = plan;
  return tiled;
}

} // namespace helios::ops
