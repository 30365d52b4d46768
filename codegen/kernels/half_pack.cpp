#include "codegen/kernels/half_pack.hpp"

namespace helios::codegen {

using namespace helios::spv;

Value loadF32AsHalf8(FunctionBuilder& f, const Buffer& vec4s, Value i) {
  const Value g = f.imul(i, f.u32(2));
  return packHalf8(f, f.loadAt(vec4s, g), f.loadAt(vec4s, f.iadd(g, f.u32(1))));
}

Value packHalf8(FunctionBuilder& f, Value lo, Value hi) {
  Module& m = f.module();
  const TypeId hvec4 = m.vectorType(m.f16(), 4), uvec2 = m.vectorType(m.u32(), 2);
  const auto half4 = [&](Value v) { return f.bitcast(f.convert(v, hvec4), uvec2); };
  return f.construct(m.vectorType(m.u32(), 4), {half4(lo), half4(hi)});
}

std::pair<Value, Value> unpackHalf8(FunctionBuilder& f, Value h8) {
  Module& m = f.module();
  const TypeId hvec4 = m.vectorType(m.f16(), 4), vec4 = m.vectorType(m.f32(), 4);
  const auto f4 = [&](uint32_t i) {
    return f.convert(f.bitcast(f.shuffle(h8, h8, {2 * i, 2 * i + 1}), hvec4), vec4);
  };
  return {f4(0), f4(1)};
}

} // namespace helios::codegen
