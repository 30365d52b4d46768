// Tensor layouts and views (SPV_NV_tensor_addressing) and the cooperative-matrix loads and stores that
// address memory through them (SPV_NV_cooperative_matrix2). Each adds its capabilities and extensions when
// first used.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
constexpr const char* kTensorExtension = "SPV_NV_tensor_addressing";
constexpr const char* kCoop2Extension = "SPV_NV_cooperative_matrix2";
} // namespace

TypeId Module::tensorLayoutType(uint32_t dims, TensorClampMode clamp) {
  if (dims == 0 || dims > 5)
    throw BuildError("tensorLayoutType: 1 to 5 dimensions, got " + std::to_string(dims));
  addCapability(Capability::TensorAddressingNV);
  addExtension(kTensorExtension);
  const Value d = constU32(dims), c = constU32(static_cast<uint32_t>(clamp));
  return makeType({static_cast<uint32_t>(Op::OpTypeTensorLayoutNV), d.id, c.id}, Op::OpTypeTensorLayoutNV,
                  {d.id, c.id}, {.kind = TypeKind::TensorLayout, .count = dims});
}

TypeId Module::tensorViewType(bool hasDimensions, const std::vector<uint32_t>& permutation) {
  const auto dims = static_cast<uint32_t>(permutation.size());
  std::vector<bool> seen(dims, false);
  for (uint32_t p : permutation) {
    if (p >= dims || seen[p])
      throw BuildError("tensorViewType: the permutation must list 0.." + std::to_string(dims - 1) +
                       " once each");
    seen[p] = true;
  }
  if (dims == 0 || dims > 5)
    throw BuildError("tensorViewType: 1 to 5 dimensions, got " + std::to_string(dims));
  addCapability(Capability::TensorAddressingNV);
  addExtension(kTensorExtension);
  std::vector<uint32_t> operands{constU32(dims).id, constBool(hasDimensions).id};
  for (uint32_t p : permutation)
    operands.push_back(constU32(p).id);
  std::vector<uint32_t> key{static_cast<uint32_t>(Op::OpTypeTensorViewNV)};
  key.insert(key.end(), operands.begin(), operands.end());
  return makeType(std::move(key), Op::OpTypeTensorViewNV, operands,
                  {.kind = TypeKind::TensorView, .count = dims, .cols = hasDimensions ? 1u : 0u});
}

Value FunctionBuilder::createTensorLayout(TypeId layoutType) {
  if (m_.typeInfo(layoutType).kind != TypeKind::TensorLayout)
    fail("createTensorLayout: " + m_.typeName(layoutType) + " is not a tensor layout type");
  return emitResult(Op::OpCreateTensorLayoutNV, layoutType, {});
}

Value FunctionBuilder::createTensorView(TypeId viewType) {
  if (m_.typeInfo(viewType).kind != TypeKind::TensorView)
    fail("createTensorView: " + m_.typeName(viewType) + " is not a tensor view type");
  return emitResult(Op::OpCreateTensorViewNV, viewType, {});
}

namespace {
// A layout operand and its per-dimension u32 values, checked; the operand words of the instruction.
std::vector<uint32_t> layoutOperands(FunctionBuilder& f, const Module& m, const char* what, Value layout,
                                     const std::vector<Value>& values, size_t perDim) {
  const TypeInfo& li = m.typeInfo(layout.type);
  if (li.kind != TypeKind::TensorLayout)
    throw BuildError(std::string(what) + ": " + m.describe(layout) + " is not a tensor layout");
  if (values.size() != li.count * perDim)
    throw BuildError(std::string(what) + ": " + std::to_string(values.size()) + " operands for a " +
                     std::to_string(li.count) + "-dimensional layout (want " +
                     std::to_string(li.count * perDim) + ")");
  std::vector<uint32_t> ops{f.ref(layout)};
  for (const Value& v : values) {
    const TypeInfo& vi = m.typeInfo(v.type);
    if (vi.kind != TypeKind::Int || vi.width != 32)
      throw BuildError(std::string(what) + ": " + m.describe(v) + " is not a 32-bit integer");
    ops.push_back(f.ref(v));
  }
  return ops;
}
} // namespace

