#pragma once
// What the builder knows about each type id: enough to infer result types, check operands, compute
// std430 layouts and print readable names in error messages.
#include <cstdint>
#include <vector>

#include "codegen/spirv/ids.hpp"

namespace helios::spv {

enum class TypeKind : uint8_t {
  Void,
  Bool,
  Int,
  Float,
  Vector,
  Array,
  RuntimeArray,
  Struct,
  Pointer,
  Function,
  CoopMatrix,
  TensorLayout, // SPV_NV_tensor_addressing; count = dimensions
  TensorView,   // count = dimensions, cols = 1 if the view has its own dimensions
};

struct TypeInfo {
  TypeKind kind = TypeKind::Void;
  uint32_t width = 0;    // Int / Float: bits
  bool isSigned = false; // Int
  TypeId elem;           // Vector component, Array element, Pointer pointee, Function return,
                         // CoopMatrix component
  uint32_t count = 0;    // Vector size; Array length (0 if a spec constant); CoopMatrix rows
  uint32_t cols = 0;     // CoopMatrix cols
  uint32_t lengthId = 0; // Array: id of the length constant
  uint32_t stride = 0;   // Array / RuntimeArray: explicit ArrayStride (0 = no layout)
  StorageClass storage = StorageClass::Function; // Pointer
  Scope scope = Scope::Subgroup;                 // CoopMatrix
  CoopUse use = CoopUse::MatrixAKHR;             // CoopMatrix
  // Float: the BFloat16KHR encoding (SPV_KHR_bfloat16). CoopMatrix: bf16 components; in a lowered module
  // (no bf16 type there) `elem` is uint16 and holds their bits.
  bool bfloat = false;
  std::vector<TypeId> members; // Struct members; Function parameters

  bool isScalar() const { return kind == TypeKind::Bool || kind == TypeKind::Int || kind == TypeKind::Float; }
};

} // namespace helios::spv
