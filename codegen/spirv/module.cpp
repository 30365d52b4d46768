#include "codegen/spirv/module.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "codegen/spirv/binary_writer.hpp"
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {

uint32_t u(Op op) {
  return static_cast<uint32_t>(op);
}
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
uint32_t roundUp(uint32_t v, uint32_t a) {
  return a == 0 ? v : (v + a - 1) / a * a;
}

// IEEE-754 binary32 -> binary16, round to nearest even; handles inf/nan/subnormals.
uint16_t floatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = static_cast<uint32_t>(e) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half; // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | half);
}

// binary32 -> bfloat16, round to nearest even; a NaN stays a quiet NaN.
uint16_t floatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace

Module::Module(ModuleOptions options) : options_(options), memoryModel_(options.memoryModel) {
  addCapability(Capability::Shader);
  if (vulkanMemoryModel()) {
    addCapability(Capability::VulkanMemoryModel);
    if (options_.version < 0x00010500) addExtension("SPV_KHR_vulkan_memory_model");
  }
}

void Module::useVulkanMemoryModel() {
  if (vulkanMemoryModel()) return;
  if (memoryOperations_)
    throw BuildError("coopMatrixType: declare cooperative matrix types before the first memory access or "
                     "barrier (the module switches to the Vulkan memory model)");
  memoryModel_ = MemoryModel::Vulkan;
  addCapability(Capability::VulkanMemoryModel);
  if (options_.version < 0x00010500) addExtension("SPV_KHR_vulkan_memory_model");
}

uint32_t Module::memorySemantics(uint32_t semantics) const {
  if (!vulkanMemoryModel()) return semantics;
  const auto has = [&](MemorySemanticsMask m) { return (semantics & w(m)) != 0; };
  if (has(MemorySemanticsMask::Release) || has(MemorySemanticsMask::AcquireRelease))
    semantics |= w(MemorySemanticsMask::MakeAvailableKHR);
  if (has(MemorySemanticsMask::Acquire) || has(MemorySemanticsMask::AcquireRelease))
    semantics |= w(MemorySemanticsMask::MakeVisibleKHR);
  return semantics;
}

Module::~Module() = default;

uint32_t Module::allocId(int32_t owner) {
  owner_.push_back(owner);
  return nextId_++;
}

void Module::addCapability(Capability c) {
  if (!hasCapability(c)) capabilities_.push_back(c);
}
bool Module::hasCapability(Capability c) const {
  return std::find(capabilities_.begin(), capabilities_.end(), c) != capabilities_.end();
}
void Module::addExtension(std::string_view name) {
  if (!hasExtension(name)) extensions_.emplace_back(name);
}
bool Module::hasExtension(std::string_view name) const {
  return std::find(extensions_.begin(), extensions_.end(), name) != extensions_.end();
}
uint32_t Module::glslStd450() {
  if (glslImport_ == 0) glslImport_ = newId();
  return glslImport_;
}

// ---------------------------------------------------------------------------------------------- types

TypeId Module::makeType(std::vector<uint32_t> key, Op op, std::vector<uint32_t> operands, TypeInfo info) {
  if (auto it = typeKeys_.find(key); it != typeKeys_.end()) return TypeId{it->second};
  const uint32_t id = newId();
  InstBuilder(op).word(id).words(operands).appendTo(globals_);
  typeKeys_.emplace(std::move(key), id);
  types_.emplace(id, std::move(info));
  return TypeId{id};
}

TypeId Module::voidType() {
  return makeType({u(Op::OpTypeVoid)}, Op::OpTypeVoid, {}, {.kind = TypeKind::Void});
}
TypeId Module::boolType() {
  return makeType({u(Op::OpTypeBool)}, Op::OpTypeBool, {}, {.kind = TypeKind::Bool});
}

TypeId Module::intType(uint32_t width, bool isSigned) {
  switch (width) {
  case 8:
    addCapability(Capability::Int8);
    break;
  case 16:
    addCapability(Capability::Int16);
    break;
  case 32:
    break;
  case 64:
    addCapability(Capability::Int64);
    break;
  default:
    throw BuildError("intType: unsupported width " + std::to_string(width));
  }
  const uint32_t s = isSigned ? 1u : 0u;
  return makeType({u(Op::OpTypeInt), width, s}, Op::OpTypeInt, {width, s},
                  {.kind = TypeKind::Int, .width = width, .isSigned = isSigned});
}

TypeId Module::floatType(uint32_t width) {
  switch (width) {
  case 16:
    addCapability(Capability::Float16);
    break;
  case 32:
    break;
  case 64:
    addCapability(Capability::Float64);
    break;
  default:
    throw BuildError("floatType: unsupported width " + std::to_string(width));
  }
  return makeType({u(Op::OpTypeFloat), width}, Op::OpTypeFloat, {width},
                  {.kind = TypeKind::Float, .width = width});
}