Value FunctionBuilder::tensorLayoutDimensions(Value layout, const std::vector<Value>& dims) {
  return emitResult(Op::OpTensorLayoutSetDimensionNV, layout.type,
                    layoutOperands(*this, m_, "tensorLayoutDimensions", layout, dims, 1));
}

Value FunctionBuilder::tensorLayoutStrides(Value layout, const std::vector<Value>& strides) {
  return emitResult(Op::OpTensorLayoutSetStrideNV, layout.type,
                    layoutOperands(*this, m_, "tensorLayoutStrides", layout, strides, 1));
}

Value FunctionBuilder::tensorLayoutSlice(Value layout,
                                         const std::vector<std::pair<Value, Value>>& offsetSpan) {
  std::vector<Value> flat;
  for (const auto& [offset, span] : offsetSpan) {
    flat.push_back(offset);
    flat.push_back(span);
  }
  return emitResult(Op::OpTensorLayoutSliceNV, layout.type,
                    layoutOperands(*this, m_, "tensorLayoutSlice", layout, flat, 2));
}

namespace {
// The operands every tensor load/store shares after the matrix: layout, memory access (none), and the
// tensor-addressing operands (the view, if any).
void checkTensorAccess(const Module& m, const char* what, TypeId matrixType, Value pointer, Value layout,
                       const std::optional<Value>& view) {
  if (!m.isCoopMatrix(matrixType))
    throw BuildError(std::string(what) + ": " + m.typeName(matrixType) + " is not a cooperative matrix");
  if (!m.isPointer(pointer.type))
    throw BuildError(std::string(what) + ": " + m.describe(pointer) + " is not a pointer");
  const TypeInfo& li = m.typeInfo(layout.type);
  if (li.kind != TypeKind::TensorLayout)
    throw BuildError(std::string(what) + ": " + m.describe(layout) + " is not a tensor layout");
  if (view) {
    const TypeInfo& vi = m.typeInfo(view->type);
    if (vi.kind != TypeKind::TensorView || vi.count != li.count)
      throw BuildError(std::string(what) + ": " + m.describe(*view) +
                       " is not a tensor view of the layout's " + std::to_string(li.count) + " dimensions");
  }
}
// `head` (pointer, object, layout), then the memory operands (none) and the tensor-addressing operands
// (the view, if any).
std::vector<uint32_t> tensorAccessOperands(FunctionBuilder& f, std::vector<uint32_t> head,
                                           const std::optional<Value>& view) {
  head.push_back(0u);
  if (view) {
    head.push_back(static_cast<uint32_t>(::spv::TensorAddressingOperandsMask::TensorView));
    head.push_back(f.ref(*view));
  } else {
    head.push_back(0u);
  }
  return head;
}
} // namespace

Value FunctionBuilder::coopLoadTensor(TypeId matrixType, Value pointer, Value layout,
                                      std::optional<Value> view) {
  requireCoopNotLowered("coopLoadTensor");
  checkTensorAccess(m_, "coopLoadTensor", matrixType, pointer, layout, view);
  m_.addCapability(Capability::CooperativeMatrixTensorAddressingNV);
  m_.addExtension(kCoop2Extension);
  // The Object operand supplies the elements the layout clamps away: zeros.
  const Value zeros = m_.constant(matrixType, 0.0);
  return emitResult(Op::OpCooperativeMatrixLoadTensorNV, matrixType,
                    tensorAccessOperands(*this, {ref(pointer), ref(zeros), ref(layout)}, view));
}

void FunctionBuilder::coopStoreTensor(Value pointer, Value matrix, Value layout, std::optional<Value> view) {
  requireCoopNotLowered("coopStoreTensor");
  checkTensorAccess(m_, "coopStoreTensor", matrix.type, pointer, layout, view);
  m_.addCapability(Capability::CooperativeMatrixTensorAddressingNV);
  m_.addExtension(kCoop2Extension);
  opNoResult(Op::OpCooperativeMatrixStoreTensorNV,
             tensorAccessOperands(*this, {ref(pointer), ref(matrix), ref(layout)}, view));
}

} // namespace helios::spv
