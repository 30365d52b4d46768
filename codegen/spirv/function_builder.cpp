#include "codegen/spirv/function_builder.hpp"

#include <algorithm>

#include "codegen/spirv/binary_writer.hpp"

namespace helios::spv {

namespace {
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
} // namespace

FunctionBuilder::FunctionBuilder(Module& m, int32_t index, std::string name, TypeId returnType,
                                 std::vector<TypeId> params)
    : m_(m), index_(index), name_(std::move(name)), returnType_(returnType) {
  fnType_ = m_.functionType(returnType, params);
  fnId_ = m_.allocId(-1); // callable from any function
  m_.setName(fnId_, name_);
  for (TypeId p : params)
    params_.push_back(Value{m_.allocId(index_), p});
  setBlock(newBlock());
}

void FunctionBuilder::fail(const std::string& msg) const {
  throw BuildError(msg + " [function '" + name_ + "']");
}

Value FunctionBuilder::param(size_t i) const {
  if (i >= params_.size()) fail("param: index " + std::to_string(i) + " out of range");
  return params_[i];
}

uint32_t FunctionBuilder::ref(Value v) {
  if (!v.valid()) fail("use of a null Value (id 0)");
  const int32_t owner = m_.ownerOf(v.id);
  if (owner == -2) fail("use of unknown id %" + std::to_string(v.id));
  if (owner >= 0 && owner != index_)
    fail("value " + m_.describe(v) + " belongs to function '" +
         m_.functions_[static_cast<size_t>(owner)]->name() + "' and cannot be used here");
  if (m_.isGlobalVariable(v.id)) usedGlobals_.insert(v.id);
  return v.id;
}

// ---------------------------------------------------------------------------------------------- blocks

size_t FunctionBuilder::blockIndex(BlockId b, const char* what) const {
  auto it = blockIndex_.find(b.id);
  if (it == blockIndex_.end())
    fail(std::string(what) + ": block %" + std::to_string(b.id) + " is not in this function");
  return it->second;
}

BlockId FunctionBuilder::newBlock() {
  if (finished_) fail("newBlock: function already finished");
  const uint32_t label = m_.allocId(index_);
  blockIndex_.emplace(label, blocks_.size());
  blocks_.push_back(Block{label, {}, false, false});
  return BlockId{label};
}

void FunctionBuilder::setBlock(BlockId b) {
  const size_t i = blockIndex(b, "setBlock");
  if (!blocks_[i].placed) {
    blocks_[i].placed = true;
    order_.push_back(i);
  }
  current_ = i;
}

BlockId FunctionBuilder::currentBlock() const {
  return BlockId{blocks_[current_].label};
}
bool FunctionBuilder::blockTerminated() const {
  return blocks_[current_].terminated;
}

FunctionBuilder::Block& FunctionBuilder::cur() {
  if (finished_) fail("function already finished");
  return blocks_[current_];
}

void FunctionBuilder::emit(Op opcode, const std::vector<uint32_t>& operands) {
  Block& b = cur();
  if (b.terminated)
    fail(std::string("instruction ") + ::spv::OpToString(opcode) +
         " appended after the terminator of block %" + std::to_string(b.label));
  InstBuilder(opcode).words(operands).appendTo(b.words);
}

Value FunctionBuilder::emitResult(Op opcode, TypeId type, const std::vector<uint32_t>& operands) {
  if (cur().terminated)
    fail(std::string("instruction ") + ::spv::OpToString(opcode) +
         " appended after the terminator of block %" + std::to_string(cur().label));
  m_.typeInfo(type);
  const uint32_t id = m_.allocId(index_);
  std::vector<uint32_t> ops{type.id, id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(opcode, ops);
  return Value{id, type};
}

void FunctionBuilder::terminate(Op opcode, const std::vector<uint32_t>& operands) {
  emit(opcode, operands);
  cur().terminated = true;
}

Value FunctionBuilder::op(Op opcode, TypeId resultType, const std::vector<uint32_t>& operands) {
  return emitResult(opcode, resultType, operands);
}
void FunctionBuilder::opNoResult(Op opcode, const std::vector<uint32_t>& operands) {
  emit(opcode, operands);
}

void FunctionBuilder::branch(BlockId target) {
  blockIndex(target, "branch");
  terminate(Op::OpBranch, {target.id});
}

void FunctionBuilder::branchCond(Value cond, BlockId ifTrue, BlockId ifFalse) {
  requireBoolCond("branchCond", cond);
  blockIndex(ifTrue, "branchCond");
  blockIndex(ifFalse, "branchCond");
  terminate(Op::OpBranchConditional, {ref(cond), ifTrue.id, ifFalse.id});
}

void FunctionBuilder::selectionMerge(BlockId merge) {
  blockIndex(merge, "selectionMerge");
  emit(Op::OpSelectionMerge, {merge.id, 0u});
}

void FunctionBuilder::loopMerge(BlockId merge, BlockId continueTarget) {
  blockIndex(merge, "loopMerge");
  blockIndex(continueTarget, "loopMerge");
  emit(Op::OpLoopMerge, {merge.id, continueTarget.id, loopControl_});
}

void FunctionBuilder::ret() {
  if (m_.typeInfo(returnType_).kind != TypeKind::Void)
    fail("ret(): function returns " + m_.typeName(returnType_) + ", use ret(value)");
  terminate(Op::OpReturn, {});
}

void FunctionBuilder::ret(Value v) {
  if (v.type != returnType_)
    fail("ret(value): value type " + m_.typeName(v.type) + " differs from return type " +
         m_.typeName(returnType_));
  terminate(Op::OpReturnValue, {ref(v)});
}

void FunctionBuilder::unreachable() {
  terminate(Op::OpUnreachable, {});
}

Value FunctionBuilder::phi(TypeId type, const std::vector<std::pair<Value, BlockId>>& incoming) {
  std::vector<uint32_t> ops;
  for (const auto& [v, b] : incoming) {
    if (v.type != type) fail("phi: incoming " + m_.describe(v) + " differs from " + m_.typeName(type));
    blockIndex(b, "phi");
    ops.push_back(ref(v));
    ops.push_back(b.id);
  }
  return emitResult(Op::OpPhi, type, ops);
}

Value FunctionBuilder::call(const FunctionId& fn, const std::vector<Value>& args) {
  const TypeInfo& ft = m_.typeInfo(fn.functionType);
  if (ft.members.size() != args.size())
    fail("call: expected " + std::to_string(ft.members.size()) + " arguments, got " +
         std::to_string(args.size()));
  std::vector<uint32_t> ops{fn.id};
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k].type != ft.members[k])
      fail("call: argument " + std::to_string(k) + " is " + m_.typeName(args[k].type) + ", expected " +
           m_.typeName(ft.members[k]));
    ops.push_back(ref(args[k]));
  }
  noteCallee(fn);
  return emitResult(Op::OpFunctionCall, fn.returnType, ops);
}

