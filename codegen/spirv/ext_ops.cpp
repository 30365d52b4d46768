// GLSL.std.450 extended instructions, barriers, subgroup (GroupNonUniform) operations and atomics.
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
} // namespace

// -------------------------------------------------------------------------------------- GLSL.std.450

Value FunctionBuilder::glsl(GLSLstd450 inst, TypeId resultType, const std::vector<Value>& args) {
  const uint32_t set = m_.glslStd450();
  std::vector<uint32_t> ops{set, static_cast<uint32_t>(inst)};
  for (const Value& a : args) {
    if (m_.isCoopMatrix(a.type)) fail("GLSL.std.450 instructions do not take cooperative matrices");
    ops.push_back(ref(a));
  }
  return emitResult(Op::OpExtInst, resultType, ops);
}

Value FunctionBuilder::glslUnaryF(const char* what, GLSLstd450 inst, Value x) {
  requireFloat(what, x);
  return glsl(inst, x.type, {x});
}
Value FunctionBuilder::glslBinaryF(const char* what, GLSLstd450 inst, Value a, Value b) {
  requireSameType(what, a, b);
  requireFloat(what, a);
  return glsl(inst, a.type, {a, b});
}
Value FunctionBuilder::glslBinaryI(const char* what, GLSLstd450 inst, Value a, Value b, bool) {
  requireSameType(what, a, b);
  requireInt(what, a);
  return glsl(inst, a.type, {a, b});
}

Value FunctionBuilder::exp(Value x) {
  return glslUnaryF("exp", GLSLstd450Exp, x);
}
Value FunctionBuilder::exp2(Value x) {
  return glslUnaryF("exp2", GLSLstd450Exp2, x);
}
Value FunctionBuilder::log(Value x) {
  return glslUnaryF("log", GLSLstd450Log, x);
}
Value FunctionBuilder::log2(Value x) {
  return glslUnaryF("log2", GLSLstd450Log2, x);
}
Value FunctionBuilder::tanh(Value x) {
  return glslUnaryF("tanh", GLSLstd450Tanh, x);
}
Value FunctionBuilder::sqrt(Value x) {
  return glslUnaryF("sqrt", GLSLstd450Sqrt, x);
}
Value FunctionBuilder::inverseSqrt(Value x) {
  return glslUnaryF("inverseSqrt", GLSLstd450InverseSqrt, x);
}
Value FunctionBuilder::floor(Value x) {
  return glslUnaryF("floor", GLSLstd450Floor, x);
}
Value FunctionBuilder::ceil(Value x) {
  return glslUnaryF("ceil", GLSLstd450Ceil, x);
}
Value FunctionBuilder::fabs(Value x) {
  return glslUnaryF("fabs", GLSLstd450FAbs, x);
}
Value FunctionBuilder::fmax(Value a, Value b) {
  return glslBinaryF("fmax", GLSLstd450FMax, a, b);
}
Value FunctionBuilder::fmin(Value a, Value b) {
  return glslBinaryF("fmin", GLSLstd450FMin, a, b);
}
Value FunctionBuilder::pow(Value a, Value b) {
  return glslBinaryF("pow", GLSLstd450Pow, a, b);
}
Value FunctionBuilder::fma(Value a, Value b, Value c) {
  requireSameType("fma", a, b);
  requireSameType("fma", a, c);
  requireFloat("fma", a);
  return glsl(GLSLstd450Fma, a.type, {a, b, c});
}
Value FunctionBuilder::umin(Value a, Value b) {
  return glslBinaryI("umin", GLSLstd450UMin, a, b, false);
}
Value FunctionBuilder::umax(Value a, Value b) {
  return glslBinaryI("umax", GLSLstd450UMax, a, b, false);
}
Value FunctionBuilder::smin(Value a, Value b) {
  return glslBinaryI("smin", GLSLstd450SMin, a, b, true);
}
Value FunctionBuilder::smax(Value a, Value b) {
  return glslBinaryI("smax", GLSLstd450SMax, a, b, true);
}
Value FunctionBuilder::min(Value a, Value b) {
  requireSameType("min", a, b);
  if (m_.isFloat(a.type)) return fmin(a, b);
  return m_.isSignedInt(a.type) ? smin(a, b) : umin(a, b);
}
Value FunctionBuilder::max(Value a, Value b) {
  requireSameType("max", a, b);
  if (m_.isFloat(a.type)) return fmax(a, b);
  return m_.isSignedInt(a.type) ? smax(a, b) : umax(a, b);
}

