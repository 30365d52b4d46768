#include "codegen/kernels/half_pack.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

// bf16: a vec4 rounded, its pairs packed low element first into a uvec2.
Value packBF16x4(FunctionBuilder& f, Value v) {
  Module& m = f.module();
  const Value r = f.bf16FromF32(v);
  const Value even = f.shuffle(r, r, {0, 2}), odd = f.shuffle(r, r, {1, 3});
  return f.bitOr(even, f.shl(odd, m.constant(m.vectorType(m.u32(), 2), 16)));
}

// bf16: the four of one uvec2 (two per word, low first) widened to a vec4.
Value unpackBF16x4(FunctionBuilder& f, Value words) {
  Module& m = f.module();
  const TypeId uvec2 = m.vectorType(m.u32(), 2), vec2 = m.vectorType(m.f32(), 2);
  const Value low = f.bitcast(f.shl(words, m.constant(uvec2, 16)), vec2);
  const Value high = f.bitcast(f.bitAnd(words, m.constant(uvec2, 0xffff0000u)), vec2);
  return f.shuffle(low, high, {0, 2, 1, 3});
}

} // namespace

Value loadF32AsHalf8(FunctionBuilder& f, const Buffer& vec4s, Value i, Elem kind) {
  const Value g = f.imul(i, f.u32(2));
  return packHalf8(f, f.loadAt(vec4s, g), f.loadAt(vec4s, f.iadd(g, f.u32(1))), kind);
}

Value packHalf8(FunctionBuilder& f, Value lo, Value hi, Elem kind) {
  Module& m = f.module();
  if (kind == Elem::BF16)
    return f.construct(m.vectorType(m.u32(), 4), {packBF16x4(f, lo), packBF16x4(f, hi)});
  const TypeId hvec4 = m.vectorType(m.f16(), 4), uvec2 = m.vectorType(m.u32(), 2);
  const auto half4 = [&](Value v) { return f.bitcast(f.convert(v, hvec4), uvec2); };
  return f.construct(m.vectorType(m.u32(), 4), {half4(lo), half4(hi)});
}

std::pair<Value, Value> unpackHalf8(FunctionBuilder& f, Value h8, Elem kind) {
  Module& m = f.module();
  if (kind == Elem::BF16)
    return {unpackBF16x4(f, f.shuffle(h8, h8, {0, 1})), unpackBF16x4(f, f.shuffle(h8, h8, {2, 3}))};
  const TypeId hvec4 = m.vectorType(m.f16(), 4), vec4 = m.vectorType(m.f32(), 4);
  const auto f4 = [&](uint32_t i) {
    return f.convert(f.bitcast(f.shuffle(h8, h8, {2 * i, 2 * i + 1}), hvec4), vec4);
  };
  return {f4(0), f4(1)};
}

} // namespace helios::codegen
