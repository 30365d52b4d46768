// Cooperative-matrix GEMM on workgroup-scope matrices (VK_NV_cooperative_matrix2: workgroup scope, flexible
// dimensions). The kernel, in order:
//
//   setup:     tile origin (swizzled workgroup id), batch offsets, accumulator = 0
//   main loop: for kt in K / BK: load A's BM x BK slice and B's BK x BN slice straight from global memory as
//              workgroup-scope matrices (pointer + stride loads, or slices of tensor layouts), MulAdd into
//              the one BM x BN accumulator the workgroup owns
//   epilogue:  shared with the subgroup kernel (gemm_coop_parts): alpha, beta * C, bias, GELU, store
//
// The driver decides how the workgroup's invocations share the matrices and how operands are staged, so the
// kernel declares no shared memory and has no barriers of its own.
#include "codegen/kernels/gemm_coop_nv2.hpp"

#include <functional>
#include <optional>

#include "codegen/kernels/gemm_coop_parts.hpp"
#include "codegen/kernels/push_block.hpp"

namespace helios::codegen {

using namespace helios::spv;

std::vector<uint32_t> buildGemmCoopWorkgroup(const GemmCoopParams& p, uint32_t& pushBytes) {
  Module m;
  const TypeId u32 = m.u32(), f16 = m.f16(), f32 = m.f32(), uvec4 = m.vectorType(u32, 4);
  const TypeId ta = m.coopMatrixType(f16, p.BM, p.BK, CoopUse::MatrixAKHR, Scope::Workgroup);
  const TypeId tb = m.coopMatrixType(f16, p.BK, p.BN, CoopUse::MatrixBKHR, Scope::Workgroup);
  const TypeId tc = m.coopMatrixType(f32, p.BM, p.BN, CoopUse::MatrixAccumulatorKHR, Scope::Workgroup);
  const TypeId tcOut =
      p.halfC() ? m.coopMatrixType(f16, p.BM, p.BN, CoopUse::MatrixAccumulatorKHR, Scope::Workgroup) : tc;
  // Pointer loads read A and B as 16-byte vectors (same bindings and alignment rules as the subgroup
  // kernel: strides and offsets in vectors of 8 halves); tensor-layout loads read them as halves.
  const TypeId operand = p.tensorLayouts ? f16 : uvec4;
  const Buffer a = m.storageBuffer(0, operand, Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, operand, Access::ReadOnly);
  const Buffer c =
      m.storageBuffer(2, p.halfC() ? f16 : f32, p.alphaBeta ? Access::ReadWrite : Access::WriteOnly);
  Buffer bias;
  if (p.bias) bias = m.storageBuffer(3, p.halfC() ? f16 : f32, Access::ReadOnly);
  const PushConstants pc = declarePush<GemmCoopPush>(m);
  pushBytes = pc.size;
  FunctionBuilder& f = m.entryPoint("main", {p.invocations(), 1, 1});
  const auto k = [&](uint32_t v) { return f.u32(v); };

  const Value M = f.loadPush(pc, 0), N = f.loadPush(pc, 1), K = f.loadPush(pc, 2);
  const coop::TileIndex tile = coop::tileIndex(f, p.groupM);
  const Value m0 = f.imul(tile.m, k(p.BM)), n0 = f.imul(tile.n, k(p.BN));
  const coop::BatchOffsets batch = coop::batchOffsets(f, pc, p.batched);
  const Value acc = f.variable(tc);
  f.store(acc, f.coopFill(tc, f.f32(0.0f)));
  const Value steps = f.udiv(K, k(p.BK));
  // The K walk, `unroll` slices per trip (straight-line code the driver can software-pipeline: with one
  // slice per trip its loads and MulAdds serialise), then the remaining slices one by one.
  const auto walkK = [&](const std::function<void(Value)>& slice) {
    const uint32_t u = p.unroll; // validate() keeps it in 1..16
    const Value full = u > 1 ? f.imul(f.udiv(steps, k(u)), k(u)) : k(0);
    if (u > 1)
      f.forRange(k(0), full, k(u), [&](Value kt) {
        for (uint32_t j = 0; j < u; ++j)
          slice(j ? f.iadd(kt, k(j)) : kt);
      });
    f.forRange(full, steps, slice);
  };

  if (p.tensorLayouts) {
    // A is M x K (or K x M, read through a transposing view), B is K x N (or N x K); each step loads the
    // slices at (m0, k0) and (k0, n0). Row strides are set explicitly with their low three bits cleared
    // (the policy guarantees multiples of 8), which tells the driver rows are 16-byte aligned.
    const TypeId layoutType = m.tensorLayoutType(2);
    const Value align = k(~7u);
    const auto layout = [&](Value rows, Value cols) {
      const Value l = f.tensorLayoutDimensions(f.createTensorLayout(layoutType), {rows, cols});
      return f.tensorLayoutStrides(l, {f.bitAnd(cols, align), k(1)});
    };
    const Value layoutA = p.transA ? layout(K, M) : layout(M, K);
    const Value layoutB = p.transB ? layout(N, K) : layout(K, N);
    std::optional<Value> transpose;
    if (p.transA || p.transB) transpose = f.createTensorView(m.tensorViewType(false, {1, 0}));
    const Value baseA = f.at(a, batch.a), baseB = f.at(b, batch.b);
    walkK([&](Value kt) {
      const Value k0 = f.imul(kt, k(p.BK));
      const Value sliceA = p.transA ? f.tensorLayoutSlice(layoutA, {{k0, k(p.BK)}, {m0, k(p.BM)}})
                                    : f.tensorLayoutSlice(layoutA, {{m0, k(p.BM)}, {k0, k(p.BK)}});
      const Value sliceB = p.transB ? f.tensorLayoutSlice(layoutB, {{n0, k(p.BN)}, {k0, k(p.BK)}})
                                    : f.tensorLayoutSlice(layoutB, {{k0, k(p.BK)}, {n0, k(p.BN)}});
      const Value fa = f.coopLoadTensor(ta, baseA, sliceA, p.transA ? transpose : std::nullopt);
      const Value fb = f.coopLoadTensor(tb, baseB, sliceB, p.transB ? transpose : std::nullopt);
      f.store(acc, f.coopMulAdd(fa, fb, f.load(acc)));
    });
  } else {
    const Value batchA = p.batched ? f.shr(batch.a, k(3)) : k(0),
                batchB = p.batched ? f.shr(batch.b, k(3)) : k(0);
    const Value mVecs = f.shr(M, k(3)), nVecs = f.shr(N, k(3)), kVecs = f.shr(K, k(3));
    // A: rows m0.. of an M x K matrix (row-major), or columns m0.. of a K x M one (column-major loads).
    const Value originA = f.iadd(batchA, p.transA ? f.shr(m0, k(3)) : f.imul(m0, kVecs));
    const Value stepA = p.transA ? f.imul(k(p.BK), mVecs) : k(p.BK / 8);
    const Value strideA = p.transA ? mVecs : kVecs;
    // B: columns n0.. of a K x N matrix (row-major), or rows n0.. of an N x K one (column-major loads).
    const Value originB = f.iadd(batchB, p.transB ? f.imul(n0, kVecs) : f.shr(n0, k(3)));
    const Value stepB = p.transB ? k(p.BK / 8) : f.imul(k(p.BK), nVecs);
    const Value strideB = p.transB ? kVecs : nVecs;
    const CoopLayout layoutA = p.transA ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR;
    const CoopLayout layoutB = p.transB ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR;
    walkK([&](Value kt) {
      const Value fa = f.coopLoad(ta, f.at(a, f.iadd(originA, f.imul(kt, stepA))), strideA, layoutA);
      const Value fb = f.coopLoad(tb, f.at(b, f.iadd(originB, f.imul(kt, stepB))), strideB, layoutB);
      f.store(acc, f.coopMulAdd(fa, fb, f.load(acc)));
    });
  }

  const coop::Epilogue e{
      p, m, f, tc, tcOut, c, bias, N, f.loadPush(pc, 3), f.loadPush(pc, 4), f.variable(tc)};
  coop::storeC(e, f.load(acc), f.iadd(batch.c, f.iadd(f.imul(m0, N), n0)), n0);
  f.ret();
  return m.build();
}

std::vector<GemmCoopParams> gemmCoopWorkgroupTilings(const std::vector<WorkgroupCoopShape>& shapes,
                                                     uint32_t subgroupSize) {
  struct T {
    uint32_t BM, BN, BK, invocations;
  };
  // Largest tiles first, fastest measured first (H100, 580 driver, 4096^3, tensor layouts, unrolled:
  // 128x256x32 261 TFLOP/s, 256x128x32 242, 128x128x64 213, 128x128x32 183); the 64x64 tiles serve small
  // and awkward problems.
  const T menu[] = {{128, 256, 32, 256}, {256, 128, 32, 256}, {128, 128, 64, 256},
                    {128, 128, 32, 256}, {64, 64, 32, 128},   {64, 64, 32, 64}};
  std::vector<GemmCoopParams> out;
  for (const T& t : menu)
    for (const WorkgroupCoopShape& s : shapes) {
      if (s.invocations != t.invocations || t.invocations % subgroupSize) continue;
      GemmCoopParams p;
      p.workgroupScope = true;
      p.coopM = s.M;
      p.coopN = s.N;
      p.coopK = s.K;
      p.setTiling({t.BM, t.BN, t.BK, 1, t.invocations / subgroupSize, 1});
      p.padA = p.padB = 0;
      p.subgroupSize = subgroupSize;
      try {
        p.validate();
        // K unrolled 8 slices per trip, tensor-layout loads first, then pointer loads; then the plain
        // one-slice loop (the first version, kept for comparison).
        p.unroll = 8;
        p.tensorLayouts = true;
        out.push_back(p);
        p.tensorLayouts = false;
        out.push_back(p);
        p.unroll = 1;
        out.push_back(p);
      } catch (const std::invalid_argument&) {
      }
      break;
    }
  return out;
}

} // namespace helios::codegen

namespace helios::codegen {

std::vector<WorkgroupCoopShape> h100WorkgroupCoopShapes() {
  return {{32, 32, 16, 256}, {32, 16, 16, 128}, {16, 16, 16, 64}, {16, 16, 16, 32}};
}

} // namespace helios::codegen
