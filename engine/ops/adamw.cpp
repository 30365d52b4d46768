#include "engine/ops/adamw.hpp"

#include "codegen/kernels/adamw.hpp"
#include "engine/ops/elementwise.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

void requireElements(const char* what, const vk::BufferRange& r, uint32_t n) {
  if (r.size != 0 && r.size < 4ull * n)
    throw std::invalid_argument(std::string("ops::adamw: ") + what + " holds " + std::to_string(r.size) +
                                " bytes, needs " + std::to_string(4ull * n) + " (" + std::to_string(n) +
                                " x f32)");
}

} // namespace

void adamw(Executor& exec, vk::BufferRange p, vk::BufferRange m, vk::BufferRange v, vk::BufferRange g,
           uint32_t n, const AdamWHyper& h) {
  if (h.step == 0) throw std::invalid_argument("ops::adamw: step is 1-based, got 0");
  if (n >= 0x80000000u)
    throw std::invalid_argument("ops::adamw: " + std::to_string(n) + " elements are too many");
  requireElements("p", p, n);
  requireElements("m", m, n);
  requireElements("v", v, n);
  requireElements("g", g, n);
  if (n == 0) return;
  codegen::AdamWPush push;
  push.n = n;
  push.lr = h.lr;
  push.beta1 = h.beta1;
  push.beta2 = h.beta2;
  push.eps = h.eps;
  push.weightDecay = h.weightDecay;
  push.invBc1 = static_cast<float>(1.0 / (1.0 - std::pow(double(h.beta1), double(h.step))));
  push.invBc2 = static_cast<float>(1.0 / (1.0 - std::pow(double(h.beta2), double(h.step))));
  push.gradScale = h.gradScale;
  const codegen::AdamWParams params{256};
  const vk::Pipeline& pipe =
      exec.pipeline(params, [](const codegen::AdamWParams& q) { return codegen::generateAdamW(q); });
  exec.dispatch(pipe,
                {{p, Access::ReadWrite}, {m, Access::ReadWrite}, {v, Access::ReadWrite}, {g, Access::Read}},
                push, vk::Groups{gridStrideGroups(exec.context(), n, params.localSize), 1, 1});
}

} // namespace helios::ops