void FunctionBuilder::noteCallee(const FunctionId& fn) {
  for (size_t f = 0; f < m_.functions_.size(); ++f)
    if (m_.functions_[f]->fnId_ == fn.id) callees_.insert(f);
}

void FunctionBuilder::finish() {
  if (finished_) return;
  for (const Block& b : blocks_) {
    if (!b.placed) fail("block %" + std::to_string(b.label) + " was created but never filled (setBlock)");
    if (!b.terminated)
      fail("block %" + std::to_string(b.label) + " has no terminator (missing ret(), branch or unreachable)");
  }
  finished_ = true;
}

void FunctionBuilder::writeTo(std::vector<uint32_t>& out) const {
  InstBuilder(Op::OpFunction).word(returnType_.id).word(fnId_).word(0u).word(fnType_.id).appendTo(out);
  for (const Value& p : params_)
    InstBuilder(Op::OpFunctionParameter).word(p.type.id).word(p.id).appendTo(out);
  for (size_t k = 0; k < order_.size(); ++k) {
    const Block& b = blocks_[order_[k]];
    InstBuilder(Op::OpLabel).word(b.label).appendTo(out);
    if (k == 0) out.insert(out.end(), variables_.begin(), variables_.end());
    out.insert(out.end(), b.words.begin(), b.words.end());
  }
  InstBuilder(Op::OpFunctionEnd).appendTo(out);
}

// ---------------------------------------------------------------------------------------------- memory

std::vector<uint32_t> FunctionBuilder::memoryOperands(Value pointer, MemoryAccess access) {
  m_.noteMemoryOperation();
  uint32_t mask = access.mask;
  const uint32_t nonPrivate = w(MemoryAccessMask::NonPrivatePointer);
  if (!m_.vulkanMemoryModel())
    mask &= ~nonPrivate;
  else if (m_.typeInfo(pointer.type).storage == StorageClass::Workgroup)
    mask |= nonPrivate;
  if (access.alignment) mask |= w(MemoryAccessMask::Aligned);
  if (mask == 0) return {};
  std::vector<uint32_t> ops{mask};
  if (access.alignment) ops.push_back(access.alignment);
  return ops;
}

