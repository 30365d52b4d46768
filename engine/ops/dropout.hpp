#pragma once
// Dropout whose mask is recomputed, never stored (codegen/kernels/dropout.hpp): element i of a call is kept
// when dropoutHash(i, counter[0], stream) >= dropoutThreshold(p). The counter lives on the device; whoever
// owns it advances it once per step (dropoutAdvance) so that a replayed recording draws a new mask.
#include "codegen/kernels/dropout.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

// p * 2^32, rounded; p in [0, 1).
uint32_t dropoutThreshold(float p);

struct DropoutArgs {
  vk::BufferRange counter; // one uint
  uint32_t stream = 0;
  float p = 0;
};

// counter[0] += 1.
void dropoutAdvance(Executor& exec, vk::BufferRange counter);
// y = dropout(x) for `count` elements of `type` storage (f32, f16 or bf16).
void dropoutForward(Executor& exec, const DropoutArgs& a, vk::BufferRange x, vk::BufferRange y,
                    uint32_t count, codegen::Elem type);
// dx (+)= the mask's gradient of dy (f32).
void dropoutBackward(Executor& exec, const DropoutArgs& a, vk::BufferRange dy, vk::BufferRange dx,
                     uint32_t count, bool accumulate);

} // namespace helios::ops
