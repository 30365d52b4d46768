#pragma once
// helios::spv::Module: one SPIR-V module under construction. Owns ids, de-duplicated types and constants,
// global variables, decorations, debug names, capabilities/extensions (derived from what is used), entry
// points and functions; build() emits the words with sections in the order the spec fixes.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/spirv/ids.hpp"
#include "codegen/spirv/types.hpp"

namespace helios::spv {

class FunctionBuilder;

struct ModuleOptions {
  uint32_t version = 0x00010600; // SPIR-V 1.6 (Vulkan 1.3)
  uint32_t generator = 0;        // generator magic (upper 16 bits vendor id, lower version)
  // Or MemoryModel::Vulkan (adds VulkanMemoryModel). A module that declares a (not lowered) cooperative
  // matrix type switches to Vulkan itself: SPIR-V validation requires it beside Shader and
  // CooperativeMatrixKHR (SPIRV-Tools 2025.2 on). Under it the builder marks every Workgroup access
  // NonPrivatePointer and gives release/acquire semantics their MakeAvailable/MakeVisible bits, so barriers
  // keep publishing shared memory as they do under GLSL450; Device scope adds VulkanMemoryModelDeviceScope.
  MemoryModel memoryModel = MemoryModel::GLSL450;
  // Cooperative-matrix lowering (coop_lowering.cpp): the subgroup size to lower for, 0 = off. When on, each
  // coop matrix type is an array of rows*cols/size components per invocation (slot s of lane l holds element
  // s*size + l, counted column-major for use A and row-major otherwise) and the coop instructions become
  // ordinary SPIR-V with subgroup shuffles, for devices without VK_KHR_cooperative_matrix.
  uint32_t coopLowerSubgroup = 0;
};

// Whether a lowered M x N x K MulAdd at `subgroupSize` lanes can fetch each A and B component with one
// shuffle: for every C slot and k, all lanes read the same source slot (true for powers of two).
bool coopLoweredMulAddShuffles(uint32_t m, uint32_t n, uint32_t k, uint32_t subgroupSize);

// Fixed workgroup size (OpExecutionMode LocalSize).
struct WorkgroupSize {
  uint32_t x = 1, y = 1, z = 1;
};

enum class Access { ReadWrite, ReadOnly, WriteOnly };

// A storage buffer `layout(set, binding) buffer { T data[]; }` made by Module::storageBuffer.
struct Buffer {
  Value var;         // pointer to the Block struct, StorageBuffer storage class
  TypeId element;    // T
  TypeId elementPtr; // pointer(StorageBuffer, T)
  uint32_t set = 0;
  uint32_t binding = 0;
};

// A push-constant block made by Module::pushConstants (std430-like offsets).
struct PushConstants {
  Value var; // pointer to the Block struct, PushConstant storage class
  std::vector<TypeId> members;
  std::vector<uint32_t> offsets; // byte offset of each member
  uint32_t size = 0;             // total bytes (what the pipeline layout's range must cover)
};

class Module {
public:
  explicit Module(ModuleOptions options = {});
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const ModuleOptions& options() const { return options_; }
  MemoryModel memoryModel() const { return memoryModel_; }
  bool vulkanMemoryModel() const { return memoryModel_ == MemoryModel::Vulkan; }
  // Release/acquire `semantics` with the availability/visibility bits the Vulkan memory model needs (as they
  // are under GLSL450); FunctionBuilder passes every barrier's and atomic's semantics through it.
  uint32_t memorySemantics(uint32_t semantics) const;
  // Called by FunctionBuilder before it emits a memory access or barrier: the memory model is settled then.
  void noteMemoryOperation() { memoryOperations_ = true; }

  // ---- ids, capabilities, extensions, imports ----
  uint32_t newId() { return allocId(-1); }
  uint32_t idBound() const { return nextId_; }
  void addCapability(Capability c);
  bool hasCapability(Capability c) const;
  void addExtension(std::string_view name);
  bool hasExtension(std::string_view name) const;
  uint32_t glslStd450(); // id of the GLSL.std.450 import, added on first use