Value FunctionBuilder::variable(TypeId type, std::optional<Value> initializer) {
  if (finished_) fail("variable: function already finished");
  const TypeId ptr = m_.pointerType(StorageClass::Function, type);
  const uint32_t id = m_.allocId(index_);
  InstBuilder b(Op::OpVariable);
  b.word(ptr.id).word(id).word(w(StorageClass::Function));
  if (initializer) {
    if (initializer->type != type)
      fail("variable: initializer " + m_.describe(*initializer) + " differs from " + m_.typeName(type));
    if (m_.ownerOf(initializer->id) != -1) fail("variable: initializer must be a constant");
    b.word(ref(*initializer));
  }
  b.appendTo(variables_);
  return Value{id, ptr};
}

Value FunctionBuilder::load(Value pointer, MemoryAccess access) {
  if (!m_.isPointer(pointer.type)) fail("load: operand " + m_.describe(pointer) + " is not a pointer");
  std::vector<uint32_t> ops{ref(pointer)};
  for (uint32_t x : memoryOperands(pointer, access))
    ops.push_back(x);
  return emitResult(Op::OpLoad, m_.pointeeOf(pointer.type), ops);
}

void FunctionBuilder::store(Value pointer, Value value, MemoryAccess access) {
  if (!m_.isPointer(pointer.type)) fail("store: operand " + m_.describe(pointer) + " is not a pointer");
  if (m_.pointeeOf(pointer.type) != value.type)
    fail("store: value type " + m_.typeName(value.type) + " differs from pointee type " +
         m_.typeName(m_.pointeeOf(pointer.type)));
  std::vector<uint32_t> ops{ref(pointer), ref(value)};
  for (uint32_t x : memoryOperands(pointer, access))
    ops.push_back(x);
  emit(Op::OpStore, ops);
}

Value FunctionBuilder::accessChain(Value base, const std::vector<Value>& indices) {
  if (!m_.isPointer(base.type)) fail("accessChain: base " + m_.describe(base) + " is not a pointer");
  const TypeInfo& pi = m_.typeInfo(base.type);
  TypeId curT = pi.elem;
  std::vector<uint32_t> ops{ref(base)};
  for (const Value& idx : indices) {
    if (!m_.isInt(idx.type) || m_.componentCount(idx.type) != 1 || m_.isCoopMatrix(idx.type))
      fail("accessChain: index " + m_.describe(idx) + " is not an integer scalar");
    const TypeInfo& ti = m_.typeInfo(curT);
    switch (ti.kind) {
    case TypeKind::Struct: {
      const auto bits = m_.constantBits(idx);
      if (!bits) fail("accessChain: struct index must be a constant, got " + m_.describe(idx));
      if (*bits >= ti.members.size())
        fail("accessChain: struct index " + std::to_string(*bits) + " out of range for " + m_.typeName(curT));
      curT = ti.members[static_cast<size_t>(*bits)];
      break;
    }
    case TypeKind::Array:
    case TypeKind::RuntimeArray:
    case TypeKind::Vector:
      curT = ti.elem;
      break;
    default:
      fail("accessChain: cannot index into " + m_.typeName(curT));
    }
    ops.push_back(ref(idx));
  }
  const Value chain = emitResult(Op::OpAccessChain, m_.pointerType(pi.storage, curT), ops);
  chains_.emplace(chain.id, ChainOrigin{base, indices});
  return chain;
}

Value FunctionBuilder::at(const Buffer& buf, Value index) {
  return accessChain(buf.var, {u32(0), index});
}
Value FunctionBuilder::loadAt(const Buffer& buf, Value index, MemoryAccess access) {
  return load(at(buf, index), access);
}
void FunctionBuilder::storeAt(const Buffer& buf, Value index, Value value, MemoryAccess access) {
  store(at(buf, index), value, access);
}
Value FunctionBuilder::arrayLength(const Buffer& buf) {
  return emitResult(Op::OpArrayLength, m_.u32(), {ref(buf.var), 0u});
}
Value FunctionBuilder::loadPush(const PushConstants& pc, uint32_t member) {
  if (member >= pc.members.size()) fail("loadPush: member " + std::to_string(member) + " out of range");
  return load(accessChain(pc.var, {u32(member)}));
}
Value FunctionBuilder::builtin(BuiltIn b) {
  return load(m_.builtinVariable(b));
}
Value FunctionBuilder::builtin(BuiltIn b, uint32_t component) {
  const Value v = builtin(b);
  if (m_.typeInfo(v.type).kind != TypeKind::Vector)
    fail(std::string("builtin: ") + ::spv::BuiltInToString(b) + " is a scalar, it has no components");
  return extract(v, {component});
}

