#pragma once
// Staging f32 data as f16 for cooperative-matrix kernels: eight floats rounded to f16 and packed into one
// uvec4, the 16-byte unit their shared-memory tiles are made of (the coop GEMM's f32 operands, the coop
// attention's q/k/v/dO).
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

// The floats of 8-element vector `i` of `vec4s` (an f32 buffer declared with vec4 elements: vec4s 2i and
// 2i + 1), each rounded to nearest f16, as a uvec4.
spv::Value loadF32AsHalf8(spv::FunctionBuilder& f, const spv::Buffer& vec4s, spv::Value i);

} // namespace helios::codegen
