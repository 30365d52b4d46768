#pragma once
// Internal to engine/model: the 16-bit GEMM operand copies of f32 trainable parameters, made with one cast
// dispatch per parameter group instead of one per tensor. A group's parameters are aligned slices of one flat
// buffer with zero padding between them, so one cast over the span from its first to its last wanted slice
// writes a 16-bit image of that span in which every parameter starts at half its byte offset in the span:
// the copies are views into it, bit for bit what per-tensor casts write (GPT-2 small mixed: 49 weight and 12
// bias casts per step become 2 dispatches). Wanted slices whose view would start off the device's binding
// alignment are cast alone.
#include "engine/autograd/tape.hpp"
#include "engine/model/gpt_parameters.hpp"

#include <cstdint>
#include <vector>

namespace helios::model::detail {

// A wanted parameter: its f32 slice in group `group`'s flat buffer (byte offset from the buffer's start).
struct CopySlice {
  int param = -1;
  uint32_t group = 0;
  uint64_t offset = 0, bytes = 0;
};
struct CopySpan {
  uint32_t group = 0;
  uint64_t offset = 0, bytes = 0; // the f32 bytes cast, from the group buffer's start
};
struct CopyView {
  int param = -1;
  size_t span = 0;     // into OperandCopyPlan::spans
  uint64_t offset = 0; // of the 16-bit view inside its span's copy, in bytes
  uint64_t bytes = 0;  // of the 16-bit view
};
struct OperandCopyPlan {
  std::vector<CopySpan> spans;
  std::vector<CopyView> views;
  std::vector<int> alone; // parameters cast one by one
};

// Pure: one span per group holding wanted slices (from the first to the last of them), each slice a view
// whose 16-bit offset is a multiple of `alignment`; the others are cast alone. Groups in first-seen order.
OperandCopyPlan planOperandCopies(const std::vector<CopySlice>& slices, uint64_t alignment);

// The copies as `table.size()` tensors of kind `half` (empty where not wanted), each sharing its parameter's
// gradient slot as autograd::cast's result does. Frozen and non-f32 parameters are cast alone.
std::vector<autograd::Tensor> operandCopies(autograd::Tape& tape, const ParameterTable& table,
                                            const std::vector<int>& wanted, autograd::DType half);

} // namespace helios::model::detail