TypeId Module::bf16() {
  if (coopLowered())
    throw BuildError(
        "bf16: a lowered module has no bf16 type (bf16CoopMatrixType holds bf16 as uint16 bits)");
  addCapability(Capability::BFloat16TypeKHR);
  addExtension("SPV_KHR_bfloat16");
  const uint32_t encoding = w(::spv::FPEncoding::BFloat16KHR);
  return makeType({u(Op::OpTypeFloat), 16, encoding}, Op::OpTypeFloat, {16, encoding},
                  {.kind = TypeKind::Float, .width = 16, .bfloat = true});
}

TypeId Module::vectorType(TypeId component, uint32_t n) {
  if (!typeInfo(component).isScalar())
    throw BuildError("vectorType: component must be a scalar type, got " + typeName(component));
  if (n < 2 || n > 4) throw BuildError("vectorType: size must be 2..4, got " + std::to_string(n));
  return makeType({u(Op::OpTypeVector), component.id, n}, Op::OpTypeVector, {component.id, n},
                  {.kind = TypeKind::Vector, .elem = component, .count = n});
}

TypeId Module::arrayType(TypeId element, uint32_t length, uint32_t stride) {
  if (length == 0) throw BuildError("arrayType: length must be > 0");
  return arrayType(element, constU32(length), stride);
}

TypeId Module::arrayType(TypeId element, Value lengthConstant, uint32_t stride) {
  if (ownerOf(lengthConstant.id) != -1 || !isInt(lengthConstant.type) || isGlobalVariable(lengthConstant.id))
    throw BuildError("arrayType: length must be an integer constant or spec constant");
  typeInfo(element);
  const auto bits = constantBits(lengthConstant);
  TypeInfo info{.kind = TypeKind::Array,
                .elem = element,
                .count = bits ? static_cast<uint32_t>(*bits) : 0u,
                .lengthId = lengthConstant.id,
                .stride = stride};
  TypeId t = makeType({u(Op::OpTypeArray), element.id, lengthConstant.id, stride}, Op::OpTypeArray,
                      {element.id, lengthConstant.id}, info);
  if (stride) decorate(t.id, Decoration::ArrayStride, {stride});
  return t;
}

TypeId Module::runtimeArrayType(TypeId element, uint32_t stride) {
  typeInfo(element);
  TypeId t = makeType({u(Op::OpTypeRuntimeArray), element.id, stride}, Op::OpTypeRuntimeArray, {element.id},
                      {.kind = TypeKind::RuntimeArray, .elem = element, .stride = stride});
  if (stride) decorate(t.id, Decoration::ArrayStride, {stride});
  return t;
}

TypeId Module::structType(const std::vector<TypeId>& members) {
  return blockStruct(members, 0xffffffffu);
}

TypeId Module::blockStruct(const std::vector<TypeId>& members, uint32_t tag) {
  std::vector<uint32_t> key{u(Op::OpTypeStruct), tag};
  std::vector<uint32_t> ops;
  for (TypeId m : members) {
    typeInfo(m);
    key.push_back(m.id);
    ops.push_back(m.id);
  }
  return makeType(std::move(key), Op::OpTypeStruct, std::move(ops),
                  {.kind = TypeKind::Struct, .members = members});
}

bool Module::containsWidth(TypeId t, uint32_t width, std::set<uint32_t>& seen) const {
  if (!seen.insert(t.id).second) return false;
  const TypeInfo& i = typeInfo(t);
  switch (i.kind) {
  case TypeKind::Int:
  case TypeKind::Float:
    return i.width == width;
  case TypeKind::Vector:
  case TypeKind::Array:
  case TypeKind::RuntimeArray:
  case TypeKind::CoopMatrix:
    return containsWidth(i.elem, width, seen);
  case TypeKind::Struct:
    return std::any_of(i.members.begin(), i.members.end(),
                       [&](TypeId m) { return containsWidth(m, width, seen); });
  default:
    return false;
  }
}