  // ---- types (de-duplicated; capabilities added as needed) ----
  TypeId voidType();
  TypeId boolType();
  TypeId intType(uint32_t width, bool isSigned);
  TypeId floatType(uint32_t width);
  TypeId i32() { return intType(32, true); }
  TypeId u32() { return intType(32, false); }
  TypeId i64() { return intType(64, true); }
  TypeId u64() { return intType(64, false); }
  TypeId f16() { return floatType(16); }
  TypeId f32() { return floatType(32); }
  TypeId f64() { return floatType(64); }
  // OpTypeFloat 16 BFloat16KHR (SPV_KHR_bfloat16): conversions, loads, stores and coop matrices only. A
  // lowered module has none (the devices it runs on lack the type): it throws there.
  TypeId bf16();
  TypeId vectorType(TypeId component, uint32_t n);
  // stride != 0 makes a distinct, explicitly laid out array type (ArrayStride) for buffers/push constants;
  // stride == 0 is the plain type for Function/Workgroup/Private storage.
  TypeId arrayType(TypeId element, uint32_t length, uint32_t stride = 0);
  TypeId arrayType(TypeId element, Value lengthConstant, uint32_t stride = 0); // e.g. a spec constant
  TypeId runtimeArrayType(TypeId element, uint32_t stride = 0);
  TypeId structType(const std::vector<TypeId>& members); // de-duplicated; no decorations
  TypeId pointerType(StorageClass storage, TypeId pointee);
  TypeId functionType(TypeId returnType, const std::vector<TypeId>& params);
  TypeId coopMatrixType(TypeId component, uint32_t rows, uint32_t cols, CoopUse use,
                        Scope scope = Scope::Subgroup);
  // A coop matrix of bf16 components: of bf16() natively; lowered, of uint16 bits (TypeInfo::bfloat), which
  // the lowered instructions widen exactly to f32 (bits << 16) and round back to nearest even.
  TypeId bf16CoopMatrixType(uint32_t rows, uint32_t cols, CoopUse use, Scope scope = Scope::Subgroup);
  // SPV_NV_tensor_addressing (tensor_addressing.cpp): a tensor layout of `dims` dimensions, and a view that
  // permutes them (permutation[i] = which layout dimension is the view's i-th; hasDimensions: the view
  // carries its own dimensions and strides).
  TypeId tensorLayoutType(uint32_t dims, TensorClampMode clamp = TensorClampMode::Undefined);
  TypeId tensorViewType(bool hasDimensions, const std::vector<uint32_t>& permutation);

  const TypeInfo& typeInfo(TypeId t) const;
  std::string typeName(TypeId t) const;    // "float32", "vec4<uint32>", "ptr<StorageBuffer, ...>"
  TypeId scalarTypeOf(TypeId t) const;     // component type of scalar/vector/coopmat, else t
  uint32_t componentCount(TypeId t) const; // vector size, 1 for scalars
  bool isFloat(TypeId t) const;            // float scalar/vector/coopmat
  bool isInt(TypeId t) const;              // int scalar/vector/coopmat
  bool isSignedInt(TypeId t) const;
  bool isBool(TypeId t) const; // bool scalar/vector
  bool isBFloat16(TypeId t) const { return typeInfo(t).bfloat || typeInfo(scalarTypeOf(t)).bfloat; }
  bool isCoopMatrix(TypeId t) const { return typeInfo(t).kind == TypeKind::CoopMatrix; }
  bool coopLowered() const { return options_.coopLowerSubgroup != 0; }
  uint32_t coopSlots(TypeId coopType) const; // lowered: components per invocation (rows*cols/subgroup)
  bool isPointer(TypeId t) const { return typeInfo(t).kind == TypeKind::Pointer; }
  TypeId pointeeOf(TypeId pointer) const; // throws if not a pointer
  uint32_t sizeOf(TypeId t) const;        // std430 size in bytes
  uint32_t alignOf(TypeId t) const;       // std430 alignment in bytes

  // ---- constants (de-duplicated, except spec constants) ----
  Value constBool(bool v);
  Value constI32(int32_t v);
  Value constU32(uint32_t v);
  Value constI64(int64_t v);
  Value constU64(uint64_t v);
  Value constF16(float v); // rounded to nearest-even half
  Value constF32(float v);
  Value constF64(double v);
  Value constant(TypeId scalarType, double v); // any int/float/bool scalar type; vectors: splat composite
  Value constComposite(TypeId type, const std::vector<Value>& constituents);
  Value constNull(TypeId type);
  std::optional<uint64_t> constantBits(Value v) const; // literal bits of a non-spec scalar constant
  // Specialization constants: decorated SpecId, never de-duplicated.
  Value specConstBool(uint32_t specId, bool defaultValue);
  Value specConstU32(uint32_t specId, uint32_t defaultValue);
  Value specConstI32(uint32_t specId, int32_t defaultValue);
  Value specConstF32(uint32_t specId, float defaultValue);
  Value specConstOp(TypeId resultType, Op op, const std::vector<Value>& operands); // OpSpecConstantOp

