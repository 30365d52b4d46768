#include "engine/ops/matmul_tiled.hpp"

#include <array>

#include "engine/ops/device_tuning.hpp"
#include "engine/ops/elementwise.hpp"

namespace helios::ops {

using codegen::Elem;

MatmulArgs withHalfCopies(Executor& exec, const MatmulArgs& args) {
  const uint64_t M = args.M, N = args.N, K = args.K;
  const auto copy = [&](vk::BufferRange src, std::optional<uint32_t> stride, uint64_t dense,
                        const char* what) {
    const uint64_t extent =
        args.batch > 1 ? (args.batch - 1) * uint64_t{batchStride(stride, dense)} + dense : dense;
    const vk::BufferRange range = exec.scratch(extent * 2, what);
    cast(exec, src, range, static_cast<uint32_t>(extent), Elem::F32, args.roundTo);
    return range;
  };
  MatmulArgs h = args;
  h.a = copy(args.a, args.strideA, M * K, "matmul A rounded to 16 bits");
  h.b = copy(args.b, args.strideB, K * N, "matmul B rounded to 16 bits");
  h.aType = args.roundTo;
  h.roundTo = Elem::F32;
  return h;
}

void runTiledGemm(Executor& exec, const GemmPlan& plan, const MatmulArgs& in) {
  const MatmulArgs args = plan.halfCopies ? withHalfCopies(exec, in) : in;
  const codegen::GemmDeviceLimits limits = gemmDeviceLimits(exec.context().device());
  const codegen::GemmTiledParams& params = plan.tiled;
  params.validate(limits); // a forced tile that does not fit throws here, before any pipeline exists
  const vk::Pipeline& pipeline = exec.pipeline(
      params, [&](const codegen::GemmTiledParams& p) { return codegen::generateGemmTiled(p, limits); });
  const uint64_t M = args.M, N = args.N, K = args.K;
  const codegen::GemmTiledPush push{args.M,
                                    args.N,
                                    args.K,
                                    args.alpha,
                                    args.beta,
                                    batchStride(args.strideA, M * K),
                                    batchStride(args.strideB, K * N),
                                    batchStride(args.strideC, M * N)};
  const Access cAccess = args.beta != 0.0f ? Access::ReadWrite : Access::Write;
  std::array<Binding, 4> bindings{Binding{args.a, Access::Read}, Binding{args.b, Access::Read},
                                  Binding{args.c, cAccess}, Binding{args.bias, Access::Read}};
  const size_t numBindings = params.bias ? 4 : 3;
  exec.dispatch(pipeline, std::span<const Binding>(bindings.data(), numBindings), &push,
                pipeline.pushConstantBytes, plan.grid);
}

void runTiledGemm(Executor& exec, const MatmulArgs& args) {
  const vk::Device& device = exec.context().device();
  runTiledGemm(exec, tiledGemmPlan(args, gemmDeviceLimits(device), &deviceTuning(device)), args);
}

} // namespace helios::ops
