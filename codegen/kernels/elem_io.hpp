#pragma once
// How kernels hold each element type (codegen/elem.hpp) and turn it into f32 and back: f32 as it is, f16 as
// f16 (OpFConvert both ways), bf16 as uint16 bits on every device (no bf16 type needed: widened exactly by
// a shift, rounded to nearest even by integer arithmetic). Coop matrices of the 16-bit kinds are f16 ones, or
// bf16 ones (spv::Module::bf16CoopMatrixType: of the bf16 type natively, of uint16 bits when lowered).
#include "codegen/elem.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

// The storage type of one element (lanes == 1) or of a vector of `lanes`.
spv::TypeId elemStorageType(spv::Module& m, Elem e, uint32_t lanes = 1);
// A stored scalar or vector as f32 (exact for every kind).
spv::Value elemToF32(spv::FunctionBuilder& f, Elem e, spv::Value stored);
// An f32 scalar or vector in its storage form (f16 by OpFConvert, bf16 rounded to nearest even).
spv::Value elemFromF32(spv::FunctionBuilder& f, Elem e, spv::Value x);
// A coop matrix type of the 16-bit kind `e` (F16 or BF16).
spv::TypeId halfCoopType(spv::Module& m, Elem e, uint32_t rows, uint32_t cols, spv::CoopUse use);

} // namespace helios::codegen
