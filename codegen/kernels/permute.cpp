#include "codegen/kernels/permute.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

namespace {

// "f32", "bf16", "f32_f16": the type, or source and destination where they differ.
std::string typeName(const PermuteParams& p) {
  return p.src == p.dst ? elemName(p.src) : std::string(elemName(p.src)) + "_" + elemName(p.dst);
}

} // namespace

std::string PermuteParams::cacheKey() const {
  return "permute:" + typeName(*this) + (accumulate ? ":acc" : ":copy") + ":wg" + std::to_string(localSize) +
         (vec4 ? ":v4" : "");
}

Kernel generatePermute(const PermuteParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("permute: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  if (p.src != p.dst && (p.src != Elem::F32 || p.accumulate))
    throw std::invalid_argument(std::string("permute: ") + elemName(p.src) + " -> " + elemName(p.dst) +
                                ": types change only from f32 to a 16-bit kind, in copies");
  using spv::Value;
  spv::Module m;
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const uint32_t lanes = p.vec4 ? 4 : 1;
  const spv::TypeId srcElem = elemStorageType(m, p.src, lanes);
  const spv::TypeId dstElem = elemStorageType(m, p.dst, lanes);
  const spv::Buffer src = m.storageBuffer(0, srcElem, spv::Access::ReadOnly);
  const spv::Buffer dst =
      m.storageBuffer(1, dstElem, p.accumulate ? spv::Access::ReadWrite : spv::Access::WriteOnly);
  const spv::PushConstants pc = declarePush<PermutePush>(m);
  spv::FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value total = f.loadPush(pc, 0), n1 = f.loadPush(pc, 1), n2 = f.loadPush(pc, 2),
              n3 = f.loadPush(pc, 3);
  const Value srcOffset = f.loadPush(pc, 4);
  const Value s0 = f.loadPush(pc, 5), s1 = f.loadPush(pc, 6), s2 = f.loadPush(pc, 7), s3 = f.loadPush(pc, 8);
  const Value dstOffset = f.loadPush(pc, 9);
  const Value d0 = f.loadPush(pc, 10), d1 = f.loadPush(pc, 11), d2 = f.loadPush(pc, 12),
              d3 = f.loadPush(pc, 13);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  f.forRange(f.globalId(0), total, stride, [&](Value idx) {
    const Value i3 = f.rem(idx, n3);
    const Value r3 = f.udiv(idx, n3);
    const Value i2 = f.rem(r3, n2);
    const Value r2 = f.udiv(r3, n2);
    const Value i1 = f.rem(r2, n1);
    const Value i0 = f.udiv(r2, n1);
    Value s = f.iadd(srcOffset, f.imul(i0, s0));
    s = f.iadd(s, f.imul(i1, s1));
    s = f.iadd(s, f.imul(i2, s2));
    s = f.iadd(s, f.imul(i3, s3));
    Value d = f.iadd(dstOffset, f.imul(i0, d0));
    d = f.iadd(d, f.imul(i1, d1));
    d = f.iadd(d, f.imul(i2, d2));
    d = f.iadd(d, f.imul(i3, d3));
    const Value v = f.loadAt(src, s);
    if (p.accumulate && p.dst == Elem::BF16) {
      const Value old = f.loadAt(dst, d);
      f.storeAt(dst, d, elemFromF32(f, p.dst, f.fadd(elemToF32(f, p.dst, old), elemToF32(f, p.src, v))));
    } else if (p.accumulate) {
      const Value old = f.loadAt(dst, d);
      f.storeAt(dst, d, f.fadd(old, v));
    } else {
      f.storeAt(dst, d, srcElem == dstElem ? v : elemFromF32(f, p.dst, v));
    }
  });
  f.ret();
  std::string name = "permute_" + typeName(p) + (p.accumulate ? "_acc" : "_copy") + (p.vec4 ? "_v4" : "") +
                     "_wg" + std::to_string(p.localSize);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), 2, pc.size, p.localSize);
}

void registerPermute(KernelRegistry& registry) {
  registry.add(
      {"permute",
       "strided 4-D copy / accumulate (tensor permutes, QKV split and re-pack), f32/f16/bf16, f32 -> "
       "f16/bf16",
       [] { return generatePermute({}); },
       [] {
         std::vector<Kernel> ks;
         const std::pair<Elem, Elem> types[] = {{Elem::F32, Elem::F32},
                                                {Elem::F16, Elem::F16},
                                                {Elem::F32, Elem::F16},
                                                {Elem::BF16, Elem::BF16},
                                                {Elem::F32, Elem::BF16}};
         for (const auto& [src, dst] : types)
           for (bool acc : {false, true})
             for (uint32_t ls : {64u, 256u})
               for (bool v4 : {false, true})
                 if (!acc || src == dst) ks.push_back(generatePermute({src, dst, acc, ls, v4}));
         return ks;
       }});
}

} // namespace helios::codegen