  // ---- global variables ----
  Value globalVariable(TypeId pointee, StorageClass storage, std::optional<Value> initializer = {});
  Value workgroupArray(TypeId element, uint32_t count); // ptr<Workgroup, T[count]>
  Value workgroupArray(TypeId element, Value countConstant);
  // struct { T data[]; } with Block/Offset 0/ArrayStride, a StorageBuffer variable at (set, binding).
  Buffer storageBuffer(uint32_t binding, TypeId element, Access access = Access::ReadWrite, uint32_t set = 0);
  PushConstants pushConstants(const std::vector<TypeId>& members);
  // Input variable decorated BuiltIn (uvec3 or uint by builtin; de-duplicated).
  Value builtinVariable(BuiltIn b);

  // ---- decorations and names ----
  void decorate(uint32_t target, Decoration d, std::initializer_list<uint32_t> literals = {});
  void decorateMember(TypeId structType, uint32_t member, Decoration d,
                      std::initializer_list<uint32_t> literals = {});
  void setName(uint32_t target, std::string_view name);
  void setMemberName(TypeId structType, uint32_t member, std::string_view name);

  // ---- functions and entry points ----
  // A void() GLCompute entry point with LocalSize, positioned at its first block.
  FunctionBuilder& entryPoint(std::string name, WorkgroupSize size);
  // Same with LocalSizeId (e.g. spec constants from specConstU32); needs SPIR-V >= 1.2.
  FunctionBuilder& entryPointLocalSizeId(std::string name, std::array<Value, 3> sizeIds);
  FunctionBuilder& function(std::string name, TypeId returnType, const std::vector<TypeId>& params = {});
  void addExecutionMode(const FunctionBuilder& fn, ExecutionMode mode,
                        std::initializer_list<uint32_t> literals);

  // Finishes all functions (checking every block is terminated) and returns the module's words.
  std::vector<uint32_t> build();

  // ---- internals shared with FunctionBuilder ----
  uint32_t allocId(int32_t owner);
  int32_t ownerOf(uint32_t id) const { return id < owner_.size() ? owner_[id] : -2; }
  bool isGlobalVariable(uint32_t id) const { return globalVarStorage_.count(id) != 0; }
  std::string describe(Value v) const; // "%12 (float32)"

private:
  friend class FunctionBuilder;
  struct EntryPointInfo {
    size_t function;
    std::string name;
    WorkgroupSize size;
    std::optional<std::array<Value, 3>> sizeIds;
  };

  TypeId makeType(std::vector<uint32_t> key, Op op, std::vector<uint32_t> operands, TypeInfo info);
  Value makeConstant(Op op, TypeId type, std::vector<uint32_t> literals, std::optional<uint64_t> bits);
  Value makeSpecConstant(uint32_t specId, TypeId type, Op op, std::vector<uint32_t> literals);
  void require16or8BitStorage(StorageClass sc, TypeId pointee);
  bool containsWidth(TypeId t, uint32_t width, std::set<uint32_t>& seen) const;
  TypeId blockStruct(const std::vector<TypeId>& members, uint32_t tag);
  TypeId loweredCoopType(std::vector<uint32_t> key, const TypeInfo& info); // the array a coop type lowers to

  void useVulkanMemoryModel();

  ModuleOptions options_;
  MemoryModel memoryModel_;
  bool memoryOperations_ = false;
  uint32_t nextId_ = 1;
  std::vector<int32_t> owner_{-1}; // id -> owning function index, -1 = module scope
  std::vector<Capability> capabilities_;
  std::vector<std::string> extensions_;
  uint32_t glslImport_ = 0;
  std::vector<uint32_t> names_, annotations_, globals_;
  std::map<std::vector<uint32_t>, uint32_t> typeKeys_, constKeys_;
  std::unordered_map<uint32_t, TypeInfo> types_;
  std::unordered_map<uint32_t, uint64_t> constBits_;
  std::unordered_map<uint32_t, BuiltIn> builtinOf_;
  std::map<BuiltIn, Value> builtins_;
  std::vector<uint32_t> globalVars_;
  std::unordered_map<uint32_t, StorageClass> globalVarStorage_;
  bool hasPushConstants_ = false;
  std::set<std::vector<uint32_t>> decorations_;
  uint32_t nextBlockTag_ = 1;
  std::vector<std::unique_ptr<FunctionBuilder>> functions_;
  std::vector<EntryPointInfo> entryPoints_;
  std::vector<uint32_t> executionModes_;
};

} // namespace helios::spv
