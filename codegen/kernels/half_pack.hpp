#pragma once
// Staging f32 data as f16 for cooperative-matrix kernels: eight floats rounded to f16 and packed into one
// uvec4, the 16-byte unit their shared-memory tiles are made of (the coop GEMM's f32 operands, the coop
// attention's q/k/v/dO), and the same unit written and read back (the coop attention's f16 outputs).
#include "codegen/spirv/builder.hpp"

#include <utility>

namespace helios::codegen {

// The floats of 8-element vector `i` of `vec4s` (an f32 buffer declared with vec4 elements: vec4s 2i and
// 2i + 1), each rounded to nearest f16, as a uvec4.
spv::Value loadF32AsHalf8(spv::FunctionBuilder& f, const spv::Buffer& vec4s, spv::Value i);
// Two vec4 (elements 0-3, 4-7) rounded to f16 and packed into one uvec4; and back, exactly.
spv::Value packHalf8(spv::FunctionBuilder& f, spv::Value lo, spv::Value hi);
std::pair<spv::Value, spv::Value> unpackHalf8(spv::FunctionBuilder& f, spv::Value h8);

} // namespace helios::codegen
