#include "codegen/kernels/elem_io.hpp"

#include <stdexcept>

namespace helios::codegen {

using namespace helios::spv;

namespace {

TypeId lanesOf(Module& m, TypeId scalar, uint32_t lanes) {
  return lanes == 1 ? scalar : m.vectorType(scalar, lanes);
}

} // namespace

TypeId elemStorageType(Module& m, Elem e, uint32_t lanes) {
  switch (e) {
  case Elem::F32:
    return lanesOf(m, m.f32(), lanes);
  case Elem::F16:
    return lanesOf(m, m.f16(), lanes);
  case Elem::BF16:
    return lanesOf(m, m.intType(16, false), lanes);
  }
  throw std::logic_error("elemStorageType: unknown element type");
}

Value elemToF32(FunctionBuilder& f, Elem e, Value stored) {
  Module& m = f.module();
  if (e == Elem::BF16) return f.f32FromBF16(stored);
  return f.convert(stored, lanesOf(m, m.f32(), m.componentCount(stored.type)));
}

Value elemFromF32(FunctionBuilder& f, Elem e, Value x) {
  Module& m = f.module();
  const uint32_t lanes = m.componentCount(x.type);
  if (e == Elem::BF16) return f.convert(f.bf16FromF32(x), lanesOf(m, m.intType(16, false), lanes));
  return f.convert(x, elemStorageType(m, e, lanes));
}

TypeId halfCoopType(Module& m, Elem e, uint32_t rows, uint32_t cols, CoopUse use) {
  if (e == Elem::BF16) return m.bf16CoopMatrixType(rows, cols, use);
  if (e != Elem::F16)
    throw std::logic_error("halfCoopType: " + std::string(elemName(e)) + " is no 16-bit kind");
  return m.coopMatrixType(m.f16(), rows, cols, use);
}

} // namespace helios::codegen
