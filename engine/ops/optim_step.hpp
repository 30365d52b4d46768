#pragma once
// The optimizer step's device-side pieces (codegen/kernels/optim_step.hpp): per-tensor gradient sums of
// squares into a partials buffer, one control dispatch that turns them into {gradMul, skip, bias corrections}
// and a step record, and the AdamW variant that reads that control buffer (and zeroes the gradient). The host
// records them without knowing whether the step overflowed or how large the gradient norm is.
#include "codegen/kernels/optim_step.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

// Workgroups (= partial slots) gradSumsq uses for an n-element tensor: ceil(n / 256), at most 64.
uint32_t gradSumsqSlots(uint32_t n);

// partials[slot .. slot + gradSumsqSlots(n)) = sums of squares of g's shares.
void gradSumsq(Executor& exec, vk::BufferRange g, uint32_t n, vk::BufferRange partials, uint32_t slot);

struct OptimControlArgs {
  vk::BufferRange partials, losses, state, control, records;
  uint32_t count = 0, lossCount = 1, slot = 0; // slot: index of the 8-float record in `records`
  float scale = 1, maxNorm = 0, beta1 = 0.9f, beta2 = 0.999f;
  float lossMul = 0; // the record's loss = lossMul * sum(losses); 0 = 1 / lossCount
};
void optimControl(Executor& exec, const OptimControlArgs& args);

struct AdamWCtrlHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weightDecay = 0.0f;
};
// p, m, v, g: n f32 each (g is zeroed); control: the 4 floats optimControl wrote. paramType BF16: p holds
// bf16 (uint16 bits), updated in f32 and rounded stochastically with `seed` (codegen/kernels/optim_step.hpp).
void adamwCtrl(Executor& exec, vk::BufferRange p, vk::BufferRange m, vk::BufferRange v, vk::BufferRange g,
               vk::BufferRange control, uint32_t n, const AdamWCtrlHyper& h,
               codegen::Elem paramType = codegen::Elem::F32, uint32_t seed = 0);

} // namespace helios::ops
