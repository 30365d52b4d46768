#pragma once
// A tensor as autograd sees it: a device range, a shape and a storage type, plus an optional gradient slot.
// Gradients are always f32 with the tensor's element count. Views (reshape, 16-bit casts) share the slot of
// the tensor they view, so a gradient written through any of them lands in one place.
#include "codegen/elem.hpp"
#include "engine/vk/buffer.hpp"

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

namespace helios::autograd {

// F32, or a 16-bit kind: F16 (mixed precision) or BF16 (--precision bf16, and bf16 parameters).
using DType = codegen::Elem;
inline uint32_t dtypeBytes(DType t) {
  return codegen::elemBytes(t);
}

// Where a tensor's gradient lives during one backward. `range` is allocated lazily (or aliased to another
// gradient that is no longer needed); `written` says it holds a value (else the first writer overwrites);
// `persistent` marks a parameter gradient owned by the model: always accumulated into, never overwritten.
struct GradSlot {
  vk::BufferRange range;
  bool written = false;
  bool persistent = false;
  // The gradient rounded to a 16-bit kind (halfType), for GEMMs that take it as a 16-bit operand
  // (Tape::gradOfHalf): valid while no f32 write follows. halfOnly: the gradient exists only there (a
  // producer wrote it in 16 bits, Tape::passGradHalf); the first f32 access widens it into `range`.
  vk::BufferRange half;
  DType halfType = DType::F16;
  bool halfValid = false;
  bool halfOnly = false;
  // Slots holding this very range (one gradient handed to several inputs without a copy, Tape::shareGrad):
  // the first writer takes a private copy while another may still be read.
  std::vector<std::weak_ptr<GradSlot>> sharers;
  bool released = false; // its producer's backward has run: nobody reads this gradient any more
};

struct Tensor {
  vk::BufferRange data;
  std::vector<uint32_t> shape;
  DType dtype = DType::F32;
  std::shared_ptr<GradSlot> gradSlot; // null: no gradient flows to this tensor

  uint64_t elements() const {
    return std::accumulate(shape.begin(), shape.end(), uint64_t{1},
                           [](uint64_t a, uint32_t b) { return a * b; });
  }
  uint32_t count() const { return static_cast<uint32_t>(elements()); }
  uint64_t bytes() const { return elements() * dtypeBytes(dtype); }
  bool requiresGrad() const { return gradSlot != nullptr; }
  vk::BufferRange grad() const { return gradSlot ? gradSlot->range : vk::BufferRange{}; }
  // Same data and gradient, another shape with the same element count (throws std::invalid_argument).
  Tensor reshape(std::vector<uint32_t> newShape) const;

  // A parameter: `data` (f32, or bf16 parameters' bits) with the persistent f32 gradient `grad` (`shape`).
  static Tensor parameter(vk::BufferRange data, vk::BufferRange grad, std::vector<uint32_t> shape,
                          DType dtype = DType::F32);
  // A constant (no gradient).
  static Tensor constant(vk::BufferRange data, std::vector<uint32_t> shape, DType dtype = DType::F32);
};

} // namespace helios::autograd
