#include "codegen/kernels/dropout.hpp"

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

#include <stdexcept>
#include <vector>

namespace helios::codegen {

namespace {

using spv::FunctionBuilder;
using spv::Value;

const char* kernelName(DropoutKernel k) {
  switch (k) {
  case DropoutKernel::Advance:
    return "advance";
  case DropoutKernel::Forward:
    return "forward";
  case DropoutKernel::Backward:
    return "backward";
  }
  return "?";
}

// dropoutHash(index, counter, stream), emitted.
Value hash(FunctionBuilder& f, Value index, Value counter, Value stream) {
  Value h = f.bitXor(f.bitXor(f.imul(index, f.u32(0x9e3779b1u)), f.imul(counter, f.u32(0x85ebca77u))),
                     f.imul(stream, f.u32(0xc2b2ae3du)));
  for (int round = 0; round < 2; ++round) {
    h = f.bitXor(h, f.shr(h, f.u32(16)));
    h = f.imul(h, f.u32(0x7feb352du));
    h = f.bitXor(h, f.shr(h, f.u32(15)));
    h = f.imul(h, f.u32(0x846ca68bu));
    h = f.bitXor(h, f.shr(h, f.u32(16)));
  }
  return h;
}

Kernel advance() {
  spv::Module m;
  const spv::Buffer counter = m.storageBuffer(0, m.u32(), spv::Access::ReadWrite);
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  f.storeAt(counter, f.u32(0), f.iadd(f.loadAt(counter, f.u32(0)), f.u32(1)));
  f.ret();
  return linearKernel("dropout_advance", DropoutParams{DropoutKernel::Advance}.cacheKey(), m.build(), 1, 0,
                      1);
}

// Forward and Backward: the same walk over the elements, different loads and stores.
Kernel apply(const DropoutParams& p) {
  spv::Module m;
  const bool backward = p.kernel == DropoutKernel::Backward;
  const Elem type = backward ? Elem::F32 : p.type;
  const spv::TypeId elem = elemStorageType(m, type);
  const spv::Buffer counter = m.storageBuffer(0, m.u32(), spv::Access::ReadOnly);
  const spv::Buffer src = m.storageBuffer(1, elem, spv::Access::ReadOnly);
  const spv::Buffer dst =
      m.storageBuffer(2, elem, backward ? spv::Access::ReadWrite : spv::Access::WriteOnly);
  const spv::PushConstants pc = declarePush<DropoutPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value count = f.loadPush(pc, 0), stream = f.loadPush(pc, 1), threshold = f.loadPush(pc, 2);
  const Value scale = f.loadPush(pc, 3), accumulate = f.ne(f.loadPush(pc, 4), f.u32(0));
  const Value step = f.loadAt(counter, f.u32(0));
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  f.forRange(f.globalId(0), count, stride, [&](Value i) {
    const Value keep = f.ge(hash(f, i, step, stream), threshold);
    Value v = elemToF32(f, type, f.loadAt(src, i));
    v = f.select(keep, f.fmul(v, scale), f.f32(0.0f));
    if (backward) v = f.fadd(v, f.select(accumulate, f.loadAt(dst, i), f.f32(0.0f)));
    f.storeAt(dst, i, elemFromF32(f, type, v));
  });
  f.ret();
  return linearKernel(std::string("dropout_") + kernelName(p.kernel) + "_" + elemName(p.type) + "_wg" +
                          std::to_string(p.localSize),
                      p.cacheKey(), m.build(), 3, pc.size, p.localSize);
}

} // namespace

std::string DropoutParams::cacheKey() const {
  if (kernel == DropoutKernel::Advance) return "dropout:advance";
  return std::string("dropout:") + kernelName(kernel) + ":" + elemName(type) + ":wg" +
         std::to_string(localSize);
}

Kernel generateDropout(const DropoutParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("dropout: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  if (p.kernel == DropoutKernel::Backward && p.type != Elem::F32)
    throw std::invalid_argument("dropout: the backward runs on f32 gradients");
  return p.kernel == DropoutKernel::Advance ? advance() : apply(p);
}

void registerDropout(KernelRegistry& registry) {
  registry.add(
      {"dropout",
       "dropout with a mask hashed from the element, a device step counter and a stream (LoRA inputs)",
       [] { return generateDropout({}); },
       [] {
         std::vector<Kernel> ks{generateDropout({DropoutKernel::Advance})};
         for (Elem t : {Elem::F32, Elem::F16, Elem::BF16})
           ks.push_back(generateDropout({DropoutKernel::Forward, t}));
         ks.push_back(generateDropout({DropoutKernel::Backward}));
         return ks;
       }});
}

} // namespace helios::codegen
