#include "codegen/kernels/adamw.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

std::string AdamWParams::cacheKey() const {
  return "adamw:f32:wg" + std::to_string(localSize);
}

Kernel generateAdamW(const AdamWParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("adamw: localSize must be in [1, 1024], got " + std::to_string(p.localSize));
  using spv::Value;
  spv::Module m;
  const spv::TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const spv::Buffer pb = m.storageBuffer(0, f32, spv::Access::ReadWrite);
  const spv::Buffer mb = m.storageBuffer(1, f32, spv::Access::ReadWrite);
  const spv::Buffer vb = m.storageBuffer(2, f32, spv::Access::ReadWrite);
  const spv::Buffer gb = m.storageBuffer(3, f32, spv::Access::ReadOnly);
  const spv::PushConstants pc = declarePush<AdamWPush>(m);
  spv::FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value n = f.loadPush(pc, 0);
  const Value lr = f.loadPush(pc, 1), beta1 = f.loadPush(pc, 2), beta2 = f.loadPush(pc, 3);
  const Value eps = f.loadPush(pc, 4), wd = f.loadPush(pc, 5);
  const Value invBc1 = f.loadPush(pc, 6), invBc2 = f.loadPush(pc, 7), gradScale = f.loadPush(pc, 8);
  const Value one = f.f32(1.0f);
  const Value oneMinusB1 = f.fsub(one, beta1), oneMinusB2 = f.fsub(one, beta2);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  f.forRange(f.globalId(0), n, stride, [&](Value i) {
    const Value g = f.fmul(f.loadAt(gb, i), gradScale);
    const Value mNew = f.fadd(f.fmul(beta1, f.loadAt(mb, i)), f.fmul(oneMinusB1, g));
    const Value vNew = f.fadd(f.fmul(beta2, f.loadAt(vb, i)), f.fmul(oneMinusB2, f.fmul(g, g)));
    f.storeAt(mb, i, mNew);
    f.storeAt(vb, i, vNew);
    const Value pOld = f.loadAt(pb, i);
    const Value update =
        f.fadd(f.fdiv(f.fmul(mNew, invBc1), f.fadd(f.sqrt(f.fmul(vNew, invBc2)), eps)), f.fmul(wd, pOld));
    f.storeAt(pb, i, f.fsub(pOld, f.fmul(lr, update)));
  });
  f.ret();
  std::string name = "adamw_f32_wg" + std::to_string(p.localSize);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), 4, pc.size, p.localSize);
}

void registerAdamW(KernelRegistry& registry) {
  registry.add({"adamw", "in-place AdamW (bias-corrected, decoupled weight decay, gradient scale), f32",
                [] { return generateAdamW({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t ls : {64u, 256u})
                    ks.push_back(generateAdamW({ls}));
                  return ks;
                }});
}

} // namespace helios::codegen
