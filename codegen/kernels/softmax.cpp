#include "codegen/kernels/softmax.hpp"

namespace helios::codegen {

using namespace helios::spv;

std::string SoftmaxParams::cacheKey() const {
  return std::string("softmax:") + (pass == SoftmaxPass::Forward ? "fwd" : "bwd") +
         (causal ? ":causal" : ":dense") + (documents ? ":documents" : "") +
         ":f32:" + rowKernelKeySuffix(localSize, strategy);
}

namespace {

Kernel finish(Module& m, const SoftmaxParams& p, const PushConstants& pc, uint32_t numBuffers) {
  std::string name = std::string("softmax_") + (p.pass == SoftmaxPass::Forward ? "fwd" : "bwd") +
                     (p.causal ? "_causal" : "") + (p.documents ? "_documents" : "") + "_f32_wg" +
                     std::to_string(p.localSize) + "_" + toString(p.strategy);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), numBuffers, pc.size, p.localSize);
}

Kernel forward(const SoftmaxParams& p) {
  if (p.documents && !p.causal) throw BuildError("softmax: the documents mask needs the causal one");
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32();
  const Buffer x = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer y = m.storageBuffer(1, f32, Access::WriteOnly);
  const PushConstants pc = declarePush<SoftmaxForwardPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1), scale = f.loadPush(pc, 2);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); });
  const Value base = f.imul(row, cols);
  // Unmasked columns: [begin, valid).
  Value valid = cols, begin = f.u32(0);
  if (p.causal) {
    const Value queries = f.loadPush(pc, 3);
    const Value q = f.rem(row, queries);
    valid = f.umin(cols, f.iadd(q, f.iadd(f.isub(cols, queries), f.u32(1))));
    if (p.documents) {
      const Buffer pos = m.storageBuffer(2, m.i32(), Access::ReadOnly);
      const Value sequence = f.udiv(row, f.loadPush(pc, 4));
      const Value back = f.bitcast(f.loadAt(pos, f.iadd(f.imul(sequence, queries), q)), u32);
      begin = f.isub(f.isub(valid, f.u32(1)), f.umin(back, f.isub(valid, f.u32(1))));
    }
  }

  // Online max and sum of exp per invocation: when the max grows, rescale the sum.
  const Value mVar = f.variable(f32, f.f32(kMinFloat));
  const Value sVar = f.variable(f32, f.f32(0.0f));
  const auto update = [&](Value j) {
    const Value v = f.fmul(f.loadAt(x, f.iadd(base, j)), scale);
    const Value mOld = f.load(mVar);
    const Value mNew = f.fmax(mOld, v);
    const Value s = f.fadd(f.fmul(f.load(sVar), f.exp(f.fsub(mOld, mNew))), f.exp(f.fsub(v, mNew)));
    f.store(sVar, s);
    f.store(mVar, mNew);
  };
  forColumns(f, valid, p.localSize, [&](Value j) {
    if (p.documents)
      f.ifThen(f.ge(j, begin), [&] { update(j); });
    else
      update(j);
  });
  const Value mLocal = f.load(mVar);
  const Value rowMax = reducer.reduce(f, mLocal, Combine::Max);
  const Value sum = reducer.reduce(f, f.fmul(f.load(sVar), f.exp(f.fsub(mLocal, rowMax))), Combine::Sum);
  const Value inv = f.fdiv(f.f32(1.0f), sum);
  forColumns(f, cols, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    if (p.causal) {
      const Value seen = p.documents ? f.logicalAnd(f.ge(j, begin), f.lt(j, valid)) : f.lt(j, valid);
      f.ifThenElse(
          seen, [&] { f.storeAt(y, i, f.fmul(f.exp(f.fsub(f.fmul(f.loadAt(x, i), scale), rowMax)), inv)); },
          [&] { f.storeAt(y, i, f.f32(0.0f)); });
    } else {
      f.storeAt(y, i, f.fmul(f.exp(f.fsub(f.fmul(f.loadAt(x, i), scale), rowMax)), inv));
    }
  });
  f.ret();
  return finish(m, p, pc, p.documents ? 3 : 2);
}

Kernel backward(const SoftmaxParams& p) {
  if (p.causal || p.documents)
    throw BuildError("softmax: the backward pass has no causal variant (masked y is 0)");
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const Buffer y = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer dy = m.storageBuffer(1, f32, Access::ReadOnly);
  const Buffer dx = m.storageBuffer(2, f32, Access::WriteOnly);
  const PushConstants pc = declarePush<SoftmaxBackwardPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1), scale = f.loadPush(pc, 2);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); });
  const Value base = f.imul(row, cols);
  const Value acc = f.variable(f32, f.f32(0.0f));
  forColumns(f, cols, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    const Value yi = f.loadAt(y, i);
    const Value dyi = f.loadAt(dy, i);
    f.store(acc, f.fma(yi, dyi, f.load(acc)));
  });
  const Value dot = reducer.reduce(f, f.load(acc), Combine::Sum);
  forColumns(f, cols, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    const Value yi = f.loadAt(y, i);
    const Value dyi = f.loadAt(dy, i);
    f.storeAt(dx, i, f.fmul(f.fmul(yi, f.fsub(dyi, dot)), scale));
  });
  f.ret();
  return finish(m, p, pc, 3);
}

} // namespace

Kernel generateSoftmax(const SoftmaxParams& p) {
  checkRowLocalSize(p.localSize, "softmax");
  return p.pass == SoftmaxPass::Forward ? forward(p) : backward(p);
}

void registerSoftmax(KernelRegistry& registry) {
  registry.add(
      {"rows.softmax_f32",
       "softmax forward (dense / causal / causal within documents, scaled) and backward along the last axis",
       [] { return generateSoftmax({}); },
       [] {
         std::vector<Kernel> ks;
         for (uint32_t wg : {32u, 64u, 128u, 256u, 512u, 1024u})
           for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree}) {
             ks.push_back(generateSoftmax({SoftmaxPass::Forward, false, wg, s}));
             ks.push_back(generateSoftmax({SoftmaxPass::Forward, true, wg, s}));
             ks.push_back(generateSoftmax({SoftmaxPass::Forward, true, wg, s, true}));
             ks.push_back(generateSoftmax({SoftmaxPass::Backward, false, wg, s}));
           }
         return ks;
       }});
}

} // namespace helios::codegen