void Module::require16or8BitStorage(StorageClass sc, TypeId pointee) {
  // Per width: the capability each storage class needs, and the extension that carried them before SPIR-V
  // `coreVersion` made them core.
  struct Narrow {
    uint32_t width;
    Capability storageBuffer, uniform, pushConstant;
    std::optional<Capability> inputOutput; // 8-bit inputs and outputs have none
    const char* extension;
    uint32_t coreVersion;
  };
  static const Narrow kNarrow[] = {
      {16, Capability::StorageBuffer16BitAccess, Capability::UniformAndStorageBuffer16BitAccess,
       Capability::StoragePushConstant16, Capability::StorageInputOutput16, "SPV_KHR_16bit_storage",
       0x00010300},
      {8, Capability::StorageBuffer8BitAccess, Capability::UniformAndStorageBuffer8BitAccess,
       Capability::StoragePushConstant8, std::nullopt, "SPV_KHR_8bit_storage", 0x00010500}};
  for (const Narrow& n : kNarrow) {
    std::set<uint32_t> seen;
    if (!containsWidth(pointee, n.width, seen)) continue;
    std::optional<Capability> cap;
    switch (sc) {
    case StorageClass::StorageBuffer:
      cap = n.storageBuffer;
      break;
    case StorageClass::Uniform:
      cap = n.uniform;
      break;
    case StorageClass::PushConstant:
      cap = n.pushConstant;
      break;
    case StorageClass::Input:
    case StorageClass::Output:
      cap = n.inputOutput;
      break;
    default:
      break;
    }
    if (!cap) continue;
    addCapability(*cap);
    if (options_.version < n.coreVersion) addExtension(n.extension);
  }
}

TypeId Module::pointerType(StorageClass storage, TypeId pointee) {
  typeInfo(pointee);
  const bool isNew = !typeKeys_.count({u(Op::OpTypePointer), w(storage), pointee.id});
  TypeId t =
      makeType({u(Op::OpTypePointer), w(storage), pointee.id}, Op::OpTypePointer, {w(storage), pointee.id},
               {.kind = TypeKind::Pointer, .elem = pointee, .storage = storage});
  if (isNew) {
    require16or8BitStorage(storage, pointee);
    if (storage == StorageClass::StorageBuffer && options_.version < 0x00010300)
      addExtension("SPV_KHR_storage_buffer_storage_class");
  }
  return t;
}

TypeId Module::functionType(TypeId returnType, const std::vector<TypeId>& params) {
  std::vector<uint32_t> key{u(Op::OpTypeFunction), returnType.id};
  std::vector<uint32_t> ops{returnType.id};
  for (TypeId p : params) {
    key.push_back(p.id);
    ops.push_back(p.id);
  }
  return makeType(std::move(key), Op::OpTypeFunction, std::move(ops),
                  {.kind = TypeKind::Function, .elem = returnType, .members = params});
}

namespace {

TypeInfo coopInfo(TypeId elem, uint32_t rows, uint32_t cols, CoopUse use, Scope scope, bool bfloat) {
  return {.kind = TypeKind::CoopMatrix,
          .elem = elem,
          .count = rows,
          .cols = cols,
          .scope = scope,
          .use = use,
          .bfloat = bfloat};
}

} // namespace

TypeId Module::coopMatrixType(TypeId component, uint32_t rows, uint32_t cols, CoopUse use, Scope scope) {
  const TypeInfo& ci = typeInfo(component);
  if (ci.kind != TypeKind::Int && ci.kind != TypeKind::Float)
    throw BuildError("coopMatrixType: component must be an int or float scalar, got " + typeName(component));
  if (rows == 0 || cols == 0) throw BuildError("coopMatrixType: rows and cols must be > 0");
  const Value s = constU32(w(scope)), r = constU32(rows), c = constU32(cols), us = constU32(w(use));
  const TypeInfo info = coopInfo(component, rows, cols, use, scope, ci.bfloat);
  std::vector<uint32_t> key{u(Op::OpTypeCooperativeMatrixKHR), component.id, s.id, r.id, c.id, us.id};
  if (coopLowered()) return loweredCoopType(std::move(key), info);
  useVulkanMemoryModel();
  addCapability(Capability::CooperativeMatrixKHR);
  if (ci.bfloat) addCapability(Capability::BFloat16CooperativeMatrixKHR);
  addExtension("SPV_KHR_cooperative_matrix");
  return makeType(std::move(key), Op::OpTypeCooperativeMatrixKHR, {component.id, s.id, r.id, c.id, us.id},
                  info);
}

TypeId Module::bf16CoopMatrixType(uint32_t rows, uint32_t cols, CoopUse use, Scope scope) {
  if (!coopLowered()) return coopMatrixType(bf16(), rows, cols, use, scope);
  if (rows == 0 || cols == 0) throw BuildError("bf16CoopMatrixType: rows and cols must be > 0");
  const TypeId bits = intType(16, false);
  const TypeInfo info = coopInfo(bits, rows, cols, use, scope, true);
  // Keyed apart from a uint16 coop matrix of the same shape by the encoding word.
  return loweredCoopType({u(Op::OpTypeCooperativeMatrixKHR), bits.id, w(scope), rows, cols, w(use),
                          w(::spv::FPEncoding::BFloat16KHR)},
                         info);
}

