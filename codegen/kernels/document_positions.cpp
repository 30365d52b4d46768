#include "codegen/kernels/document_positions.hpp"

#include "codegen/spirv/builder.hpp"

#include <stdexcept>

namespace helios::codegen {

using spv::FunctionBuilder;
using spv::Value;

std::string DocumentPositionsParams::cacheKey() const {
  return "document_positions:wg" + std::to_string(localSize);
}

Kernel generateDocumentPositions(const DocumentPositionsParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("document_positions: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  spv::Module m;
  const spv::Buffer ids = m.storageBuffer(0, m.i32(), spv::Access::ReadOnly);
  const spv::Buffer pos = m.storageBuffer(1, m.i32(), spv::Access::WriteOnly);
  const spv::PushConstants pc = declarePush<DocumentPositionsPush>(m);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value tokens = f.loadPush(pc, 0), T = f.loadPush(pc, 1), eot = f.loadPush(pc, 2);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  const Value start = f.variable(m.u32());
  f.forRange(f.globalId(0), tokens, stride, [&](Value t) {
    const Value first = f.imul(f.udiv(t, T), T);
    f.store(start, first);
    f.forRange(first, t, [&](Value u) {
      f.ifThen(f.eq(f.loadAt(ids, u), eot), [&] { f.store(start, f.iadd(u, f.u32(1))); });
    });
    f.storeAt(pos, t, f.bitcast(f.isub(t, f.load(start)), m.i32()));
  });
  f.ret();
  return linearKernel("document_positions_wg" + std::to_string(p.localSize), p.cacheKey(), m.build(), 2,
                      pc.size, p.localSize);
}

void registerDocumentPositions(KernelRegistry& registry) {
  registry.add({"document_positions",
                "positions restarting after each end-of-text token, per sequence (sequence packing)",
                [] { return generateDocumentPositions({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t wg : {32u, 64u, 256u, 1024u})
                    ks.push_back(generateDocumentPositions({wg}));
                  return ks;
                }});
}

} // namespace helios::codegen
