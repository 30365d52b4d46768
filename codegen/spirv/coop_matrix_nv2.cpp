// The row operations of SPV_NV_cooperative_matrix2 on cooperative matrices: use conversions, row/column
// reductions and per-element functions. Each adds its capability and the extension when first used.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
constexpr const char* kExtension = "SPV_NV_cooperative_matrix2";
} // namespace

Value FunctionBuilder::coopConvert(Value matrix, TypeId to) {
  if (!m_.isCoopMatrix(matrix.type) || !m_.isCoopMatrix(to))
    fail("coopConvert: " + m_.describe(matrix) + " -> " + m_.typeName(to) + " needs cooperative matrices");
  const TypeInfo &fi = m_.typeInfo(matrix.type), &ti = m_.typeInfo(to);
  if (fi.count != ti.count || fi.cols != ti.cols || fi.scope != ti.scope)
    fail("coopConvert: shapes or scopes differ (" + m_.typeName(matrix.type) + " -> " + m_.typeName(to) +
         ")");
  if (fi.use == ti.use) return convert(matrix, to);
  requireCoopNotLowered("coopConvert");
  if (fi.use != CoopUse::MatrixAccumulatorKHR || ti.use == CoopUse::MatrixAccumulatorKHR)
    fail("coopConvert: only an accumulator converts to an A or B operand (" + m_.typeName(matrix.type) +
         " -> " + m_.typeName(to) + ")");
  m_.addCapability(Capability::CooperativeMatrixConversionsNV);
  m_.addExtension(kExtension);
  // A component change is an OpFConvert even across uses; ConvertNV only changes the use.
  if (fi.elem != ti.elem) return emitResult(Op::OpFConvert, to, {ref(matrix)});
  return emitResult(Op::OpCooperativeMatrixConvertNV, to, {ref(matrix)});
}

Value FunctionBuilder::coopReduce(TypeId resultType, Value matrix, CoopReduce mask,
                                  const FunctionId& combine) {
  requireCoopNotLowered("coopReduce");
  if (!m_.isCoopMatrix(matrix.type) || !m_.isCoopMatrix(resultType))
    fail("coopReduce: " + m_.describe(matrix) + " -> " + m_.typeName(resultType) +
         " needs cooperative matrices");
  const TypeInfo &mi = m_.typeInfo(matrix.type), &ri = m_.typeInfo(resultType);
  if (mi.use != CoopUse::MatrixAccumulatorKHR || ri.use != CoopUse::MatrixAccumulatorKHR ||
      mi.elem != ri.elem || mi.scope != ri.scope)
    fail("coopReduce: operand and result must be accumulators of one component type and scope (" +
         m_.typeName(matrix.type) + " -> " + m_.typeName(resultType) + ")");
  const auto bits = static_cast<uint32_t>(mask);
  const bool row = bits & static_cast<uint32_t>(CoopReduce::Row),
             col = bits & static_cast<uint32_t>(CoopReduce::Column);
  if (row && !col && ri.count != mi.count) fail("coopReduce: a row reduction keeps the row count");
  if (col && !row && ri.cols != mi.cols) fail("coopReduce: a column reduction keeps the column count");
  const TypeInfo& fn = m_.typeInfo(combine.functionType);
  if (combine.returnType != mi.elem || fn.members.size() != 2 || fn.members[0] != mi.elem ||
      fn.members[1] != mi.elem)
    fail("coopReduce: the combine function must map (" + m_.typeName(mi.elem) + ", " + m_.typeName(mi.elem) +
         ") to " + m_.typeName(mi.elem));
  m_.addCapability(Capability::CooperativeMatrixReductionsNV);
  m_.addExtension(kExtension);
  noteCallee(combine);
  return emitResult(Op::OpCooperativeMatrixReduceNV, resultType, {ref(matrix), bits, combine.id});
}

Value FunctionBuilder::coopPerElement(Value matrix, const FunctionId& fn, const std::vector<Value>& extra) {
  requireCoopNotLowered("coopPerElement");
  if (!m_.isCoopMatrix(matrix.type))
    fail("coopPerElement: " + m_.describe(matrix) + " is not a cooperative matrix");
  const TypeId elem = m_.scalarTypeOf(matrix.type);
  const TypeInfo& ft = m_.typeInfo(fn.functionType);
  bool ok = fn.returnType == elem && ft.members.size() == 3 + extra.size() && ft.members[0] == m_.u32() &&
            ft.members[1] == m_.u32() && ft.members[2] == elem;
  std::vector<uint32_t> ops{ref(matrix), fn.id};
  for (size_t k = 0; ok && k < extra.size(); ++k) {
    const TypeId want = m_.isCoopMatrix(extra[k].type) ? m_.scalarTypeOf(extra[k].type) : extra[k].type;
    ok = ft.members[3 + k] == want;
    ops.push_back(ref(extra[k]));
  }
  if (!ok)
    fail("coopPerElement: the function must map (u32 row, u32 col, " + m_.typeName(elem) + ", extra...) to " +
         m_.typeName(elem) + " with one parameter per extra operand");
  m_.addCapability(Capability::CooperativeMatrixPerElementOperationsNV);
  m_.addExtension(kExtension);
  noteCallee(fn);
  return emitResult(Op::OpCooperativeMatrixPerElementOpNV, matrix.type, ops);
}

} // namespace helios::spv