TypeId Module::loweredCoopType(std::vector<uint32_t> key, const TypeInfo& info) {
  const uint32_t sg = options_.coopLowerSubgroup;
  if (info.scope != Scope::Subgroup)
    throw BuildError("coopMatrixType: the coop lowering supports subgroup scope only");
  if (info.count * info.cols % sg != 0)
    throw BuildError("coopMatrixType: " + std::to_string(info.count) + "x" + std::to_string(info.cols) +
                     " does not split evenly over a subgroup of " + std::to_string(sg));
  // Its own OpTypeArray (aggregates may be declared twice), so each logical coop type keeps its id.
  return makeType(std::move(key), Op::OpTypeArray, {info.elem.id, constU32(info.count * info.cols / sg).id},
                  info);
}

const TypeInfo& Module::typeInfo(TypeId t) const {
  auto it = types_.find(t.id);
  if (it == types_.end()) throw BuildError("unknown type id %" + std::to_string(t.id));
  return it->second;
}

std::string Module::typeName(TypeId t) const {
  auto it = types_.find(t.id);
  if (it == types_.end()) return "<not a type: %" + std::to_string(t.id) + ">";
  const TypeInfo& i = it->second;
  switch (i.kind) {
  case TypeKind::Void:
    return "void";
  case TypeKind::Bool:
    return "bool";
  case TypeKind::Int:
    return (i.isSigned ? "int" : "uint") + std::to_string(i.width);
  case TypeKind::Float:
    return i.bfloat ? "bfloat16" : "float" + std::to_string(i.width);
  case TypeKind::Vector:
    return "vec" + std::to_string(i.count) + "<" + typeName(i.elem) + ">";
  case TypeKind::Array:
    return "array<" + typeName(i.elem) + ", " + (i.count ? std::to_string(i.count) : "spec") + ">";
  case TypeKind::RuntimeArray:
    return "array<" + typeName(i.elem) + ">";
  case TypeKind::Struct: {
    std::string s = "struct{";
    for (size_t k = 0; k < i.members.size(); ++k)
      s += (k ? ", " : "") + typeName(i.members[k]);
    return s + "}";
  }
  case TypeKind::Pointer:
    return std::string("ptr<") + ::spv::StorageClassToString(i.storage) + ", " + typeName(i.elem) + ">";
  case TypeKind::Function:
    return "function<" + typeName(i.elem) + ">";
  case TypeKind::CoopMatrix:
    return "coopmat<" + (i.bfloat ? std::string("bfloat16") : typeName(i.elem)) + ", " +
           std::to_string(i.count) + "x" + std::to_string(i.cols) + ", " +
           ::spv::CooperativeMatrixUseToString(i.use) + ">";
  case TypeKind::TensorLayout:
    return "tensorLayout<" + std::to_string(i.count) + ">";
  case TypeKind::TensorView:
    return "tensorView<" + std::to_string(i.count) + ">";
  }
  return "?";
}

TypeId Module::scalarTypeOf(TypeId t) const {
  const TypeInfo& i = typeInfo(t);
  return (i.kind == TypeKind::Vector || i.kind == TypeKind::CoopMatrix) ? i.elem : t;
}
uint32_t Module::componentCount(TypeId t) const {
  const TypeInfo& i = typeInfo(t);
  return i.kind == TypeKind::Vector ? i.count : 1u;
}
bool Module::isFloat(TypeId t) const {
  return typeInfo(scalarTypeOf(t)).kind == TypeKind::Float;
}
bool Module::isInt(TypeId t) const {
  return typeInfo(scalarTypeOf(t)).kind == TypeKind::Int;
}
bool Module::isSignedInt(TypeId t) const {
  const TypeInfo& i = typeInfo(scalarTypeOf(t));
  return i.kind == TypeKind::Int && i.isSigned;
}
bool Module::isBool(TypeId t) const {
  return typeInfo(scalarTypeOf(t)).kind == TypeKind::Bool;
}
TypeId Module::pointeeOf(TypeId pointer) const {
  const TypeInfo& i = typeInfo(pointer);
  if (i.kind != TypeKind::Pointer) throw BuildError("expected a pointer type, got " + typeName(pointer));
  return i.elem;
}

uint32_t Module::alignOf(TypeId t) const {
  const TypeInfo& i = typeInfo(t);
  switch (i.kind) {
  case TypeKind::Bool:
    return 4;
  case TypeKind::Int:
  case TypeKind::Float:
    return i.width / 8;
  case TypeKind::Vector:
    return (i.count == 2 ? 2 : 4) * alignOf(i.elem);
  case TypeKind::Array:
  case TypeKind::RuntimeArray:
    return alignOf(i.elem);
  case TypeKind::Struct: {
    uint32_t a = 1;
    for (TypeId m : i.members)
      a = std::max(a, alignOf(m));
    return a;
  }
  default:
    throw BuildError("alignOf: type " + typeName(t) + " has no memory layout");
  }
}

