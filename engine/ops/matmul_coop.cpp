#include "engine/ops/matmul_coop.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/ops/coop_stats.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/matmul_tiled.hpp"
#include "engine/ops/slice3d.hpp"

namespace helios::ops {

namespace {

using codegen::Elem;

// The coop kernel (or the tiled stand-in) on buffers that already have the plan's sizes.
struct Gemm {
  vk::BufferRange a, b, c, bias;
  uint32_t M, N, K, batch;
  uint32_t strideA, strideB, strideC;
};

void runGemm(Executor& exec, const Gemm& g, const GemmPlan& plan, const MatmulArgs& args,
             const CoopRunOptions& opt) {
  if (opt.tiledInner) {
    MatmulArgs t = args;
    t.a = g.a;
    t.b = g.b;
    t.c = g.c;
    t.bias = g.bias;
    t.M = g.M;
    t.N = g.N;
    t.K = g.K;
    t.batch = g.batch;
    t.strideA = g.strideA;
    t.strideB = g.strideB;
    t.strideC = g.strideC;
    t.kernel = MatmulKernel::Tiled;
    t.tile.reset();
    runTiledGemm(exec, t);
    return;
  }
  codegen::GemmCoopParams params = plan.coopParams;
  params.stagedStore = params.stagedStore && rowVectorAligned(params, g.c, g.strideC); // maybe a padded copy
  params.validate();
  if (params.edgeShift && !codegen::edgeShiftFits(params, g.M, g.N, g.K))
    throw std::logic_error("matmul: the edge-shifted coop kernel cannot run " + std::to_string(g.M) + "x" +
                           std::to_string(g.N) + "x" + std::to_string(g.K) + " on its " +
                           std::to_string(params.BM) + "x" + std::to_string(params.BN) + "x" +
                           std::to_string(params.BK) + " tile");
  const vk::Pipeline& pipeline =
      exec.pipeline(params, [](const codegen::GemmCoopParams& p) { return codegen::generateGemmCoop(p); });
  const codegen::GemmCoopPush push{g.M, g.N, g.K, args.alpha, args.beta, g.strideA, g.strideB, g.strideC};
  const Access cAccess = params.alphaBeta && args.beta != 0.0f ? Access::ReadWrite : Access::Write;
  std::vector<Binding> bindings{Binding{g.a, Access::Read}, Binding{g.b, Access::Read},
                                Binding{g.c, cAccess}};
  if (params.bias) bindings.push_back({g.bias, Access::Read});
  if (params.kSlices > 1) {
    // The partial tiles are per call; the counters are shared by every K-sliced GEMM on the context (zero
    // between dispatches), so their binding also orders such GEMMs one after another.
    const uint32_t tiles = codegen::gemmCoopTileCount(params, g.M, g.N);
    if (tiles > kMaxSlicedTiles)
      throw std::logic_error("matmul: " + std::to_string(tiles) + " K-sliced tiles, the counters hold " +
                             std::to_string(kMaxSlicedTiles));
    const vk::BufferRange partials =
        exec.scratch(codegen::gemmCoopPartialElements(params, g.M, g.N) * 4, "K-slice partial tiles");
    const vk::Buffer& counters = exec.context().zeroed("K-slice tile counters", kMaxSlicedTiles * 4);
    bindings.push_back({partials, Access::ReadWrite});
    bindings.push_back({subrange(counters.range(), 0, uint64_t{tiles} * 4), Access::ReadWrite});
  }
  exec.dispatch(pipeline, bindings, &push, sizeof(push), plan.grid);
}

// TN with K cut in S slices: slice s is rows [s*K/S, (s+1)*K/S) of both A (K x M) and B (K x N), so the
// slices are one batched GEMM into S partial M x N sums; then C = alpha * (sum of the partials) + beta * C,
// folded in by one elementwise pass (after C = beta * C when beta is not 0 or 1).
// (The plan's kernel is already the batched pass's: coopGemmPlan.)
void splitK(Executor& exec, const GemmPlan& plan, const MatmulArgs& args, const CoopRunOptions& opt) {
  const uint32_t S = plan.coop->splitK, Ks = args.K / S, M = args.M, N = args.N;
  const vk::BufferRange partials = exec.scratch(uint64_t{S} * M * N * 4, "split-K partial sums");
  MatmulArgs part = args;
  part.alpha = 1.0f;
  part.beta = 0.0f;
  part.K = Ks;
  part.batch = S;
  runGemm(exec, {args.a, args.b, partials, {}, M, N, Ks, S, Ks * M, Ks * N, M * N}, plan, part, opt);
  if (args.beta == 0.0f)
    fill(exec, args.c, M * N, 0.0f);
  else if (args.beta != 1.0f)
    scale(exec, args.c, args.c, M * N, args.beta);
  axpySlices(exec, args.alpha, partials, S, args.c, M * N);
}

void execute(Executor& exec, const GemmPlan& gemm, const MatmulArgs& args, const CoopRunOptions& opt) {
  const CoopPlan& plan = *gemm.coop;
  const uint64_t M = args.M, N = args.N, K = args.K;
  const uint32_t sA = batchStride(args.strideA, M * K), sB = batchStride(args.strideB, K * N),
                 sC = batchStride(args.strideC, M * N);
  const bool hasBias = args.bias.buffer != VK_NULL_HANDLE;
  if (plan.splitK > 1) {
    splitK(exec, gemm, args, opt);
    return;
  }
  if (plan.inner == CoopDecision::DirectCoop || plan.inner == CoopDecision::TransposedADirect ||
      plan.inner == CoopDecision::Bounded) {
    runGemm(exec, {args.a, args.b, args.c, args.bias, args.M, args.N, args.K, args.batch, sA, sB, sC}, gemm,
            args, opt);
    return;
  }

  // Padded: temporaries for whatever changes size.
  const uint32_t Mp = plan.Mp, Np = plan.Np, Kp = plan.Kp, batch = args.batch;
  const Elem outSlice = args.outType, inSlice = matmulOperands(args);
  const uint64_t outBytes = codegen::elemBytes(args.outType);
  struct Operand {
    vk::BufferRange range;
    uint32_t stride;
  };

  // Pads a row-major batch of rows x cols (dense batches, or one matrix broadcast with stride 0) to prows x
  // pcols.
  const auto pad = [&](vk::BufferRange src, uint32_t rows, uint32_t cols, uint32_t prows, uint32_t pcols,
                       uint32_t stride, Elem type, uint64_t elemBytes, const char* what) -> Operand {
    const uint32_t n = batch > 1 && stride == 0 ? 1u : batch;
    const uint32_t pstride = n == 1 && batch > 1 ? 0u : prows * pcols;
    if (rows == prows && cols == pcols) return {src, stride};
    const vk::BufferRange padded = exec.scratch(uint64_t{n} * prows * pcols * elemBytes, what);
    Slice3dShape s;
    s.batch = n;
    s.srcRows = rows;
    s.srcCols = cols;
    s.dstRows = prows;
    s.dstCols = pcols;
    slice3d(exec, src, padded, s, type);
    return {padded, pstride};
  };
  const Operand a = args.transA ? pad(args.a, args.K, args.M, Kp, Mp, sA, inSlice, 2, "coop padded A")
                                : pad(args.a, args.M, args.K, Mp, Kp, sA, inSlice, 2, "coop padded A");
  const Operand b = args.transB ? pad(args.b, args.N, args.K, Np, Kp, sB, inSlice, 2, "coop padded B")
                                : pad(args.b, args.K, args.N, Kp, Np, sB, inSlice, 2, "coop padded B");
  Operand bias{args.bias, 0};
  if (hasBias) bias = pad(args.bias, 1, args.N, 1, Np, 0, outSlice, outBytes, "coop padded bias");
  const bool cPadded = Mp != args.M || Np != args.N;
  Operand c{args.c, sC};
  if (cPadded) {
    if (args.beta != 0.0f)
      c = pad(args.c, args.M, args.N, Mp, Np, sC, outSlice, outBytes, "coop padded C");
    else {
      c = {exec.scratch(uint64_t{batch} * Mp * Np * outBytes, "coop padded C"), Mp * Np};
    }
  }
  runGemm(exec, {a.range, b.range, c.range, bias.range, Mp, Np, Kp, batch, a.stride, b.stride, c.stride},
          gemm, args, opt);
  if (cPadded) {
    Slice3dShape s;
    s.batch = batch;
    s.srcRows = Mp;
    s.srcCols = Np;
    s.dstRows = args.M;
    s.dstCols = args.N;
    slice3d(exec, c.range, args.c, s, outSlice);
  }
}

} // namespace

void runCoopGemm(Executor& exec, const GemmPlan& plan, const MatmulArgs& args, bool tiledInner) {
  CoopRunOptions opt;
  opt.tiledInner = tiledInner;
  const MatmulArgs run = plan.halfCopies ? withHalfCopies(exec, args) : args;
  if (plan.coop->decision != CoopDecision::Rewrite) {
    execute(exec, plan, run, opt);
    return;
  }
  MatmulArgs folded = run;
  folded.M = args.M * args.batch;
  folded.batch = 1;
  folded.strideA.reset();
  folded.strideB.reset();
  folded.strideC.reset();
  execute(exec, plan, folded, opt);
}

CoopPlan matmulCoop(Executor& exec, const MatmulArgs& args, const CoopRunOptions& opt, bool force) {
  const vk::Device& device = exec.context().device();
  const CoopDeviceInfo dev = opt.device ? *opt.device : coopDeviceInfo(device);
  const tuning::Tuning& tuned = opt.tuning ? *opt.tuning : deviceTuning(device);
  const CoopPlan plan = planMatmulCoop(args, dev, &tuned, opt.tiling ? &*opt.tiling : nullptr);
  if (force && !isCoop(plan.decision)) throw std::invalid_argument(coopRefusal(plan));
  if (opt.record) coopStats().record(plan);
  if (!isCoop(plan.decision)) {
    runTiledGemm(exec, args);
    return plan;
  }
  runCoopGemm(exec, coopGemmPlan(plan, args), args, opt.tiledInner);
  return plan;
}

} // namespace helios::ops
