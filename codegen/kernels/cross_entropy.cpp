#include "codegen/kernels/cross_entropy.hpp"

#include "codegen/kernels/elem_io.hpp"

namespace helios::codegen {

using namespace helios::spv;

std::string CrossEntropyParams::cacheKey() const {
  return std::string("cross_entropy:") + elemName(logits) +
         ":i32:" + rowKernelKeySuffix(localSize, strategy) + (vec4 ? ":v4" : "");
}

Kernel generateCrossEntropy(const CrossEntropyParams& p) {
  checkRowLocalSize(p.localSize, "cross_entropy");
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32(), i32 = m.i32();
  const TypeId f32v = p.vec4 ? m.vectorType(f32, 4) : f32; // one logit, or four
  const TypeId store = elemStorageType(m, p.logits, p.vec4 ? 4 : 1);
  const Buffer logits = m.storageBuffer(0, store, Access::ReadOnly);
  const Buffer targets = m.storageBuffer(1, i32, Access::ReadOnly);
  const Buffer loss = m.storageBuffer(2, f32, Access::WriteOnly);
  const Buffer dlogits = m.storageBuffer(3, store, Access::WriteOnly);
  const PushConstants pc = declarePush<CrossEntropyPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const auto logitAt = [&](Value i) { // i counts elements of `store` (logits, or groups of four)
    const Value v = f.loadAt(logits, i);
    return isHalf(p.logits) ? elemToF32(f, p.logits, v) : v;
  };
  const auto splat = [&](Value s) { return p.vec4 ? f.splat(f32v, s) : s; };

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), vocab = f.loadPush(pc, 1), gradScale = f.loadPush(pc, 2);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); });
  const Value width = p.vec4 ? f.shr(vocab, f.u32(2)) : vocab; // elements of `store` per row
  const Value base = f.imul(row, width);
  // As unsigned, a negative target is huge, so one compare covers both ends of [0, vocab).
  const Value target = f.bitcast(f.loadAt(targets, row), u32);
  const Value valid = f.lt(target, vocab);
  const Value scale = f.select(valid, gradScale, f.f32(0.0f));

  const Value mVar = f.variable(f32, f.f32(kMinFloat));
  const Value sVar = f.variable(f32, f.f32(0.0f));
  forColumns(f, width, p.localSize, [&](Value j) {
    const Value v = logitAt(f.iadd(base, j));
    const Value mOld = f.load(mVar);
    if (!p.vec4) {
      const Value mNew = f.fmax(mOld, v);
      f.store(sVar, f.fadd(f.fmul(f.load(sVar), f.exp(f.fsub(mOld, mNew))), f.exp(f.fsub(v, mNew))));
      f.store(mVar, mNew);
      return;
    }
    Value mx = f.extract(v, {0});
    for (uint32_t c = 1; c < 4; ++c)
      mx = f.fmax(mx, f.extract(v, {c}));
    const Value mNew = f.fmax(mOld, mx);
    const Value e = f.exp(f.fsub(v, splat(mNew)));
    const Value sum4 =
        f.fadd(f.fadd(f.extract(e, {0}), f.extract(e, {1})), f.fadd(f.extract(e, {2}), f.extract(e, {3})));
    f.store(sVar, f.fadd(f.fmul(f.load(sVar), f.exp(f.fsub(mOld, mNew))), sum4));
    f.store(mVar, mNew);
  });
  const Value mLocal = f.load(mVar);
  const Value rowMax = reducer.reduce(f, mLocal, Combine::Max);
  const Value sum = reducer.reduce(f, f.fmul(f.load(sVar), f.exp(f.fsub(mLocal, rowMax))), Combine::Sum);
  const Value inv = f.fdiv(f.f32(1.0f), sum);

  f.ifThen(f.eq(f.localId(0), f.u32(0)), [&] {
    const Value safeTarget = f.select(valid, target, f.u32(0));
    const Value picked = p.vec4 ? f.extractDynamic(logitAt(f.iadd(base, f.shr(safeTarget, f.u32(2)))),
                                                   f.bitAnd(safeTarget, f.u32(3)))
                                : logitAt(f.iadd(base, safeTarget));
    const Value l = f.fsub(f.fadd(rowMax, f.log(sum)), picked);
    f.storeAt(loss, row, f.select(valid, l, f.f32(0.0f)));
  });
  // Columns of element j: j (scalar), or 4j + {0, 1, 2, 3}.
  const TypeId u32v = p.vec4 ? m.vectorType(u32, 4) : u32;
  const Value lanes = p.vec4 ? m.constComposite(u32v, {f.u32(0), f.u32(1), f.u32(2), f.u32(3)}) : f.u32(0);
  const auto usplat = [&](Value s) { return p.vec4 ? f.splat(u32v, s) : s; };
  forColumns(f, width, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    const Value prob = f.fmul(f.exp(f.fsub(logitAt(i), splat(rowMax))), splat(inv));
    const Value cols = p.vec4 ? f.iadd(usplat(f.shl(j, f.u32(2))), lanes) : j;
    const Value onehot = f.select(f.eq(cols, usplat(target)), splat(f.f32(1.0f)), splat(f.f32(0.0f)));
    const Value d = f.fmul(f.fsub(prob, onehot), splat(scale));
    f.storeAt(dlogits, i, isHalf(p.logits) ? elemFromF32(f, p.logits, d) : d);
  });
  f.ret();

  std::string name = std::string("cross_entropy_") + elemName(p.logits) + (p.vec4 ? "_v4" : "") + "_wg" +
                     std::to_string(p.localSize) + "_" + toString(p.strategy);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), 4, pc.size, p.localSize);
}

void registerCrossEntropy(KernelRegistry& registry) {
  registry.add({"rows.cross_entropy_f32",
                "fused softmax + per-row loss + dlogits, int32 targets, ignore index",
                [] { return generateCrossEntropy({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t wg : {32u, 64u, 128u, 256u, 512u, 1024u})
                    for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree})
                      for (Elem logits : {Elem::F32, Elem::F16, Elem::BF16})
                        for (bool v4 : {false, true})
                          ks.push_back(generateCrossEntropy({wg, s, logits, v4}));
                  return ks;
                }});
}

} // namespace helios::codegen