uint32_t Module::sizeOf(TypeId t) const {
  const TypeInfo& i = typeInfo(t);
  switch (i.kind) {
  case TypeKind::Bool:
    return 4;
  case TypeKind::Int:
  case TypeKind::Float:
    return i.width / 8;
  case TypeKind::Vector:
    return i.count * sizeOf(i.elem);
  case TypeKind::Array: {
    if (i.count == 0) throw BuildError("sizeOf: array length is a spec constant");
    const uint32_t stride = i.stride ? i.stride : roundUp(sizeOf(i.elem), alignOf(i.elem));
    return i.count * stride;
  }
  case TypeKind::RuntimeArray:
    return 0;
  case TypeKind::Struct: {
    uint32_t off = 0;
    for (TypeId m : i.members)
      off = roundUp(off, alignOf(m)) + sizeOf(m);
    return roundUp(off, alignOf(t));
  }
  default:
    throw BuildError("sizeOf: type " + typeName(t) + " has no memory layout");
  }
}

// ------------------------------------------------------------------------------------------ constants

Value Module::makeConstant(Op op, TypeId type, std::vector<uint32_t> literals, std::optional<uint64_t> bits) {
  std::vector<uint32_t> key{u(op), type.id};
  key.insert(key.end(), literals.begin(), literals.end());
  if (auto it = constKeys_.find(key); it != constKeys_.end()) return Value{it->second, type};
  const uint32_t id = newId();
  InstBuilder(op).word(type.id).word(id).words(literals).appendTo(globals_);
  constKeys_.emplace(std::move(key), id);
  if (bits) constBits_[id] = *bits;
  return Value{id, type};
}

Value Module::constBool(bool v) {
  return makeConstant(v ? Op::OpConstantTrue : Op::OpConstantFalse, boolType(), {}, v ? 1u : 0u);
}
Value Module::constI32(int32_t v) {
  const auto bitsv = static_cast<uint32_t>(v);
  return makeConstant(Op::OpConstant, i32(), {bitsv}, bitsv);
}
Value Module::constU32(uint32_t v) {
  return makeConstant(Op::OpConstant, u32(), {v}, v);
}
Value Module::constI64(int64_t v) {
  const auto b = static_cast<uint64_t>(v);
  return makeConstant(Op::OpConstant, i64(), {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)}, b);
}
Value Module::constU64(uint64_t v) {
  return makeConstant(Op::OpConstant, u64(), {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}, v);
}
Value Module::constF16(float v) {
  const uint32_t b = floatToHalf(v);
  return makeConstant(Op::OpConstant, f16(), {b}, b);
}
Value Module::constF32(float v) {
  const auto b = std::bit_cast<uint32_t>(v);
  return makeConstant(Op::OpConstant, f32(), {b}, b);
}
Value Module::constF64(double v) {
  const auto b = std::bit_cast<uint64_t>(v);
  return makeConstant(Op::OpConstant, f64(), {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)}, b);
}

Value Module::constant(TypeId type, double v) {
  const TypeInfo& i = typeInfo(type);
  switch (i.kind) {
  case TypeKind::Bool:
    return constBool(v != 0.0);
  case TypeKind::Float:
    if (i.bfloat) {
      const uint32_t b = floatToBf16(static_cast<float>(v));
      return makeConstant(Op::OpConstant, type, {b}, b);
    }
    if (i.width == 16) return constF16(static_cast<float>(v));
    if (i.width == 32) return constF32(static_cast<float>(v));
    return constF64(v);
  case TypeKind::Int: {
    const auto iv = static_cast<int64_t>(v);
    if (i.width == 64) {
      const auto b = static_cast<uint64_t>(iv);
      return makeConstant(Op::OpConstant, type, {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)},
                          b);
    }
    const uint64_t mask = (uint64_t{1} << i.width) - 1u;
    const uint64_t b = static_cast<uint64_t>(iv) & mask;
    // Signed types narrower than 32 bits are sign-extended into the literal word.
    const uint32_t word =
        i.isSigned ? static_cast<uint32_t>(static_cast<int32_t>(iv)) : static_cast<uint32_t>(b);
    return makeConstant(Op::OpConstant, type, {word}, b);
  }
  case TypeKind::Vector: {
    const Value c = constant(i.elem, v);
    return constComposite(type, std::vector<Value>(i.count, c));
  }
  case TypeKind::CoopMatrix:
    if (coopLowered() && i.bfloat) {
      const Value bits = constant(i.elem, floatToBf16(static_cast<float>(v)));
      return constComposite(type, std::vector<Value>(coopSlots(type), bits));
    }
    if (coopLowered()) return constComposite(type, std::vector<Value>(coopSlots(type), constant(i.elem, v)));
    return constComposite(type, {constant(i.elem, v)});
  default:
    throw BuildError("constant: cannot make a scalar constant of type " + typeName(type));
  }
}

