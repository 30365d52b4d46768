#pragma once
// Typed ids for the SPIR-V builder: type ids, values (id + type), block and function ids, the builder's
// error type, and the SPIR-V enums (from SPIRV-Headers) re-exported into helios::spv.
#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <spirv/unified1/GLSL.std.450.h>
#include <spirv/unified1/spirv.hpp11>

namespace helios::spv {

// SPIRV-Headers' enums, so kernel code can write spv::StorageClass::StorageBuffer inside helios.
using Op = ::spv::Op;
using Capability = ::spv::Capability;
using StorageClass = ::spv::StorageClass;
using Decoration = ::spv::Decoration;
using BuiltIn = ::spv::BuiltIn;
using Scope = ::spv::Scope;
using MemorySemanticsMask = ::spv::MemorySemanticsMask;
using MemoryAccessMask = ::spv::MemoryAccessMask;
using GroupOperation = ::spv::GroupOperation;
using ExecutionMode = ::spv::ExecutionMode;
using MemoryModel = ::spv::MemoryModel;
using CoopUse = ::spv::CooperativeMatrixUse;
using CoopLayout = ::spv::CooperativeMatrixLayout;
using CoopOperands = ::spv::CooperativeMatrixOperandsMask;
using CoopReduce = ::spv::CooperativeMatrixReduceMask;
using TensorClampMode = ::spv::TensorClampMode;

// Thrown for any misuse of the builder (type mismatches, instructions after a terminator, ...).
class BuildError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Id of a type (OpType*). 0 = none.
struct TypeId {
  uint32_t id = 0;
  bool valid() const { return id != 0; }
  friend bool operator==(TypeId, TypeId) = default;
  friend auto operator<=>(TypeId, TypeId) = default;
};

// Any id that has a type: constants, variables (pointer type), instruction results, parameters.
struct Value {
  uint32_t id = 0;
  TypeId type;
  bool valid() const { return id != 0; }
  friend bool operator==(Value, Value) = default;
};

// Label id of a basic block.
struct BlockId {
  uint32_t id = 0;
  bool valid() const { return id != 0; }
  friend bool operator==(BlockId, BlockId) = default;
};

// Function id plus its type, for OpFunctionCall.
struct FunctionId {
  uint32_t id = 0;
  TypeId returnType;
  TypeId functionType;
};

// Optional memory-access operands of load/store/coop load/store.
struct MemoryAccess {
  uint32_t mask = 0;      // MemoryAccessMask bits
  uint32_t alignment = 0; // if nonzero, Aligned is added with this alignment (bytes)
  static MemoryAccess aligned(uint32_t bytes) { return {0, bytes}; }
  static MemoryAccess nontemporal() { return {static_cast<uint32_t>(MemoryAccessMask::Nontemporal), 0}; }
  // Read or written by other invocations of the same dispatch (NonPrivatePointer under the Vulkan memory
  // model; dropped under GLSL450, where the variable is decorated Coherent instead). Workgroup accesses
  // get it without asking.
  static MemoryAccess nonPrivate() { return {static_cast<uint32_t>(MemoryAccessMask::NonPrivatePointer), 0}; }
};

} // namespace helios::spv
