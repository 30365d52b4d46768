#include "codegen/kernels/column_sum.hpp"

#include <stdexcept>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

const char* tag(ColumnSumPass pass) {
  return pass == ColumnSumPass::Blocks ? "blocks" : "finish";
}

} // namespace

std::string ColumnSumParams::cacheKey() const {
  return std::string("column_sum:") + tag(pass) + ":f32:wg" + std::to_string(localSize) +
         (isHalf(in) ? std::string(":") + elemName(in) : "") + (planes ? ":planes" : "");
}

std::string ColumnSumParams::name() const {
  return std::string("column_sum_") + tag(pass) + (planes ? "_planes" : "") + "_" + elemName(in) + "_wg" +
         std::to_string(localSize);
}

Kernel generateColumnSum(const ColumnSumParams& p) {
  if (p.localSize == 0 || p.localSize > 1024 || p.localSize % 32)
    throw std::invalid_argument(p.name() + ": localSize must be a multiple of 32 up to 1024");
  const bool blocks = p.pass == ColumnSumPass::Blocks;
  if (isHalf(p.in) && !blocks)
    throw std::invalid_argument(p.name() + ": only the block pass reads 16-bit input");
  if (p.planes && blocks) throw std::invalid_argument(p.name() + ": planes are for the finish pass");
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const Buffer in = m.storageBuffer(0, elemStorageType(m, p.in), Access::ReadOnly);
  const auto load = [&](FunctionBuilder& f, Value at) {
    const Value x = f.loadAt(in, at);
    return isHalf(p.in) ? elemToF32(f, p.in, x) : x;
  };
  const Buffer out = m.storageBuffer(1, f32, blocks ? Access::WriteOnly : Access::ReadWrite);
  const PushConstants pc = declarePush<ColumnSumPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});

  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1);
  const Value acc = f.variable(f32, f.f32(0.0f));
  if (blocks) {
    const Value j = f.globalId(0);
    f.ifThen(f.lt(j, cols), [&] {
      const Value blockRows = f.loadPush(pc, 2), b = f.workgroupId(1);
      const Value first = f.imul(b, blockRows);
      const Value last = f.umin(rows, f.iadd(first, blockRows));
      f.forRange(first, last,
                 [&](Value r) { f.store(acc, f.fadd(f.load(acc), load(f, f.iadd(f.imul(r, cols), j)))); });
      f.storeAt(out, f.iadd(f.imul(b, cols), j), f.load(acc));
    });
  } else {
    // 32 columns per workgroup, localSize/32 lanes per column: lane w sums blocks w, w + lanes, ... in order,
    // then lane 0 adds the lanes' sums in lane order (fixed order: deterministic; one invocation per column
    // walking every block was latency-bound).
    const uint32_t lanes = p.localSize / 32;
    const Value part = m.workgroupArray(f32, p.localSize);
    const Value lid = f.localId(0), w = f.udiv(lid, f.u32(32)), jj = f.rem(lid, f.u32(32));
    const Value j = f.iadd(f.imul(f.workgroupId(0), f.u32(32)), jj);
    // Planes: workgroup row p sums plane p (rows*cols floats further on) into out[p * outStride + j].
    const Value plane = p.planes ? f.workgroupId(1) : Value{};
    const Value inBase = p.planes ? f.imul(plane, f.imul(rows, cols)) : Value{};
    const auto inAt = [&](Value b) {
      const Value at = f.iadd(f.imul(b, cols), j);
      return p.planes ? f.iadd(inBase, at) : at;
    };
    const Value outJ = p.planes ? f.iadd(f.imul(plane, f.loadPush(pc, 2)), j) : j;
    f.ifThen(f.lt(j, cols), [&] {
      f.forRange(w, rows, f.u32(lanes),
                 [&](Value b) { f.store(acc, f.fadd(f.load(acc), f.loadAt(in, inAt(b)))); });
    });
    f.store(f.accessChain(part, {lid}), f.load(acc));
    f.workgroupBarrier();
    f.ifThen(f.logicalAnd(f.eq(w, f.u32(0)), f.lt(j, cols)), [&] {
      Value total = f.load(f.accessChain(part, {jj}));
      for (uint32_t l = 1; l < lanes; ++l)
        total = f.fadd(total, f.load(f.accessChain(part, {f.iadd(jj, f.u32(32 * l))})));
      const Value beta = f.loadPush(pc, 3);
      f.ifThenElse(
          f.ne(beta, f.f32(0.0f)), [&] { f.storeAt(out, outJ, f.fma(beta, f.loadAt(out, outJ), total)); },
          [&] { f.storeAt(out, outJ, total); });
    });
  }
  f.ret();
  return linearKernel(p.name(), p.cacheKey(), m.build(), 2, pc.size, p.localSize);
}

void registerColumnSum(KernelRegistry& registry) {
  registry.add({"columns.sum_f32", "column sums of a row-major matrix: block partial sums, then their sum",
                [] { return generateColumnSum({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (auto pass : {ColumnSumPass::Blocks, ColumnSumPass::Finish})
                    for (uint32_t wg : {64u, 256u})
                      ks.push_back(generateColumnSum({pass, wg}));
                  ks.push_back(generateColumnSum({ColumnSumPass::Finish, 1024}));
                  ks.push_back(generateColumnSum({ColumnSumPass::Blocks, 256, Elem::F16}));
                  ks.push_back(generateColumnSum({ColumnSumPass::Blocks, 256, Elem::BF16}));
                  for (uint32_t wg : {64u, 256u, 1024u})
                    ks.push_back(generateColumnSum({ColumnSumPass::Finish, wg, Elem::F32, true}));
                  return ks;
                }});
}

} // namespace helios::codegen
