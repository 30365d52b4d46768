// bfloat16 as bits: f32 <-> bf16 with integer arithmetic, which every device runs (no bf16 type needed), and
// the coop lowering's bf16 matrices (uint16 bits, Module::bf16CoopMatrixType) converted through it. Widening
// is exact (the bits become the top half of an f32); narrowing rounds to nearest even, a NaN staying a quiet
// NaN, denormals and infinities kept as the bits say.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {

// uint32 with `n` components (a scalar for 1).
TypeId u32Like(Module& m, uint32_t n) {
  return n == 1 ? m.u32() : m.vectorType(m.u32(), n);
}

} // namespace

Value FunctionBuilder::bf16FromF32(Value x) {
  if (!m_.isFloat(x.type) || m_.typeInfo(m_.scalarTypeOf(x.type)).width != 32 || m_.isCoopMatrix(x.type))
    fail("bf16FromF32: expected an f32 scalar or vector, got " + m_.describe(x));
  const TypeId u = u32Like(m_, m_.componentCount(x.type));
  const auto k = [&](uint32_t v) { return m_.constant(u, v); };
  const Value bits = bitcast(x, u);
  const Value top = shr(bits, k(16));
  // Round to nearest even: add 0x7fff and the lowest bit kept, then keep the top half.
  const Value rounded = shr(iadd(bits, iadd(k(0x7fff), bitAnd(top, k(1)))), k(16));
  // A NaN keeps its top half, made quiet (rounding could carry its payload into the exponent: infinity).
  const Value nan = gt(bitAnd(bits, k(0x7fffffff)), k(0x7f800000));
  return select(nan, bitOr(top, k(0x40)), rounded);
}

Value FunctionBuilder::f32FromBF16(Value bits) {
  const TypeInfo& s = m_.typeInfo(m_.scalarTypeOf(bits.type));
  if (s.kind != TypeKind::Int || s.isSigned || (s.width != 16 && s.width != 32) || m_.isCoopMatrix(bits.type))
    fail("f32FromBF16: expected uint16 or uint32 bits (a scalar or vector), got " + m_.describe(bits));
  const uint32_t n = m_.componentCount(bits.type);
  const TypeId u = u32Like(m_, n);
  const Value wide = s.width == 16 ? convert(bits, u) : bits;
  return bitcast(shl(wide, m_.constant(u, 16)), n == 1 ? m_.f32() : m_.vectorType(m_.f32(), n));
}

// Lowered: a bf16 coop matrix to or from another float component type, slot by slot through f32.
Value FunctionBuilder::lowerBF16CoopConvert(Value v, TypeId to) {
  const TypeInfo &fi = m_.typeInfo(v.type), &ti = m_.typeInfo(to);
  const TypeId bits = m_.intType(16, false);
  return coopMap(
      to, {v},
      [&](const std::vector<Value>& x) {
        const Value f = fi.bfloat ? f32FromBF16(x[0]) : convert(x[0], m_.f32());
        return ti.bfloat ? convert(bf16FromF32(f), bits) : convert(f, ti.elem);
      },
      true);
}

} // namespace helios::spv
