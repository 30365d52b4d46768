#pragma once
// The optimizer step's device-side decisions, so that the host never waits for the GPU to decide whether to
// apply an update (gradient clipping and dynamic loss scaling):
//
//  grad_sumsq     partials[slot + wg] = sum of g[i]^2 over the grid-stride share of workgroup wg. One
//  dispatch
//                 per parameter tensor, a fixed workgroup count each: a fixed summation order
//                 (deterministic). Bindings: 0 g (read), 1 partials (write). Push {n, slot}.
//  optim_control  One workgroup. Sums the partials (sum of squares of the *scaled* gradients) and the micro-
//                 batch losses, then: finite = sumsq <= FLT_MAX (inf and NaN fail); norm = sqrt(sumsq)/scale;
//                 clip = norm > maxNorm > 0 ? maxNorm / (norm + 1e-6) : 1; the AdamW step counter t
//                 (state[0]) advances only on finite steps; writes control = {gradMul = finite ? clip/scale :
//                 0, skip = !finite, 1/(1-beta1^t), 1/(1-beta2^t)} and record[slot*8 ..] = {mean loss, norm,
//                 finite, t, scale, clip, sumsq, 0}. Bindings: 0 partials (read), 1 losses (read), 2 state
//                 (read-write), 3 control (write), 4 records (write). Push {count, lossCount, slot, scale,
//                 maxNorm, beta1, beta2, lossMul}.
//  adamw_ctrl     AdamW (as codegen/kernels/adamw.hpp) whose gradient multiplier, bias corrections and skip
//  flag
//                 come from the control buffer; it zeroes g after reading it (the next step accumulates into
//                 zeros) and leaves p, m, v untouched when skip != 0.
//                 Bindings: 0 p, 1 m, 2 v, 3 g (read-write), 4 control (read). Push {n, lr, beta1, beta2,
//                 eps, wd}. With bf16 parameters (`param`: uint16 bits; m, v, g stay f32) the update is
//                 computed in f32 on the widened p and rounded back stochastically: the f32 result's low 16
//                 bits plus a 16-bit hash of (seed, element index) carry into the kept half, so a step
//                 smaller than bf16's spacing still moves p by its expected amount (round to nearest would
//                 drop it: an Adam step is often under half a bf16 ulp), deterministically for a given seed
//                 (the trainer's step: resumed runs repeat it bit for bit). Non-finite results round to
//                 nearest. Push + {seed}.
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/kernels/row_reduce.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

inline constexpr uint32_t kOptimRecordFloats = 8; // floats per step record written by optim_control

struct GradSumsqPush {
  uint32_t n = 0;
  uint32_t slot = 0;
};
static_assert(isPushBlock<GradSumsqPush>);

struct OptimControlPush {
  uint32_t count = 0;     // partials to sum
  uint32_t lossCount = 0; // micro-batch losses to sum
  uint32_t slot = 0;      // record slot (ring index)
  float scale = 1;        // loss scale the gradients carry
  float maxNorm = 0;      // 0: no clipping
  float beta1 = 0.9f, beta2 = 0.999f;
  float lossMul = 1; // 1 / lossCount
};
static_assert(isPushBlock<OptimControlPush>);

struct AdamWCtrlPush {
  uint32_t n = 0;
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
};
static_assert(isPushBlock<AdamWCtrlPush>);
// The bf16-parameter AdamW's push constants: the same, then the rounding's seed.
struct AdamWCtrlRoundPush {
  AdamWCtrlPush adam;
  uint32_t seed = 0;
};
static_assert(isPushBlock<AdamWCtrlRoundPush> && sizeof(AdamWCtrlRoundPush) == 28);

// The 16-bit random word the bf16 AdamW adds below the kept half of element i's f32 result (a counter-based
// hash, so the host computes the same bits the kernel does: tests).
uint32_t adamwRoundingBits(uint32_t seed, uint32_t i);

enum class OptimKernel : uint8_t { GradSumsq, Control, AdamW };
const char* toString(OptimKernel k);

struct OptimStepParams {
  OptimKernel kernel = OptimKernel::GradSumsq;
  uint32_t localSize = 256;
  ReduceStrategy strategy = ReduceStrategy::Subgroup; // GradSumsq and Control
  bool vec4 = false; // AdamW: four elements per invocation and step (n in vec4s; 16-byte aligned buffers)
  Elem param = Elem::F32;       // AdamW: p's storage, f32 or bf16 (rounded stochastically; scalar steps only)
  std::string cacheKey() const; // "optim_step:grad_sumsq:f32:wg256:subgroup"; AdamW "...:wg256[:vec4][:bf16]"
};

Kernel generateOptimStep(const OptimStepParams& p);
void registerOptimStep(KernelRegistry& registry);

} // namespace helios::codegen
