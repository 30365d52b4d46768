#include "codegen/kernels/reduce.hpp"

namespace helios::codegen {

using namespace helios::spv;

const char* toString(RowReduceOp op) {
  switch (op) {
  case RowReduceOp::Sum:
    return "sum";
  case RowReduceOp::Max:
    return "max";
  case RowReduceOp::Mean:
    return "mean";
  }
  return "?";
}

std::string ReduceRowsParams::cacheKey() const {
  return std::string("reduce_rows:") + toString(op) + ":f32:" + rowKernelKeySuffix(localSize, strategy);
}

Kernel generateReduceRows(const ReduceRowsParams& p) {
  checkRowLocalSize(p.localSize, "reduce_rows");
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const Buffer x = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, f32, Access::WriteOnly);
  const PushConstants pc = declarePush<ReducePush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); }); // whole workgroup leaves together: barriers stay uniform
  const Value base = f.imul(row, cols);
  const bool isMax = p.op == RowReduceOp::Max;
  const Value acc = f.variable(f32, f.f32(isMax ? kMinFloat : 0.0f));
  forColumns(f, cols, p.localSize, [&](Value j) {
    const Value v = f.loadAt(x, f.iadd(base, j));
    f.store(acc, isMax ? f.fmax(f.load(acc), v) : f.fadd(f.load(acc), v));
  });
  Value total = reducer.reduce(f, f.load(acc), isMax ? Combine::Max : Combine::Sum);
  if (p.op == RowReduceOp::Mean) total = f.fdiv(total, f.convert(cols, f32));
  f.ifThen(f.eq(f.localId(0), f.u32(0)), [&] { f.storeAt(out, row, total); });
  f.ret();

  std::string name = std::string("reduce_rows_") + toString(p.op) + "_f32_wg" + std::to_string(p.localSize) +
                     "_" + toString(p.strategy);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), 2, pc.size, p.localSize);
}

void registerReduce(KernelRegistry& registry) {
  registry.add({"rows.reduce_f32", "sum/max/mean along the last axis, one workgroup per row",
                [] { return generateReduceRows({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (auto op : {RowReduceOp::Sum, RowReduceOp::Max, RowReduceOp::Mean})
                    for (uint32_t wg : {32u, 64u, 128u, 256u, 512u, 1024u})
                      for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree})
                        ks.push_back(generateReduceRows({op, wg, s}));
                  return ks;
                }});
}

} // namespace helios::codegen
