#include "codegen/kernels/half_pack.hpp"

namespace helios::codegen {

using namespace helios::spv;

Value loadF32AsHalf8(FunctionBuilder& f, const Buffer& vec4s, Value i) {
  Module& m = f.module();
  const TypeId hvec4 = m.vectorType(m.f16(), 4), uvec2 = m.vectorType(m.u32(), 2);
  const auto half4 = [&](Value at) { return f.bitcast(f.convert(f.loadAt(vec4s, at), hvec4), uvec2); };
  const Value g = f.imul(i, f.u32(2));
  return f.construct(m.vectorType(m.u32(), 4), {half4(g), half4(f.iadd(g, f.u32(1)))});
}

} // namespace helios::codegen
