#pragma once
// Staging f32 data as a 16-bit kind (F16 or BF16) for cooperative-matrix kernels: eight floats rounded to
// nearest even and packed into one uvec4, the 16-byte unit their shared-memory tiles are made of (the coop
// GEMM's f32 operands, the coop attention's q/k/v/dO), and the same unit written and read back (the coop
// attention's 16-bit outputs).
#include "codegen/elem.hpp"
#include "codegen/spirv/builder.hpp"

#include <utility>

namespace helios::codegen {

// The floats of 8-element vector `i` of `vec4s` (an f32 buffer declared with vec4 elements: vec4s 2i and
// 2i + 1), each rounded to nearest `kind`, as a uvec4.
spv::Value loadF32AsHalf8(spv::FunctionBuilder& f, const spv::Buffer& vec4s, spv::Value i,
                          Elem kind = Elem::F16);
// Two vec4 (elements 0-3, 4-7) rounded to `kind` and packed into one uvec4; and back, exactly.
spv::Value packHalf8(spv::FunctionBuilder& f, spv::Value lo, spv::Value hi, Elem kind = Elem::F16);
std::pair<spv::Value, spv::Value> unpackHalf8(spv::FunctionBuilder& f, spv::Value h8, Elem kind = Elem::F16);

} // namespace helios::codegen
