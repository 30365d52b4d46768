#include "codegen/kernels/rope.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

std::string RopeParams::cacheKey() const {
  return "rope:f32:wg" + std::to_string(localSize) + (positions == RopePositions::Given ? ":given" : "");
}

Kernel generateRope(const RopeParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("rope: localSize must be in [1, 1024], got " + std::to_string(p.localSize));
  using spv::Value;
  spv::Module m;
  const spv::TypeId u32 = m.u32(), f32 = m.f32();
  const spv::Buffer x = m.storageBuffer(0, f32, spv::Access::ReadOnly);
  const spv::Buffer table = m.storageBuffer(1, f32, spv::Access::ReadOnly);
  const spv::Buffer y = m.storageBuffer(2, f32, spv::Access::WriteOnly);
  const bool given = p.positions == RopePositions::Given;
  const spv::Buffer positions = given ? m.storageBuffer(3, u32, spv::Access::ReadOnly) : spv::Buffer{};
  const spv::PushConstants pc = declarePush<RopePush>(m);
  spv::FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value pairs = f.loadPush(pc, 0), half = f.loadPush(pc, 1), T = f.loadPush(pc, 2);
  const Value sign = f.loadPush(pc, 3);
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  f.forRange(f.globalId(0), pairs, stride, [&](Value idx) {
    const Value i = f.rem(idx, half);
    const Value row = f.udiv(idx, half);
    Value t = f.rem(row, T);
    if (given) { // positions[b * T + t] of sequence b = row / sequenceRows
      const Value seq = f.udiv(row, f.loadPush(pc, 4));
      t = f.loadAt(positions, f.iadd(f.imul(seq, T), t));
    }
    const Value tab = f.imul(f.iadd(f.imul(t, half), i), f.u32(2));
    const Value c = f.loadAt(table, tab);
    const Value s = f.fmul(f.loadAt(table, f.iadd(tab, f.u32(1))), sign);
    const Value i1 = f.iadd(f.imul(row, f.imul(half, f.u32(2))), i);
    const Value i2 = f.iadd(i1, half);
    const Value x1 = f.loadAt(x, i1);
    const Value x2 = f.loadAt(x, i2);
    f.storeAt(y, i1, f.fsub(f.fmul(x1, c), f.fmul(x2, s)));
    f.storeAt(y, i2, f.fadd(f.fmul(x2, c), f.fmul(x1, s)));
  });
  f.ret();
  std::string name = "rope_f32_wg" + std::to_string(p.localSize) + (given ? "_given" : "");
  return linearKernel(std::move(name), p.cacheKey(), m.build(), given ? 4 : 3, pc.size, p.localSize);
}

void registerRope(KernelRegistry& registry) {
  registry.add({"rope", "rotary position embedding (rotate-half form), forward and backward (sign), f32",
                [] { return generateRope({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t ls : {64u, 256u})
                    for (auto positions : {RopePositions::RowInSequence, RopePositions::Given})
                      ks.push_back(generateRope({ls, positions}));
                  return ks;
                }});
}

} // namespace helios::codegen
