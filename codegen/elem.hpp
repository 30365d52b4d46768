#pragma once
// The element types kernels store and compute in: f32, and the two 16-bit float kinds. F16 is IEEE binary16
// (11-bit significand, range to 65504); BF16 is bfloat16, the top half of a binary32 (8-bit significand,
// binary32's range). Kernels widen both to f32 for arithmetic; codegen/kernels/elem_io.hpp says how each is
// held in memory.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace helios::codegen {

enum class Elem : uint8_t { F32, F16, BF16 };

constexpr bool isHalf(Elem e) {
  return e != Elem::F32;
}
constexpr uint32_t elemBytes(Elem e) {
  return isHalf(e) ? 2u : 4u;
}
// "f32", "f16", "bf16".
constexpr const char* elemName(Elem e) {
  return e == Elem::F32 ? "f32" : e == Elem::F16 ? "f16" : "bf16";
}
// Inverse of elemName; throws std::invalid_argument naming `what` otherwise.
inline Elem parseElem(const std::string& text, const std::string& what) {
  for (Elem e : {Elem::F32, Elem::F16, Elem::BF16})
    if (text == elemName(e)) return e;
  throw std::invalid_argument(what + ": unknown element type '" + text + "' (f32, f16 or bf16)");
}

} // namespace helios::codegen
