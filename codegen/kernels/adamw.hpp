#pragma once
// AdamW, in place on f32 parameters p, first moment m and second moment v, with gradient g:
//   g' = g * gradScale
//   m  = beta1 m + (1 - beta1) g'
//   v  = beta2 v + (1 - beta2) g'^2
//   p -= lr * ((m * invBc1) / (sqrt(v * invBc2) + eps) + weightDecay * p)
// (decoupled weight decay on the old p; invBc1 = 1 / (1 - beta1^step), invBc2 = 1 / (1 - beta2^step),
// computed on the host). Every hyperparameter is a push constant, so a new step, schedule or clip factor
// never needs a new pipeline.
// Bindings: 0 p (read-write), 1 m (read-write), 2 v (read-write), 3 g (read). Grid-stride over n.
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct AdamWPush {
  uint32_t n = 0;
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
  float invBc1 = 1, invBc2 = 1; // 1 / (1 - beta^step)
  float gradScale = 1;          // g is multiplied by this first (loss-scale undo, clipping)
};
static_assert(isPushBlock<AdamWPush>);

struct AdamWParams {
  uint32_t localSize = 256;
  std::string cacheKey() const; // "adamw:f32:wg256"
};

Kernel generateAdamW(const AdamWParams& p);
void registerAdamW(KernelRegistry& registry);

} // namespace helios::codegen
