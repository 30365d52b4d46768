#include "engine/ops/optim_step.hpp"

#include "engine/ops/elementwise.hpp"
#include "engine/ops/reduce.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

constexpr uint32_t kLocal = 256;
// Enough workgroups to keep every SM streaming: 64 left the H100's 132 SMs half idle (960 us for 60M floats).
constexpr uint32_t kMaxSlotsPerTensor = 1024;

void requireFloats(const char* op, const char* what, const vk::BufferRange& r, uint64_t n) {
  if (r.size != 0 && r.size < 4 * n)
    throw std::invalid_argument(std::string(op) + ": " + what + " holds " + std::to_string(r.size) +
                                " bytes, needs " + std::to_string(4 * n) + " (" + std::to_string(n) +
                                " x f32)");
}

codegen::ReduceStrategy strategyFor(Executor& exec) {
  return rows_detail::resolve(exec, {kLocal, codegen::ReduceStrategy::Subgroup}, kLocal).strategy;
}

const vk::Pipeline& pipelineFor(Executor& exec, const codegen::OptimStepParams& params) {
  return exec.pipeline(params,
                       [](const codegen::OptimStepParams& q) { return codegen::generateOptimStep(q); });
}

} // namespace

uint32_t gradSumsqSlots(uint32_t n) {
  return std::clamp<uint32_t>((n + kLocal - 1) / kLocal, 1, kMaxSlotsPerTensor);
}

void gradSumsq(Executor& exec, vk::BufferRange g, uint32_t n, vk::BufferRange partials, uint32_t slot) {
  if (n >= 0x80000000u)
    throw std::invalid_argument("ops::gradSumsq: " + std::to_string(n) + " elements are too many");
  requireFloats("ops::gradSumsq", "g", g, n);
  const uint32_t slots = gradSumsqSlots(n);
  requireFloats("ops::gradSumsq", "partials", partials, uint64_t(slot) + slots);
  const codegen::OptimStepParams params{codegen::OptimKernel::GradSumsq, kLocal, strategyFor(exec)};
  const codegen::GradSumsqPush push{n, slot};
  exec.dispatch(pipelineFor(exec, params), {{g, Access::Read}, {partials, Access::Write}}, push,
                vk::Groups{slots, 1, 1});
}

void optimControl(Executor& exec, const OptimControlArgs& a) {
  if (a.lossCount == 0) throw std::invalid_argument("ops::optimControl: lossCount is 0");
  requireFloats("ops::optimControl", "partials", a.partials, a.count);
  requireFloats("ops::optimControl", "losses", a.losses, a.lossCount);
  requireFloats("ops::optimControl", "state", a.state, 1);
  requireFloats("ops::optimControl", "control", a.control, 4);
  requireFloats("ops::optimControl", "records", a.records,
                (uint64_t(a.slot) + 1) * codegen::kOptimRecordFloats);
  const codegen::OptimStepParams params{codegen::OptimKernel::Control, kLocal, strategyFor(exec)};
  codegen::OptimControlPush push;
  push.count = a.count;
  push.lossCount = a.lossCount;
  push.slot = a.slot;
  push.scale = a.scale;
  push.maxNorm = a.maxNorm;
  push.beta1 = a.beta1;
  push.beta2 = a.beta2;
  push.lossMul = a.lossMul != 0 ? a.lossMul : 1.0f / static_cast<float>(a.lossCount);
  exec.dispatch(pipelineFor(exec, params),
                {{a.partials, Access::Read},
                 {a.losses, Access::Read},
                 {a.state, Access::ReadWrite},
                 {a.control, Access::Write},
                 {a.records, Access::Write}},
                push, vk::Groups{1, 1, 1});
}

void adamwCtrl(Executor& exec, vk::BufferRange p, vk::BufferRange m, vk::BufferRange v, vk::BufferRange g,
               vk::BufferRange control, uint32_t n, const AdamWCtrlHyper& h, codegen::Elem paramType,
               uint32_t seed) {
  if (n >= 0x80000000u)
    throw std::invalid_argument("ops::adamwCtrl: " + std::to_string(n) + " elements are too many");
  const bool bf16 = paramType == codegen::Elem::BF16;
  if (bf16) {
    if (p.size != 0 && p.size < 2ull * n)
      throw std::invalid_argument("ops::adamwCtrl: p holds " + std::to_string(p.size) + " bytes, needs " +
                                  std::to_string(2ull * n) + " (bf16)");
  } else {
    requireFloats("ops::adamwCtrl", "p", p, n);
  }
  requireFloats("ops::adamwCtrl", "m", m, n);
  requireFloats("ops::adamwCtrl", "v", v, n);
  requireFloats("ops::adamwCtrl", "g", g, n);
  requireFloats("ops::adamwCtrl", "control", control, 4);
  if (n == 0) return;
  // Four elements per step where every range allows 16-byte access.
  const bool vec4 = !bf16 && n % 4 == 0 && p.offset % 16 == 0 && m.offset % 16 == 0 && v.offset % 16 == 0 &&
                    g.offset % 16 == 0;
  const codegen::OptimStepParams params{codegen::OptimKernel::AdamW, kLocal,
                                        codegen::ReduceStrategy::Subgroup, vec4, paramType};
  const uint32_t steps = vec4 ? n / 4 : n;
  const codegen::AdamWCtrlPush push{steps, h.lr, h.beta1, h.beta2, h.eps, h.weightDecay};
  const std::initializer_list<Binding> bindings{{p, Access::ReadWrite},
                                                {m, Access::ReadWrite},
                                                {v, Access::ReadWrite},
                                                {g, Access::ReadWrite},
                                                {control, Access::Read}};
  const vk::Groups groups{gridStrideGroups(exec.context(), steps, kLocal), 1, 1};
  if (bf16)
    exec.dispatch(pipelineFor(exec, params), bindings, codegen::AdamWCtrlRoundPush{push, seed}, groups);
  else
    exec.dispatch(pipelineFor(exec, params), bindings, push, groups);
}

} // namespace helios::ops