// ------------------------------------------------------------------------------------------ arithmetic

void FunctionBuilder::requireSameType(const char* what, Value a, Value b) {
  if (a.type != b.type)
    fail(std::string(what) + ": operand types differ (" + m_.typeName(a.type) + " vs " + m_.typeName(b.type) +
         ")");
}
void FunctionBuilder::requireFloat(const char* what, Value a) {
  if (!m_.isFloat(a.type)) fail(std::string(what) + ": expected a float operand, got " + m_.typeName(a.type));
}
void FunctionBuilder::requireInt(const char* what, Value a) {
  if (!m_.isInt(a.type))
    fail(std::string(what) + ": expected an integer operand, got " + m_.typeName(a.type));
}
void FunctionBuilder::requireBoolCond(const char* what, Value c) {
  if (m_.typeInfo(c.type).kind != TypeKind::Bool)
    fail(std::string(what) + ": condition must be bool, got " + m_.typeName(c.type));
}
TypeId FunctionBuilder::boolResultType(TypeId operand) {
  const uint32_t n = m_.componentCount(operand);
  return n == 1 ? m_.boolType() : m_.vectorType(m_.boolType(), n);
}

Value FunctionBuilder::binary(const char* what, Op opcode, Value a, Value b) {
  requireSameType(what, a, b);
  if (m_.coopLowered() && m_.isCoopMatrix(a.type))
    return coopMap(a.type, {a, b},
                   [&](const std::vector<Value>& x) { return binary(what, opcode, x[0], x[1]); });
  return emitResult(opcode, a.type, {ref(a), ref(b)});
}

