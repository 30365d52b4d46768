#include "codegen/kernels/cross_entropy.hpp"

namespace helios::codegen {

using namespace helios::spv;

std::string CrossEntropyParams::cacheKey() const {
  return std::string("cross_entropy:") + (f16 ? "f16" : "f32") +
         ":i32:" + rowKernelKeySuffix(localSize, strategy);
}

Kernel generateCrossEntropy(const CrossEntropyParams& p) {
  checkRowLocalSize(p.localSize, "cross_entropy");
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32(), i32 = m.i32();
  const TypeId store = p.f16 ? m.f16() : f32;
  const Buffer logits = m.storageBuffer(0, store, Access::ReadOnly);
  const Buffer targets = m.storageBuffer(1, i32, Access::ReadOnly);
  const Buffer loss = m.storageBuffer(2, f32, Access::WriteOnly);
  const Buffer dlogits = m.storageBuffer(3, store, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({u32, u32, f32});
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const auto logitAt = [&](Value i) {
    const Value v = f.loadAt(logits, i);
    return p.f16 ? f.convert(v, f32) : v;
  };

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), vocab = f.loadPush(pc, 1), gradScale = f.loadPush(pc, 2);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); });
  const Value base = f.imul(row, vocab);
  // As unsigned, a negative target is huge, so one compare covers both ends of [0, vocab).
  const Value target = f.bitcast(f.loadAt(targets, row), u32);
  const Value valid = f.lt(target, vocab);
  const Value scale = f.select(valid, gradScale, f.f32(0.0f));

  const Value mVar = f.variable(f32, f.f32(kMinFloat));
  const Value sVar = f.variable(f32, f.f32(0.0f));
  forColumns(f, vocab, p.localSize, [&](Value j) {
    const Value v = logitAt(f.iadd(base, j));
    const Value mOld = f.load(mVar);
    const Value mNew = f.fmax(mOld, v);
    f.store(sVar, f.fadd(f.fmul(f.load(sVar), f.exp(f.fsub(mOld, mNew))), f.exp(f.fsub(v, mNew))));
    f.store(mVar, mNew);
  });
  const Value mLocal = f.load(mVar);
  const Value rowMax = reducer.reduce(f, mLocal, Combine::Max);
  const Value sum = reducer.reduce(f, f.fmul(f.load(sVar), f.exp(f.fsub(mLocal, rowMax))), Combine::Sum);
  const Value inv = f.fdiv(f.f32(1.0f), sum);

  f.ifThen(f.eq(f.localId(0), f.u32(0)), [&] {
    const Value safeTarget = f.select(valid, target, f.u32(0));
    const Value picked = logitAt(f.iadd(base, safeTarget));
    const Value l = f.fsub(f.fadd(rowMax, f.log(sum)), picked);
    f.storeAt(loss, row, f.select(valid, l, f.f32(0.0f)));
  });
  forColumns(f, vocab, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    const Value prob = f.fmul(f.exp(f.fsub(logitAt(i), rowMax)), inv);
    const Value onehot = f.select(f.eq(j, target), f.f32(1.0f), f.f32(0.0f));
    const Value d = f.fmul(f.fsub(prob, onehot), scale);
    f.storeAt(dlogits, i, p.f16 ? f.convert(d, store) : d);
  });
  f.ret();

  Kernel k;
  k.name = std::string("cross_entropy_") + (p.f16 ? "f16" : "f32") + "_wg" + std::to_string(p.localSize) +
           "_" + toString(p.strategy);
  k.cacheKey = p.cacheKey();
  k.spirv = m.build();
  k.numBuffers = 4;
  k.pushConstantBytes = pc.size;
  k.localSize = {p.localSize, 1, 1};
  return k;
}

void registerCrossEntropy(KernelRegistry& registry) {
  registry.add({"rows.cross_entropy_f32",
                "fused softmax + per-row loss + dlogits, int32 targets, ignore index",
                [] { return generateCrossEntropy({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t wg : {32u, 64u, 128u, 256u, 512u, 1024u})
                    for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree})
                      for (bool half : {false, true})
                        ks.push_back(generateCrossEntropy({wg, s, half}));
                  return ks;
                }});
}

} // namespace helios::codegen
