#include "codegen/kernels/optim_step.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

constexpr float kMaxFloat = 3.402823466e38f;

Kernel finish(Module& m, const OptimStepParams& p, const PushConstants& pc, uint32_t buffers) {
  std::string name = std::string("optim_") + toString(p.kernel) + (p.vec4 ? "_vec4" : "_f32") +
                     (p.param == Elem::BF16 ? "_bf16" : "") + "_wg" + std::to_string(p.localSize);
  if (p.kernel != OptimKernel::AdamW) name += std::string("_") + codegen::toString(p.strategy);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), buffers, pc.size, p.localSize);
}

Kernel generateGradSumsq(const OptimStepParams& p) {
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const Buffer g = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer partials = m.storageBuffer(1, f32, Access::WriteOnly);
  const PushConstants pc = declarePush<GradSumsqPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value n = f.loadPush(pc, 0), slot = f.loadPush(pc, 1);
  const Value stride = f.imul(f.builtin(BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  const Value acc = f.variable(f32, f.f32(0.0f));
  f.forRange(f.globalId(0), n, stride, [&](Value i) {
    const Value v = f.loadAt(g, i);
    f.store(acc, f.fadd(f.load(acc), f.fmul(v, v)));
  });
  const Value total = reducer.reduce(f, f.load(acc), Combine::Sum);
  f.ifThen(f.eq(f.localId(0), f.u32(0)), [&] { f.storeAt(partials, f.iadd(slot, f.workgroupId(0)), total); });
  f.ret();
  return finish(m, p, pc, 2);
}

Kernel generateControl(const OptimStepParams& p) {
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const Buffer partials = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer losses = m.storageBuffer(1, f32, Access::ReadOnly);
  const Buffer state = m.storageBuffer(2, f32, Access::ReadWrite);
  const Buffer control = m.storageBuffer(3, f32, Access::WriteOnly);
  const Buffer records = m.storageBuffer(4, f32, Access::WriteOnly);
  const PushConstants pc = declarePush<OptimControlPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value count = f.loadPush(pc, 0), lossCount = f.loadPush(pc, 1), slot = f.loadPush(pc, 2);
  const Value scale = f.loadPush(pc, 3), maxNorm = f.loadPush(pc, 4);
  const Value beta1 = f.loadPush(pc, 5), beta2 = f.loadPush(pc, 6), lossMul = f.loadPush(pc, 7);
  const Value lid = f.localId(0), step = f.u32(p.localSize);

  const Value acc = f.variable(f32, f.f32(0.0f));
  f.forRange(lid, count, step, [&](Value j) { f.store(acc, f.fadd(f.load(acc), f.loadAt(partials, j))); });
  const Value sumsq = reducer.reduce(f, f.load(acc), Combine::Sum);
  const Value lossAcc = f.variable(f32, f.f32(0.0f));
  f.forRange(lid, lossCount, step,
             [&](Value j) { f.store(lossAcc, f.fadd(f.load(lossAcc), f.loadAt(losses, j))); });
  const Value lossSum = reducer.reduce(f, f.load(lossAcc), Combine::Sum);

  f.ifThen(f.eq(lid, f.u32(0)), [&] {
    const Value one = f.f32(1.0f), zero = f.f32(0.0f);
    const Value finite = f.le(sumsq, f.f32(kMaxFloat)); // ordered: false for +inf and NaN
    const Value norm = f.fdiv(f.sqrt(sumsq), scale);
    const Value t = f.fadd(f.loadAt(state, f.u32(0)), f.select(finite, one, zero));
    f.storeAt(state, f.u32(0), t);
    const Value doClip = f.logicalAnd(f.gt(maxNorm, zero), f.gt(norm, maxNorm));
    const Value clip = f.select(doClip, f.fdiv(maxNorm, f.fadd(norm, f.f32(1e-6f))), one);
    const Value gradMul = f.select(finite, f.fdiv(clip, scale), zero);
    const Value tb = f.fmax(t, one);
    const Value invBc1 = f.fdiv(one, f.fsub(one, f.pow(beta1, tb)));
    const Value invBc2 = f.fdiv(one, f.fsub(one, f.pow(beta2, tb)));
    f.storeAt(control, f.u32(0), gradMul);
    f.storeAt(control, f.u32(1), f.select(finite, zero, one));
    f.storeAt(control, f.u32(2), invBc1);
    f.storeAt(control, f.u32(3), invBc2);
    const Value base = f.imul(slot, f.u32(kOptimRecordFloats));
    const Value fields[kOptimRecordFloats] = {
        f.fmul(lossSum, lossMul), norm, f.select(finite, one, zero), t, scale, clip, sumsq, zero};
    for (uint32_t k = 0; k < kOptimRecordFloats; ++k)
      f.storeAt(records, f.iadd(base, f.u32(k)), fields[k]);
  });
  f.ret();
  return finish(m, p, pc, 5);
}

// The hash of adamwRoundingBits, emitted (u32 arithmetic wraps as the host's does).
Value roundingBits(FunctionBuilder& f, Value seed, Value i) {
  Value h = f.bitXor(f.imul(i, f.u32(0x9e3779b9u)), seed);
  h = f.imul(f.bitXor(h, f.shr(h, f.u32(16))), f.u32(0x7feb352du));
  h = f.imul(f.bitXor(h, f.shr(h, f.u32(15))), f.u32(0x846ca68bu));
  return f.bitAnd(f.bitXor(h, f.shr(h, f.u32(16))), f.u32(0xffffu));
}

// An f32 rounded stochastically to bf16 bits (uint16): finite values add 16 random bits below the kept
// half (carrying into it with probability the discarded fraction); inf and NaN round to nearest.
Value roundBF16Stochastic(FunctionBuilder& f, Value x, Value random) {
  Module& m = f.module();
  const Value bits = f.bitcast(x, m.u32());
  const Value finite = f.lt(f.bitAnd(bits, f.u32(0x7fffffffu)), f.u32(0x7f800000u));
  const Value stochastic = f.shr(f.iadd(bits, random), f.u32(16));
  return f.convert(f.select(finite, stochastic, f.bf16FromF32(x)), m.intType(16, false));
}

Kernel generateAdamWCtrl(const OptimStepParams& p) {
  if (p.param == Elem::BF16 && p.vec4)
    throw std::invalid_argument("optim_step: bf16 AdamW steps one element");
  if (p.param == Elem::F16) throw std::invalid_argument("optim_step: parameters are f32 or bf16");
  const bool bf16 = p.param == Elem::BF16;
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const TypeId elem = p.vec4 ? m.vectorType(f32, 4) : f32; // vec4: 16-byte loads, a quarter of the steps
  const Buffer pb = m.storageBuffer(0, bf16 ? m.intType(16, false) : elem, Access::ReadWrite);
  const Buffer mb = m.storageBuffer(1, elem, Access::ReadWrite);
  const Buffer vb = m.storageBuffer(2, elem, Access::ReadWrite);
  const Buffer gb = m.storageBuffer(3, elem, Access::ReadWrite);
  const Buffer cb = m.storageBuffer(4, f32, Access::ReadOnly);
  const PushConstants pc = bf16 ? declarePush<AdamWCtrlRoundPush>(m) : declarePush<AdamWCtrlPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value n = f.loadPush(pc, 0), lr = f.loadPush(pc, 1), beta1 = f.loadPush(pc, 2);
  const Value beta2 = f.loadPush(pc, 3), eps = f.loadPush(pc, 4), wd = f.loadPush(pc, 5);
  const Value gradMul = f.loadAt(cb, f.u32(0)), skip = f.loadAt(cb, f.u32(1));
  const Value invBc1 = f.loadAt(cb, f.u32(2)), invBc2 = f.loadAt(cb, f.u32(3));
  const Value apply = f.eq(skip, f.f32(0.0f));
  const Value one = f.f32(1.0f);
  const Value oneMinusB1 = f.fsub(one, beta1), oneMinusB2 = f.fsub(one, beta2);
  const Value stride = f.imul(f.builtin(BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  // x * scalar for the element type; a scalar widened to it.
  const auto times = [&](Value x, Value s) { return p.vec4 ? f.vectorTimesScalar(x, s) : f.fmul(x, s); };
  const auto widen = [&](Value s) { return p.vec4 ? f.splat(elem, s) : s; };
  f.forRange(f.globalId(0), n, stride, [&](Value i) {
    // Every load before any store: the four reads of an element are in flight at once.
    const Value gRaw = f.loadAt(gb, i), mOld = f.loadAt(mb, i), vOld = f.loadAt(vb, i),
                pRaw = f.loadAt(pb, i);
    const Value pOld = bf16 ? f.f32FromBF16(pRaw) : pRaw;
    f.storeAt(gb, i, widen(f.f32(0.0f)));
    f.ifThen(apply, [&] {
      const Value g = times(gRaw, gradMul);
      const Value mNew = f.fadd(times(mOld, beta1), times(g, oneMinusB1));
      const Value vNew = f.fadd(times(vOld, beta2), times(f.fmul(g, g), oneMinusB2));
      f.storeAt(mb, i, mNew);
      f.storeAt(vb, i, vNew);
      const Value update = f.fadd(
          f.fdiv(times(mNew, invBc1), f.fadd(f.sqrt(times(vNew, invBc2)), widen(eps))), times(pOld, wd));
      const Value pNew = f.fsub(pOld, times(update, lr));
      f.storeAt(pb, i, bf16 ? roundBF16Stochastic(f, pNew, roundingBits(f, f.loadPush(pc, 6), i)) : pNew);
    });
  });
  f.ret();
  return finish(m, p, pc, 5);
}

} // namespace

const char* toString(OptimKernel k) {
  switch (k) {
  case OptimKernel::GradSumsq:
    return "grad_sumsq";
  case OptimKernel::Control:
    return "control";
  case OptimKernel::AdamW:
    return "adamw_ctrl";
  }
  return "?";
}

uint32_t adamwRoundingBits(uint32_t seed, uint32_t i) {
  uint32_t h = (i * 0x9e3779b9u) ^ seed;
  h = (h ^ (h >> 16)) * 0x7feb352du;
  h = (h ^ (h >> 15)) * 0x846ca68bu;
  return (h ^ (h >> 16)) & 0xffffu;
}

std::string OptimStepParams::cacheKey() const {
  std::string key = std::string("optim_step:") + toString(kernel) + ":f32:";
  if (kernel == OptimKernel::AdamW)
    return key + "wg" + std::to_string(localSize) + (vec4 ? ":vec4" : "") +
           (param == Elem::BF16 ? ":bf16" : "");
  return key + rowKernelKeySuffix(localSize, strategy);
}

Kernel generateOptimStep(const OptimStepParams& p) {
  switch (p.kernel) {
  case OptimKernel::GradSumsq:
    checkRowLocalSize(p.localSize, "optim_step");
    return generateGradSumsq(p);
  case OptimKernel::Control:
    checkRowLocalSize(p.localSize, "optim_step");
    return generateControl(p);
  case OptimKernel::AdamW:
    if (p.localSize == 0 || p.localSize > 1024)
      throw std::invalid_argument("optim_step: localSize must be in [1, 1024], got " +
                                  std::to_string(p.localSize));
    return generateAdamWCtrl(p);
  }
  throw std::invalid_argument("optim_step: unknown kernel");
}

void registerOptimStep(KernelRegistry& registry) {
  registry.add(
      {"optim_step",
       "optimizer step on the device: gradient sum of squares, clip/overflow control, AdamW with control",
       [] { return generateOptimStep({}); },
       [] {
         std::vector<Kernel> ks;
         for (auto k : {OptimKernel::GradSumsq, OptimKernel::Control})
           for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree})
             for (uint32_t wg : {64u, 256u})
               ks.push_back(generateOptimStep({k, wg, s}));
         ks.push_back(generateOptimStep({OptimKernel::AdamW, 256, ReduceStrategy::Subgroup}));
         ks.push_back(generateOptimStep({OptimKernel::AdamW, 256, ReduceStrategy::Subgroup, true}));
         ks.push_back(
             generateOptimStep({OptimKernel::AdamW, 256, ReduceStrategy::Subgroup, false, Elem::BF16}));
         return ks;
       }});
}

} // namespace helios::codegen