Value Module::constComposite(TypeId type, const std::vector<Value>& constituents) {
  std::vector<uint32_t> ids;
  for (const Value& c : constituents) {
    if (ownerOf(c.id) != -1 || isGlobalVariable(c.id))
      throw BuildError("constComposite: constituent %" + std::to_string(c.id) + " is not a constant");
    ids.push_back(c.id);
  }
  typeInfo(type);
  return makeConstant(Op::OpConstantComposite, type, std::move(ids), std::nullopt);
}

Value Module::constNull(TypeId type) {
  typeInfo(type);
  return makeConstant(Op::OpConstantNull, type, {}, std::nullopt);
}

std::optional<uint64_t> Module::constantBits(Value v) const {
  auto it = constBits_.find(v.id);
  if (it == constBits_.end()) return std::nullopt;
  return it->second;
}

Value Module::makeSpecConstant(uint32_t specId, TypeId type, Op op, std::vector<uint32_t> literals) {
  for (const auto& d : decorations_)
    if (d.size() == 4 && d[2] == w(Decoration::SpecId) && d[3] == specId)
      throw BuildError("spec constant: SpecId " + std::to_string(specId) + " already used");
  const uint32_t id = newId();
  InstBuilder(op).word(type.id).word(id).words(literals).appendTo(globals_);
  decorate(id, Decoration::SpecId, {specId});
  return Value{id, type};
}

Value Module::specConstBool(uint32_t specId, bool v) {
  return makeSpecConstant(specId, boolType(), v ? Op::OpSpecConstantTrue : Op::OpSpecConstantFalse, {});
}
Value Module::specConstU32(uint32_t specId, uint32_t v) {
  return makeSpecConstant(specId, u32(), Op::OpSpecConstant, {v});
}
Value Module::specConstI32(uint32_t specId, int32_t v) {
  return makeSpecConstant(specId, i32(), Op::OpSpecConstant, {static_cast<uint32_t>(v)});
}
Value Module::specConstF32(uint32_t specId, float v) {
  return makeSpecConstant(specId, f32(), Op::OpSpecConstant, {std::bit_cast<uint32_t>(v)});
}

Value Module::specConstOp(TypeId resultType, Op op, const std::vector<Value>& operands) {
  typeInfo(resultType);
  const uint32_t id = newId();
  InstBuilder b(Op::OpSpecConstantOp);
  b.word(resultType.id).word(id).word(u(op));
  for (const Value& v : operands) {
    if (ownerOf(v.id) != -1 || isGlobalVariable(v.id))
      throw BuildError("specConstOp: operand %" + std::to_string(v.id) + " is not a constant");
    b.word(v.id);
  }
  b.appendTo(globals_);
  return Value{id, resultType};
}

// ------------------------------------------------------------------------------------------- globals

Value Module::globalVariable(TypeId pointee, StorageClass storage, std::optional<Value> initializer) {
  if (storage == StorageClass::Function)
    throw BuildError("globalVariable: Function storage variables belong to FunctionBuilder::variable");
  const TypeId ptr = pointerType(storage, pointee);
  const uint32_t id = newId();
  InstBuilder b(Op::OpVariable);
  b.word(ptr.id).word(id).word(w(storage));
  if (initializer) {
    if (initializer->type != pointee)
      throw BuildError("globalVariable: initializer type " + typeName(initializer->type) + " differs from " +
                       typeName(pointee));
    b.word(initializer->id);
  }
  b.appendTo(globals_);
  globalVars_.push_back(id);
  globalVarStorage_.emplace(id, storage);
  return Value{id, ptr};
}

Value Module::workgroupArray(TypeId element, uint32_t count) {
  return globalVariable(arrayType(element, count), StorageClass::Workgroup);
}
Value Module::workgroupArray(TypeId element, Value countConstant) {
  return globalVariable(arrayType(element, countConstant), StorageClass::Workgroup);
}

Buffer Module::storageBuffer(uint32_t binding, TypeId element, Access access, uint32_t set) {
  for (const auto& d : decorations_) {
    // A (set, binding) pair may only be used once: look for a variable with both decorations.
    if (d.size() == 4 && d[2] == w(Decoration::Binding) && d[3] == binding &&
        decorations_.count({d[0], 0xffffffffu, w(Decoration::DescriptorSet), set}))
      throw BuildError("storageBuffer: set " + std::to_string(set) + " binding " + std::to_string(binding) +
                       " already used");
  }
  const uint32_t stride = roundUp(sizeOf(element), alignOf(element));
  const TypeId rta = runtimeArrayType(element, stride);
  const TypeId st = blockStruct({rta}, 0);
  decorate(st.id, Decoration::Block);
  decorateMember(st, 0, Decoration::Offset, {0});
  const Value var = globalVariable(st, StorageClass::StorageBuffer);
  decorate(var.id, Decoration::DescriptorSet, {set});
  decorate(var.id, Decoration::Binding, {binding});
  if (access == Access::ReadOnly) decorate(var.id, Decoration::NonWritable);
  if (access == Access::WriteOnly) decorate(var.id, Decoration::NonReadable);
  setName(var.id, "buf" + std::to_string(binding));
  return Buffer{var, element, pointerType(StorageClass::StorageBuffer, element), set, binding};
}

