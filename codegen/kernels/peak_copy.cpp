#include "codegen/kernels/peak_copy.hpp"

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

std::string PeakCopyParams::cacheKey() const {
  return "peak_copy:wg" + std::to_string(localSize);
}

Kernel generatePeakCopy(const PeakCopyParams& p) {
  Module m;
  const TypeId uvec4 = m.vectorType(m.u32(), 4);
  const Buffer src = m.storageBuffer(0, uvec4, Access::ReadOnly);
  const Buffer dst = m.storageBuffer(1, uvec4, Access::WriteOnly);
  const PushConstants pc = declarePush<PeakCopyPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value stride = f.imul(f.builtin(BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  f.forRange(f.globalId(0), f.loadPush(pc, 0), stride, [&](Value i) {
    f.storeAt(dst, i, f.loadAt(src, i, MemoryAccess::aligned(16)), MemoryAccess::aligned(16));
  });
  f.ret();
  return linearKernel("peak_copy_wg" + std::to_string(p.localSize), p.cacheKey(), m.build(), 2, pc.size,
                      p.localSize);
}

void registerPeakCopy(KernelRegistry& registry) {
  registry.add({"peak.copy",
                "memory bandwidth: a 16-byte vector copy in a grid-stride loop",
                [] { return generatePeakCopy({}); },
                {}});
}

} // namespace helios::codegen