#define HELIOS_FLOAT_BINOP(NAME, OPC)                                                                        \
  Value FunctionBuilder::NAME(Value a, Value b) {                                                            \
    requireSameType(#NAME, a, b);                                                                            \
    requireFloat(#NAME, a);                                                                                  \
    return binary(#NAME, Op::OPC, a, b);                                                                     \
  }
#define HELIOS_INT_BINOP(NAME, OPC)                                                                          \
  Value FunctionBuilder::NAME(Value a, Value b) {                                                            \
    requireSameType(#NAME, a, b);                                                                            \
    requireInt(#NAME, a);                                                                                    \
    return binary(#NAME, Op::OPC, a, b);                                                                     \
  }
HELIOS_FLOAT_BINOP(fadd, OpFAdd)
HELIOS_FLOAT_BINOP(fsub, OpFSub)
HELIOS_FLOAT_BINOP(fmul, OpFMul)
HELIOS_FLOAT_BINOP(fdiv, OpFDiv)
HELIOS_INT_BINOP(iadd, OpIAdd)
HELIOS_INT_BINOP(isub, OpISub)
HELIOS_INT_BINOP(imul, OpIMul)
HELIOS_INT_BINOP(sdiv, OpSDiv)
HELIOS_INT_BINOP(udiv, OpUDiv)
HELIOS_INT_BINOP(bitAnd, OpBitwiseAnd)
HELIOS_INT_BINOP(bitOr, OpBitwiseOr)
HELIOS_INT_BINOP(bitXor, OpBitwiseXor)
#undef HELIOS_FLOAT_BINOP
#undef HELIOS_INT_BINOP

Value FunctionBuilder::fneg(Value a) {
  requireFloat("fneg", a);
  if (m_.coopLowered() && m_.isCoopMatrix(a.type))
    return coopMap(a.type, {a}, [&](const std::vector<Value>& x) { return fneg(x[0]); });
  return emitResult(Op::OpFNegate, a.type, {ref(a)});
}
Value FunctionBuilder::bitNot(Value a) {
  requireInt("bitNot", a);
  if (m_.coopLowered() && m_.isCoopMatrix(a.type))
    return coopMap(a.type, {a}, [&](const std::vector<Value>& x) { return bitNot(x[0]); });
  return emitResult(Op::OpNot, a.type, {ref(a)});
}

Value FunctionBuilder::add(Value a, Value b) {
  requireSameType("add", a, b);
  if (m_.isFloat(a.type)) return fadd(a, b);
  if (m_.isInt(a.type)) return iadd(a, b);
  fail("add: expected int or float operands, got " + m_.typeName(a.type));
}
Value FunctionBuilder::sub(Value a, Value b) {
  requireSameType("sub", a, b);
  if (m_.isFloat(a.type)) return fsub(a, b);
  if (m_.isInt(a.type)) return isub(a, b);
  fail("sub: expected int or float operands, got " + m_.typeName(a.type));
}
Value FunctionBuilder::mul(Value a, Value b) {
  requireSameType("mul", a, b);
  if (m_.isFloat(a.type)) return fmul(a, b);
  if (m_.isInt(a.type)) return imul(a, b);
  fail("mul: expected int or float operands, got " + m_.typeName(a.type));
}
Value FunctionBuilder::div(Value a, Value b) {
  requireSameType("div", a, b);
  if (m_.isFloat(a.type)) return fdiv(a, b);
  if (m_.isInt(a.type)) return m_.isSignedInt(a.type) ? sdiv(a, b) : udiv(a, b);
  fail("div: expected int or float operands, got " + m_.typeName(a.type));
}
Value FunctionBuilder::rem(Value a, Value b) {
  requireSameType("rem", a, b);
  if (m_.isFloat(a.type)) return binary("rem", Op::OpFRem, a, b);
  if (m_.isInt(a.type)) return binary("rem", m_.isSignedInt(a.type) ? Op::OpSRem : Op::OpUMod, a, b);
  fail("rem: expected int or float operands, got " + m_.typeName(a.type));
}
Value FunctionBuilder::neg(Value a) {
  if (m_.isFloat(a.type)) return fneg(a);
  if (m_.isInt(a.type) && m_.coopLowered() && m_.isCoopMatrix(a.type))
    return coopMap(a.type, {a}, [&](const std::vector<Value>& x) { return neg(x[0]); });
  if (m_.isInt(a.type)) return emitResult(Op::OpSNegate, a.type, {ref(a)});
  fail("neg: expected int or float operand, got " + m_.typeName(a.type));
}

Value FunctionBuilder::shl(Value a, Value shift) {
  requireInt("shl", a);
  requireInt("shl", shift);
  if (m_.componentCount(a.type) != m_.componentCount(shift.type)) fail("shl: component counts differ");
  return emitResult(Op::OpShiftLeftLogical, a.type, {ref(a), ref(shift)});
}
Value FunctionBuilder::shr(Value a, Value shift) {
  requireInt("shr", a);
  requireInt("shr", shift);
  if (m_.componentCount(a.type) != m_.componentCount(shift.type)) fail("shr: component counts differ");
  const Op o = m_.isSignedInt(a.type) ? Op::OpShiftRightArithmetic : Op::OpShiftRightLogical;
  return emitResult(o, a.type, {ref(a), ref(shift)});
}

Value FunctionBuilder::vectorTimesScalar(Value v, Value s) {
  if (m_.typeInfo(v.type).kind != TypeKind::Vector || !m_.isFloat(v.type))
    fail("vectorTimesScalar: expected a float vector, got " + m_.typeName(v.type));
  if (m_.scalarTypeOf(v.type) != s.type)
    fail("vectorTimesScalar: scalar type " + m_.typeName(s.type) + " differs from component type");
  return emitResult(Op::OpVectorTimesScalar, v.type, {ref(v), ref(s)});
}
Value FunctionBuilder::dot(Value a, Value b) {
  requireSameType("dot", a, b);
  if (m_.typeInfo(a.type).kind != TypeKind::Vector || !m_.isFloat(a.type))
    fail("dot: expected float vectors, got " + m_.typeName(a.type));
  return emitResult(Op::OpDot, m_.scalarTypeOf(a.type), {ref(a), ref(b)});
}

// --------------------------------------------------------------------------------- comparisons, logic

Value FunctionBuilder::compare(const char* what, Op fop, Op sop, Op uop, Value a, Value b) {
  requireSameType(what, a, b);
  if (m_.isCoopMatrix(a.type)) fail(std::string(what) + ": cannot compare cooperative matrices");
  Op o;
  if (m_.isFloat(a.type))
    o = fop;
  else if (m_.isInt(a.type))
    o = m_.isSignedInt(a.type) ? sop : uop;
  else
    fail(std::string(what) + ": expected int or float operands, got " + m_.typeName(a.type));
  return emitResult(o, boolResultType(a.type), {ref(a), ref(b)});
}
Value FunctionBuilder::lt(Value a, Value b) {
  return compare("lt", Op::OpFOrdLessThan, Op::OpSLessThan, Op::OpULessThan, a, b);
}
Value FunctionBuilder::le(Value a, Value b) {
  return compare("le", Op::OpFOrdLessThanEqual, Op::OpSLessThanEqual, Op::OpULessThanEqual, a, b);
}
Value FunctionBuilder::gt(Value a, Value b) {
  return compare("gt", Op::OpFOrdGreaterThan, Op::OpSGreaterThan, Op::OpUGreaterThan, a, b);
}
Value FunctionBuilder::ge(Value a, Value b) {
  return compare("ge", Op::OpFOrdGreaterThanEqual, Op::OpSGreaterThanEqual, Op::OpUGreaterThanEqual, a, b);
}
Value FunctionBuilder::eq(Value a, Value b) {
  if (m_.isBool(a.type)) {
    requireSameType("eq", a, b);
    return emitResult(Op::OpLogicalEqual, a.type, {ref(a), ref(b)});
  }
  return compare("eq", Op::OpFOrdEqual, Op::OpIEqual, Op::OpIEqual, a, b);
}
Value FunctionBuilder::ne(Value a, Value b) {
  if (m_.isBool(a.type)) {
    requireSameType("ne", a, b);
    return emitResult(Op::OpLogicalNotEqual, a.type, {ref(a), ref(b)});
  }
  return compare("ne", Op::OpFUnordNotEqual, Op::OpINotEqual, Op::OpINotEqual, a, b);
}

Value FunctionBuilder::logicalAnd(Value a, Value b) {
  requireSameType("logicalAnd", a, b);
  if (!m_.isBool(a.type)) fail("logicalAnd: expected bool operands, got " + m_.typeName(a.type));
  return emitResult(Op::OpLogicalAnd, a.type, {ref(a), ref(b)});
}
Value FunctionBuilder::logicalOr(Value a, Value b) {
  requireSameType("logicalOr", a, b);
  if (!m_.isBool(a.type)) fail("logicalOr: expected bool operands, got " + m_.typeName(a.type));
  return emitResult(Op::OpLogicalOr, a.type, {ref(a), ref(b)});
}
Value FunctionBuilder::logicalNot(Value a) {
  if (!m_.isBool(a.type)) fail("logicalNot: expected a bool operand, got " + m_.typeName(a.type));
  return emitResult(Op::OpLogicalNot, a.type, {ref(a)});
}
Value FunctionBuilder::select(Value cond, Value ifTrue, Value ifFalse) {
  requireSameType("select", ifTrue, ifFalse);
  if (!m_.isBool(cond.type)) fail("select: condition must be bool, got " + m_.typeName(cond.type));
  if (m_.componentCount(cond.type) != 1 && m_.componentCount(cond.type) != m_.componentCount(ifTrue.type))
    fail("select: condition has " + std::to_string(m_.componentCount(cond.type)) + " components, operands " +
         std::to_string(m_.componentCount(ifTrue.type)));
  return emitResult(Op::OpSelect, ifTrue.type, {ref(cond), ref(ifTrue), ref(ifFalse)});
}

// --------------------------------------------------------------------------- conversions, composites

Value FunctionBuilder::convert(Value v, TypeId to) {
  if (v.type == to) return v;
  const TypeInfo& fi = m_.typeInfo(v.type);
  const TypeInfo& ti = m_.typeInfo(to);
  const bool shapeOk = (fi.kind == TypeKind::Vector) == (ti.kind == TypeKind::Vector) &&
                       (fi.kind == TypeKind::CoopMatrix) == (ti.kind == TypeKind::CoopMatrix) &&
                       m_.componentCount(v.type) == m_.componentCount(to) &&
                       (fi.kind != TypeKind::CoopMatrix || (fi.count == ti.count && fi.cols == ti.cols));
  if (!shapeOk) fail("convert: shapes differ (" + m_.typeName(v.type) + " -> " + m_.typeName(to) + ")");
  if (fi.kind == TypeKind::CoopMatrix && fi.use != ti.use) return coopConvert(v, to);
  if (fi.kind == TypeKind::CoopMatrix && m_.coopLowered() && (fi.bfloat || ti.bfloat))
    return lowerBF16CoopConvert(v, to);
  if (fi.kind == TypeKind::CoopMatrix && m_.coopLowered())
    return coopMap(to, {v}, [&](const std::vector<Value>& x) { return convert(x[0], ti.elem); });
  const TypeInfo& fs = m_.typeInfo(m_.scalarTypeOf(v.type));
  const TypeInfo& ts = m_.typeInfo(m_.scalarTypeOf(to));
  using K = TypeKind;
  if (fs.kind == K::Float && ts.kind == K::Float) return emitResult(Op::OpFConvert, to, {ref(v)});
  if (fs.kind == K::Int && ts.kind == K::Float)
    return emitResult(fs.isSigned ? Op::OpConvertSToF : Op::OpConvertUToF, to, {ref(v)});
  if (fs.kind == K::Float && ts.kind == K::Int)
    return emitResult(ts.isSigned ? Op::OpConvertFToS : Op::OpConvertFToU, to, {ref(v)});
  if (fs.kind == K::Int && ts.kind == K::Int) {
    if (fs.width == ts.width) return emitResult(Op::OpBitcast, to, {ref(v)});
    return emitResult(fs.isSigned ? Op::OpSConvert : Op::OpUConvert, to, {ref(v)});
  }
  if (fs.kind == K::Bool && (ts.kind == K::Int || ts.kind == K::Float))
    return select(v, m_.constant(to, 1.0), m_.constant(to, 0.0));
  if ((fs.kind == K::Int || fs.kind == K::Float) && ts.kind == K::Bool)
    return ne(v, m_.constant(v.type, 0.0));
  fail("convert: unsupported conversion " + m_.typeName(v.type) + " -> " + m_.typeName(to));
}

Value FunctionBuilder::bitcast(Value v, TypeId to) {
  const auto bits = [&](TypeId t) {
    const TypeInfo& s = m_.typeInfo(m_.scalarTypeOf(t));
    if (s.kind != TypeKind::Int && s.kind != TypeKind::Float)
      fail("bitcast: unsupported type " + m_.typeName(t));
    return s.width * m_.componentCount(t);
  };
  if (bits(v.type) != bits(to))
    fail("bitcast: sizes differ (" + m_.typeName(v.type) + " -> " + m_.typeName(to) + ")");
  return emitResult(Op::OpBitcast, to, {ref(v)});
}

Value FunctionBuilder::extract(Value composite, std::initializer_list<uint32_t> indices) {
  TypeId t = composite.type;
  std::vector<uint32_t> ops{ref(composite)};
  for (uint32_t i : indices) {
    const TypeInfo& ti = m_.typeInfo(t);
    if (ti.kind == TypeKind::Struct) {
      if (i >= ti.members.size())
        fail("extract: index " + std::to_string(i) + " out of range for " + m_.typeName(t));
      t = ti.members[i];
    } else if (ti.kind == TypeKind::Vector || ti.kind == TypeKind::Array) {
      if (ti.count && i >= ti.count)
        fail("extract: index " + std::to_string(i) + " out of range for " + m_.typeName(t));
      t = ti.elem;
    } else if (ti.kind == TypeKind::CoopMatrix) {
      t = ti.elem;
    } else {
      fail("extract: cannot index into " + m_.typeName(t));
    }
    ops.push_back(i);
  }
  return emitResult(Op::OpCompositeExtract, t, ops);
}

Value FunctionBuilder::insert(Value composite, Value object, std::initializer_list<uint32_t> indices) {
  TypeId t = composite.type;
  for (uint32_t i : indices) {
    const TypeInfo& ti = m_.typeInfo(t);
    if (ti.kind == TypeKind::Struct) {
      if (i >= ti.members.size()) fail("insert: index out of range for " + m_.typeName(t));
      t = ti.members[i];
    } else if (ti.kind == TypeKind::Vector || ti.kind == TypeKind::Array || ti.kind == TypeKind::CoopMatrix) {
      t = ti.elem;
    } else {
      fail("insert: cannot index into " + m_.typeName(t));
    }
  }
  if (t != object.type)
    fail("insert: object type " + m_.typeName(object.type) + " differs from element type " + m_.typeName(t));
  std::vector<uint32_t> ops{ref(object), ref(composite)};
  ops.insert(ops.end(), indices.begin(), indices.end());
  return emitResult(Op::OpCompositeInsert, composite.type, ops);
}

Value FunctionBuilder::extractDynamic(Value vector, Value index) {
  if (m_.typeInfo(vector.type).kind != TypeKind::Vector)
    fail("extractDynamic: expected a vector, got " + m_.typeName(vector.type));
  requireInt("extractDynamic", index);
  return emitResult(Op::OpVectorExtractDynamic, m_.scalarTypeOf(vector.type), {ref(vector), ref(index)});
}

Value FunctionBuilder::construct(TypeId type, const std::vector<Value>& constituents) {
  const TypeInfo& ti = m_.typeInfo(type);
  std::vector<uint32_t> ops;
  for (const Value& c : constituents)
    ops.push_back(ref(c));
  switch (ti.kind) {
  case TypeKind::Vector: {
    uint32_t n = 0;
    for (const Value& c : constituents) {
      if (m_.scalarTypeOf(c.type) != ti.elem || m_.isCoopMatrix(c.type))
        fail("construct: constituent " + m_.describe(c) + " does not match " + m_.typeName(type));
      n += m_.componentCount(c.type);
    }
    if (n != ti.count) fail("construct: " + std::to_string(n) + " components given for " + m_.typeName(type));
    break;
  }
  case TypeKind::Struct:
    if (constituents.size() != ti.members.size())
      fail("construct: wrong member count for " + m_.typeName(type));
    for (size_t k = 0; k < constituents.size(); ++k)
      if (constituents[k].type != ti.members[k])
        fail("construct: member " + std::to_string(k) + " is " + m_.typeName(constituents[k].type) +
             ", expected " + m_.typeName(ti.members[k]));
    break;
  case TypeKind::Array:
    if (ti.count && constituents.size() != ti.count)
      fail("construct: wrong element count for " + m_.typeName(type));
    for (const Value& c : constituents)
      if (c.type != ti.elem)
        fail("construct: element " + m_.describe(c) + " does not match " + m_.typeName(type));
    break;
  case TypeKind::CoopMatrix:
    if (m_.coopLowered() && constituents.size() == m_.coopSlots(type) && constituents[0].type == ti.elem) {
      for (const Value& c : constituents)
        if (c.type != ti.elem) fail("construct: component " + m_.describe(c) + " of " + m_.typeName(type));
      break; // the lowered array, component by component
    }
    if (constituents.size() != 1 || constituents[0].type != ti.elem)
      fail("construct: a cooperative matrix is constructed from one " + m_.typeName(ti.elem) + " scalar");
    if (m_.coopLowered()) return construct(type, std::vector<Value>(m_.coopSlots(type), constituents[0]));
    break;
  default:
    fail("construct: " + m_.typeName(type) + " is not a composite type");
  }
  return emitResult(Op::OpCompositeConstruct, type, ops);
}

Value FunctionBuilder::splat(TypeId vectorType, Value scalar) {
  const TypeInfo& ti = m_.typeInfo(vectorType);
  if (ti.kind != TypeKind::Vector) fail("splat: expected a vector type, got " + m_.typeName(vectorType));
  return construct(vectorType, std::vector<Value>(ti.count, scalar));
}

Value FunctionBuilder::shuffle(Value a, Value b, std::initializer_list<uint32_t> components) {
  if (m_.typeInfo(a.type).kind != TypeKind::Vector || m_.typeInfo(b.type).kind != TypeKind::Vector ||
      m_.scalarTypeOf(a.type) != m_.scalarTypeOf(b.type))
    fail("shuffle: operands must be vectors of the same component type (" + m_.typeName(a.type) + " vs " +
         m_.typeName(b.type) + ")");
  const uint32_t total = m_.componentCount(a.type) + m_.componentCount(b.type);
  std::vector<uint32_t> ops{ref(a), ref(b)};
  for (uint32_t c : components) {
    if (c >= total && c != 0xffffffffu) fail("shuffle: component " + std::to_string(c) + " out of range");
    ops.push_back(c);
  }
  const auto n = static_cast<uint32_t>(components.size());
  return emitResult(Op::OpVectorShuffle, m_.vectorType(m_.scalarTypeOf(a.type), n), ops);
}

} // namespace helios::spv