PushConstants Module::pushConstants(const std::vector<TypeId>& members) {
  if (hasPushConstants_) throw BuildError("pushConstants: the module already has a push-constant block");
  hasPushConstants_ = true;
  PushConstants pc;
  uint32_t off = 0;
  for (TypeId m : members) {
    TypeId mt = m;
    const TypeInfo& mi = typeInfo(m);
    if (mi.kind == TypeKind::Array && mi.stride == 0) // give arrays their explicit layout
      mt = arrayType(mi.elem, Value{mi.lengthId, u32()}, roundUp(sizeOf(mi.elem), alignOf(mi.elem)));
    off = roundUp(off, alignOf(mt));
    pc.members.push_back(mt);
    pc.offsets.push_back(off);
    off += sizeOf(mt);
  }
  pc.size = roundUp(off, 4);
  const TypeId st = blockStruct(pc.members, nextBlockTag_++);
  decorate(st.id, Decoration::Block);
  for (uint32_t k = 0; k < pc.members.size(); ++k)
    decorateMember(st, k, Decoration::Offset, {pc.offsets[k]});
  pc.var = globalVariable(st, StorageClass::PushConstant);
  setName(pc.var.id, "pc");
  return pc;
}

Value Module::builtinVariable(BuiltIn b) {
  if (auto it = builtins_.find(b); it != builtins_.end()) return it->second;
  TypeId t;
  switch (b) {
  case BuiltIn::GlobalInvocationId:
  case BuiltIn::LocalInvocationId:
  case BuiltIn::WorkgroupId:
  case BuiltIn::NumWorkgroups:
    t = vectorType(u32(), 3);
    break;
  case BuiltIn::LocalInvocationIndex:
    t = u32();
    break;
  case BuiltIn::SubgroupLocalInvocationId:
  case BuiltIn::SubgroupId:
  case BuiltIn::NumSubgroups:
  case BuiltIn::SubgroupSize:
    addCapability(Capability::GroupNonUniform);
    t = u32();
    break;
  default:
    throw BuildError(std::string("builtinVariable: unsupported builtin ") + ::spv::BuiltInToString(b));
  }
  const Value v = globalVariable(t, StorageClass::Input);
  decorate(v.id, Decoration::BuiltIn, {w(b)});
  setName(v.id, ::spv::BuiltInToString(b));
  builtins_.emplace(b, v);
  return v;
}

// ------------------------------------------------------------------------------- decorations, names

void Module::decorate(uint32_t target, Decoration d, std::initializer_list<uint32_t> literals) {
  if (vulkanMemoryModel() && (d == Decoration::Coherent || d == Decoration::Volatile))
    throw BuildError("decorate: no Coherent or Volatile under the Vulkan memory model (mark the accesses "
                     "MemoryAccess::nonPrivate() instead)");
  std::vector<uint32_t> key{target, 0xffffffffu, w(d)};
  key.insert(key.end(), literals.begin(), literals.end());
  if (!decorations_.insert(key).second) return; // identical decoration already present
  InstBuilder(Op::OpDecorate)
      .word(target)
      .word(w(d))
      .words(std::vector<uint32_t>(literals))
      .appendTo(annotations_);
}

void Module::decorateMember(TypeId structType, uint32_t member, Decoration d,
                            std::initializer_list<uint32_t> literals) {
  const TypeInfo& i = typeInfo(structType);
  if (i.kind != TypeKind::Struct || member >= i.members.size())
    throw BuildError("decorateMember: " + typeName(structType) + " has no member " + std::to_string(member));
  std::vector<uint32_t> key{structType.id, member, w(d)};
  key.insert(key.end(), literals.begin(), literals.end());
  if (!decorations_.insert(key).second) return;
  InstBuilder(Op::OpMemberDecorate)
      .word(structType.id)
      .word(member)
      .word(w(d))
      .words(std::vector<uint32_t>(literals))
      .appendTo(annotations_);
}

void Module::setName(uint32_t target, std::string_view name) {
  InstBuilder(Op::OpName).word(target).string(name).appendTo(names_);
}
void Module::setMemberName(TypeId structType, uint32_t member, std::string_view name) {
  InstBuilder(Op::OpMemberName).word(structType.id).word(member).string(name).appendTo(names_);
}

std::string Module::describe(Value v) const {
  return "%" + std::to_string(v.id) + " (" + typeName(v.type) + ")";
}