// -------------------------------------------------------------------------------------------- barriers

uint32_t FunctionBuilder::scopeId(Scope s) {
  if (s == Scope::Device && m_.vulkanMemoryModel())
    m_.addCapability(Capability::VulkanMemoryModelDeviceScope);
  return ref(m_.constU32(w(s)));
}

uint32_t FunctionBuilder::semanticsId(uint32_t semantics) {
  m_.noteMemoryOperation();
  return ref(m_.constU32(m_.memorySemantics(semantics)));
}

void FunctionBuilder::controlBarrier(Scope execution, Scope memory, uint32_t semantics) {
  emit(Op::OpControlBarrier, {scopeId(execution), scopeId(memory), semanticsId(semantics)});
}
void FunctionBuilder::memoryBarrier(Scope memory, uint32_t semantics) {
  emit(Op::OpMemoryBarrier, {scopeId(memory), semanticsId(semantics)});
}
void FunctionBuilder::workgroupBarrier() {
  controlBarrier(Scope::Workgroup, Scope::Workgroup,
                 w(MemorySemanticsMask::AcquireRelease) | w(MemorySemanticsMask::WorkgroupMemory));
}

// -------------------------------------------------------------------------------------------- subgroup

void FunctionBuilder::requireCapabilitySubgroup(Capability c) {
  if (m_.options().version < 0x00010300) fail("subgroup operations need SPIR-V >= 1.3");
  m_.addCapability(Capability::GroupNonUniform);
  m_.addCapability(c);
}

Value FunctionBuilder::groupOp(const char* what, Op fop, Op sop, Op uop, Value v, GroupOperation gop) {
  if (m_.isCoopMatrix(v.type)) fail(std::string(what) + ": cooperative matrices are not allowed");
  Op o;
  if (m_.isFloat(v.type))
    o = fop;
  else if (m_.isInt(v.type))
    o = m_.isSignedInt(v.type) ? sop : uop;
  else
    fail(std::string(what) + ": expected int or float operand, got " + m_.typeName(v.type));
  requireCapabilitySubgroup(gop == GroupOperation::ClusteredReduce ? Capability::GroupNonUniformClustered
                                                                   : Capability::GroupNonUniformArithmetic);
  return emitResult(o, v.type, {scopeId(Scope::Subgroup), w(gop), ref(v)});
}

Value FunctionBuilder::subgroupAdd(Value v, GroupOperation gop) {
  return groupOp("subgroupAdd", Op::OpGroupNonUniformFAdd, Op::OpGroupNonUniformIAdd,
                 Op::OpGroupNonUniformIAdd, v, gop);
}
Value FunctionBuilder::subgroupMul(Value v, GroupOperation gop) {
  return groupOp("subgroupMul", Op::OpGroupNonUniformFMul, Op::OpGroupNonUniformIMul,
                 Op::OpGroupNonUniformIMul, v, gop);
}
Value FunctionBuilder::subgroupMax(Value v, GroupOperation gop) {
  return groupOp("subgroupMax", Op::OpGroupNonUniformFMax, Op::OpGroupNonUniformSMax,
                 Op::OpGroupNonUniformUMax, v, gop);
}
Value FunctionBuilder::subgroupMin(Value v, GroupOperation gop) {
  return groupOp("subgroupMin", Op::OpGroupNonUniformFMin, Op::OpGroupNonUniformSMin,
                 Op::OpGroupNonUniformUMin, v, gop);
}

