#include "codegen/kernels/push_block.hpp"

#include "codegen/spirv/module.hpp"

#include <vector>

namespace helios::codegen {

spv::PushConstants declarePush(spv::Module& m, std::span<const PushScalar> members) {
  std::vector<spv::TypeId> types;
  for (PushScalar s : members)
    types.push_back(s == PushScalar::U32 ? m.u32() : s == PushScalar::I32 ? m.i32() : m.f32());
  return m.pushConstants(types);
}

} // namespace helios::codegen