// ----------------------------------------------------------------------------------------- functions

FunctionBuilder& Module::function(std::string name, TypeId returnType, const std::vector<TypeId>& params) {
  const auto index = static_cast<int32_t>(functions_.size());
  functions_.push_back(std::make_unique<FunctionBuilder>(*this, index, std::move(name), returnType, params));
  return *functions_.back();
}

FunctionBuilder& Module::entryPoint(std::string name, WorkgroupSize size) {
  if (size.x == 0 || size.y == 0 || size.z == 0) throw BuildError("entryPoint: workgroup size must be > 0");
  FunctionBuilder& fb = function(name, voidType());
  entryPoints_.push_back({functions_.size() - 1, std::move(name), size, std::nullopt});
  return fb;
}

FunctionBuilder& Module::entryPointLocalSizeId(std::string name, std::array<Value, 3> sizeIds) {
  if (options_.version < 0x00010200)
    throw BuildError("entryPointLocalSizeId: LocalSizeId needs SPIR-V >= 1.2");
  for (const Value& v : sizeIds)
    if (ownerOf(v.id) != -1 || isGlobalVariable(v.id) || v.type != u32())
      throw BuildError(
          "entryPointLocalSizeId: LocalSizeId operands must be uint32 constants or spec constants, got " +
          describe(v));
  FunctionBuilder& fb = function(name, voidType());
  entryPoints_.push_back({functions_.size() - 1, std::move(name), {}, sizeIds});
  return fb;
}

void Module::addExecutionMode(const FunctionBuilder& fn, ExecutionMode mode,
                              std::initializer_list<uint32_t> literals) {
  InstBuilder(Op::OpExecutionMode)
      .word(fn.id().id)
      .word(w(mode))
      .words(std::vector<uint32_t>(literals))
      .appendTo(executionModes_);
}

std::vector<uint32_t> Module::build() {
  if (entryPoints_.empty()) throw BuildError("build: module has no entry point (call Module::entryPoint)");
  for (auto& f : functions_)
    f->finish();

  std::vector<uint32_t> out{::spv::MagicNumber, options_.version, options_.generator, nextId_, 0u};
  for (Capability c : capabilities_)
    InstBuilder(Op::OpCapability).word(w(c)).appendTo(out);
  for (const auto& e : extensions_)
    InstBuilder(Op::OpExtension).string(e).appendTo(out);
  if (glslImport_) InstBuilder(Op::OpExtInstImport).word(glslImport_).string("GLSL.std.450").appendTo(out);
  InstBuilder(Op::OpMemoryModel).word(w(::spv::AddressingModel::Logical)).word(w(memoryModel_)).appendTo(out);

  for (const auto& ep : entryPoints_) {
    // Interface: every global variable used by the entry point's call tree (only Input/Output before 1.4).
    std::set<uint32_t> used;
    std::set<size_t> visited;
    std::vector<size_t> stack{ep.function};
    while (!stack.empty()) {
      const size_t f = stack.back();
      stack.pop_back();
      if (!visited.insert(f).second) continue;
      used.insert(functions_[f]->usedGlobals_.begin(), functions_[f]->usedGlobals_.end());
      stack.insert(stack.end(), functions_[f]->callees_.begin(), functions_[f]->callees_.end());
    }
    InstBuilder b(Op::OpEntryPoint);
    b.word(w(::spv::ExecutionModel::GLCompute)).word(functions_[ep.function]->id().id).string(ep.name);
    for (uint32_t id : used) {
      const StorageClass sc = globalVarStorage_.at(id);
      if (options_.version >= 0x00010400 || sc == StorageClass::Input || sc == StorageClass::Output)
        b.word(id);
    }
    b.appendTo(out);
  }
  for (const auto& ep : entryPoints_) {
    const uint32_t fid = functions_[ep.function]->id().id;
    if (ep.sizeIds) {
      InstBuilder(Op::OpExecutionModeId)
          .word(fid)
          .word(w(ExecutionMode::LocalSizeId))
          .word((*ep.sizeIds)[0].id)
          .word((*ep.sizeIds)[1].id)
          .word((*ep.sizeIds)[2].id)
          .appendTo(out);
    } else {
      InstBuilder(Op::OpExecutionMode)
          .word(fid)
          .word(w(ExecutionMode::LocalSize))
          .word(ep.size.x)
          .word(ep.size.y)
          .word(ep.size.z)
          .appendTo(out);
    }
  }
  out.insert(out.end(), executionModes_.begin(), executionModes_.end());
  out.insert(out.end(), names_.begin(), names_.end());
  out.insert(out.end(), annotations_.begin(), annotations_.end());
  out.insert(out.end(), globals_.begin(), globals_.end());
  for (const auto& f : functions_)
    f->writeTo(out);
  return out;
}

} // namespace helios::spv
