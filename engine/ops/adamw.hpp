#pragma once
// In-place AdamW on f32 buffers (codegen/kernels/adamw.hpp); one pipeline serves every step.
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

struct AdamWHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weightDecay = 0.0f;
  uint32_t step = 1;     // 1-based; bias corrections 1 / (1 - beta^step) are computed here in double
  float gradScale = 1.f; // g is multiplied by this before use (undo loss scaling, apply a clip factor)
};

// p, m, v (read-write) and g (read): n f32 elements each (std::invalid_argument on a short range or step 0).
void adamw(Executor& exec, vk::BufferRange p, vk::BufferRange m, vk::BufferRange v, vk::BufferRange g,
           uint32_t n, const AdamWHyper& h);

} // namespace helios::ops
