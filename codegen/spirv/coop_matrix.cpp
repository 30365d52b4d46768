// Cooperative matrix (SPV_KHR_cooperative_matrix) instructions.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
} // namespace

Value FunctionBuilder::coopLoad(TypeId matrixType, Value pointer, Value stride, CoopLayout layout,
                                MemoryAccess access) {
  if (!m_.isCoopMatrix(matrixType))
    fail("coopLoad: " + m_.typeName(matrixType) + " is not a cooperative matrix");
  if (!m_.isPointer(pointer.type)) fail("coopLoad: operand " + m_.describe(pointer) + " is not a pointer");
  requireInt("coopLoad stride", stride);
  if (m_.coopLowered()) return lowerCoopLoad(matrixType, pointer, stride, layout);
  std::vector<uint32_t> ops{ref(pointer), ref(m_.constU32(w(layout))), ref(stride)};
  for (uint32_t x : memoryOperands(pointer, access))
    ops.push_back(x);
  return emitResult(Op::OpCooperativeMatrixLoadKHR, matrixType, ops);
}

void FunctionBuilder::coopStore(Value pointer, Value matrix, Value stride, CoopLayout layout,
                                MemoryAccess access) {
  if (!m_.isCoopMatrix(matrix.type))
    fail("coopStore: " + m_.describe(matrix) + " is not a cooperative matrix");
  if (!m_.isPointer(pointer.type)) fail("coopStore: operand " + m_.describe(pointer) + " is not a pointer");
  requireInt("coopStore stride", stride);
  if (m_.coopLowered()) return lowerCoopStore(pointer, matrix, stride, layout);
  std::vector<uint32_t> ops{ref(pointer), ref(matrix), ref(m_.constU32(w(layout))), ref(stride)};
  for (uint32_t x : memoryOperands(pointer, access))
    ops.push_back(x);
  emit(Op::OpCooperativeMatrixStoreKHR, ops);
}

Value FunctionBuilder::coopMulAdd(Value a, Value b, Value c, uint32_t operands) {
  for (const Value* v : {&a, &b, &c})
    if (!m_.isCoopMatrix(v->type)) fail("coopMulAdd: " + m_.describe(*v) + " is not a cooperative matrix");
  const TypeInfo &ai = m_.typeInfo(a.type), &bi = m_.typeInfo(b.type), &ci = m_.typeInfo(c.type);
  if (ai.use != CoopUse::MatrixAKHR || bi.use != CoopUse::MatrixBKHR ||
      ci.use != CoopUse::MatrixAccumulatorKHR)
    fail("coopMulAdd: operands must have uses A, B, Accumulator (got " + m_.typeName(a.type) + ", " +
         m_.typeName(b.type) + ", " + m_.typeName(c.type) + ")");
  if (ai.count != ci.count || bi.cols != ci.cols || ai.cols != bi.count)
    fail("coopMulAdd: shapes do not compose (" + m_.typeName(a.type) + " x " + m_.typeName(b.type) + " + " +
         m_.typeName(c.type) + ")");
  if (m_.coopLowered()) {
    if (operands) fail("coopMulAdd: the coop lowering takes no MulAdd operands");
    return lowerCoopMulAdd(a, b, c);
  }
  std::vector<uint32_t> ops{ref(a), ref(b), ref(c)};
  if (operands) ops.push_back(operands);
  return emitResult(Op::OpCooperativeMatrixMulAddKHR, c.type, ops);
}

Value FunctionBuilder::coopLength(TypeId matrixType) {
  if (!m_.isCoopMatrix(matrixType))
    fail("coopLength: " + m_.typeName(matrixType) + " is not a cooperative matrix");
  if (m_.coopLowered()) return u32(m_.coopSlots(matrixType));
  return emitResult(Op::OpCooperativeMatrixLengthKHR, m_.u32(), {matrixType.id});
}

Value FunctionBuilder::coopFill(TypeId matrixType, Value scalar) {
  if (!m_.isCoopMatrix(matrixType))
    fail("coopFill: " + m_.typeName(matrixType) + " is not a cooperative matrix");
  return construct(matrixType, {scalar});
}

Value FunctionBuilder::coopScale(Value matrix, Value scalar) {
  if (!m_.isCoopMatrix(matrix.type))
    fail("coopScale: " + m_.describe(matrix) + " is not a cooperative matrix");
  if (m_.scalarTypeOf(matrix.type) != scalar.type)
    fail("coopScale: scalar type " + m_.typeName(scalar.type) + " differs from component type " +
         m_.typeName(m_.scalarTypeOf(matrix.type)));
  if (m_.coopLowered())
    return coopMap(matrix.type, {matrix, scalar},
                   [&](const std::vector<Value>& x) { return fmul(x[0], x[1]); });
  return emitResult(Op::OpMatrixTimesScalar, matrix.type, {ref(matrix), ref(scalar)});
}

} // namespace helios::spv