Value FunctionBuilder::subgroupBroadcast(Value v, Value lane) {
  requireInt("subgroupBroadcast", lane);
  if (m_.options().version < 0x00010500 && !m_.constantBits(lane))
    fail("subgroupBroadcast: lane must be a constant before SPIR-V 1.5");
  requireCapabilitySubgroup(Capability::GroupNonUniformBallot);
  return emitResult(Op::OpGroupNonUniformBroadcast, v.type, {scopeId(Scope::Subgroup), ref(v), ref(lane)});
}
Value FunctionBuilder::subgroupBroadcastFirst(Value v) {
  requireCapabilitySubgroup(Capability::GroupNonUniformBallot);
  return emitResult(Op::OpGroupNonUniformBroadcastFirst, v.type, {scopeId(Scope::Subgroup), ref(v)});
}
Value FunctionBuilder::subgroupShuffle(Value v, Value lane) {
  requireInt("subgroupShuffle", lane);
  requireCapabilitySubgroup(Capability::GroupNonUniformShuffle);
  return emitResult(Op::OpGroupNonUniformShuffle, v.type, {scopeId(Scope::Subgroup), ref(v), ref(lane)});
}
Value FunctionBuilder::subgroupShuffleXor(Value v, Value mask) {
  requireInt("subgroupShuffleXor", mask);
  requireCapabilitySubgroup(Capability::GroupNonUniformShuffle);
  return emitResult(Op::OpGroupNonUniformShuffleXor, v.type, {scopeId(Scope::Subgroup), ref(v), ref(mask)});
}
Value FunctionBuilder::subgroupElect() {
  requireCapabilitySubgroup(Capability::GroupNonUniform);
  return emitResult(Op::OpGroupNonUniformElect, m_.boolType(), {scopeId(Scope::Subgroup)});
}

// --------------------------------------------------------------------------------------------- atomics

namespace {
void checkAtomicPointer(Module& m, const char* what, Value pointer, Value v) {
  if (!m.isPointer(pointer.type))
    throw BuildError(std::string(what) + ": operand " + m.describe(pointer) + " is not a pointer");
  if (m.pointeeOf(pointer.type) != v.type)
    throw BuildError(std::string(what) + ": value type " + m.typeName(v.type) +
                     " differs from pointee type " + m.typeName(m.pointeeOf(pointer.type)));
}
} // namespace

Value FunctionBuilder::atomicIAdd(Value pointer, Value v, Scope scope, uint32_t semantics) {
  checkAtomicPointer(m_, "atomicIAdd", pointer, v);
  requireInt("atomicIAdd", v);
  if (m_.typeInfo(v.type).width == 64) m_.addCapability(Capability::Int64Atomics);
  return emitResult(Op::OpAtomicIAdd, v.type, {ref(pointer), scopeId(scope), semanticsId(semantics), ref(v)});
}

Value FunctionBuilder::atomicUMax(Value pointer, Value v, Scope scope, uint32_t semantics) {
  checkAtomicPointer(m_, "atomicUMax", pointer, v);
  requireInt("atomicUMax", v);
  if (m_.typeInfo(v.type).width == 64) m_.addCapability(Capability::Int64Atomics);
  return emitResult(Op::OpAtomicUMax, v.type, {ref(pointer), scopeId(scope), semanticsId(semantics), ref(v)});
}

Value FunctionBuilder::atomicFAdd(Value pointer, Value v, Scope scope, uint32_t semantics) {
  checkAtomicPointer(m_, "atomicFAdd", pointer, v);
  requireFloat("atomicFAdd", v);
  const uint32_t width = m_.typeInfo(v.type).width;
  if (width == 16) {
    m_.addCapability(Capability::AtomicFloat16AddEXT);
    m_.addExtension("SPV_EXT_shader_atomic_float16_add");
  } else {
    m_.addCapability(width == 32 ? Capability::AtomicFloat32AddEXT : Capability::AtomicFloat64AddEXT);
  }
  m_.addExtension("SPV_EXT_shader_atomic_float_add");
  return emitResult(Op::OpAtomicFAddEXT, v.type,
                    {ref(pointer), scopeId(scope), semanticsId(semantics), ref(v)});
}

Value FunctionBuilder::atomicCompareExchange(Value pointer, Value value, Value comparator, Scope scope,
                                             uint32_t semantics) {
  checkAtomicPointer(m_, "atomicCompareExchange", pointer, value);
  requireSameType("atomicCompareExchange", value, comparator);
  requireInt("atomicCompareExchange", value);
  const uint32_t unequal =
      semantics & ~(w(MemorySemanticsMask::Release) | w(MemorySemanticsMask::AcquireRelease));
  return emitResult(Op::OpAtomicCompareExchange, value.type,
                    {ref(pointer), scopeId(scope), semanticsId(semantics), semanticsId(unequal), ref(value),
                     ref(comparator)});
}

} // namespace helios::spv
