#include "engine/ops/dropout.hpp"

#include "engine/ops/elementwise.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

void apply(Executor& exec, const DropoutArgs& a, codegen::DropoutParams params, vk::BufferRange src,
           vk::BufferRange dst, uint32_t count, bool accumulate) {
  if (!(a.p >= 0 && a.p < 1))
    throw std::invalid_argument("ops::dropout: p = " + std::to_string(a.p) + " is outside [0, 1)");
  const uint64_t bytes = uint64_t(count) * codegen::elemBytes(params.type);
  for (const vk::BufferRange& r : {src, dst})
    if (r.size != 0 && r.size < bytes)
      throw std::invalid_argument("ops::dropout: a range holds " + std::to_string(r.size) + " bytes, " +
                                  std::to_string(count) + " elements need " + std::to_string(bytes));
  if (count == 0) return;
  const codegen::DropoutPush push{count, a.stream, dropoutThreshold(a.p), float(1.0 / (1.0 - double(a.p))),
                                  accumulate ? 1u : 0u};
  exec.dispatch(
      exec.pipeline(params, codegen::generateDropout),
      {{a.counter, Access::Read}, {src, Access::Read}, {dst, accumulate ? Access::ReadWrite : Access::Write}},
      push, {gridStrideGroups(exec.context(), count, params.localSize), 1, 1});
}

} // namespace

uint32_t dropoutThreshold(float p) {
  return static_cast<uint32_t>(std::min(4294967295.0, std::round(double(p) * 4294967296.0)));
}

void dropoutAdvance(Executor& exec, vk::BufferRange counter) {
  const codegen::DropoutParams params{codegen::DropoutKernel::Advance};
  const Binding b{counter, Access::ReadWrite};
  exec.dispatch(exec.pipeline(params, codegen::generateDropout), std::span<const Binding>(&b, 1), nullptr, 0,
                {1, 1, 1});
}

void dropoutForward(Executor& exec, const DropoutArgs& a, vk::BufferRange x, vk::BufferRange y,
                    uint32_t count, codegen::Elem type) {
  apply(exec, a, {codegen::DropoutKernel::Forward, type}, x, y, count, false);
}

void dropoutBackward(Executor& exec, const DropoutArgs& a, vk::BufferRange dy, vk::BufferRange dx,
                     uint32_t count, bool accumulate) {
  apply(exec, a, {codegen::DropoutKernel::Backward}, dy, dx, count, accumulate);
}

} // namespace helios::ops
