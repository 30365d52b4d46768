#include "autograd_test_util.hpp"

#include "engine/ops/elementwise.hpp"

namespace helios::autograd_test {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

vk::Buffer upload(const std::vector<float>& v, const char* what) {
  vk::Buffer b = ctx().buffer(v.size() * 4, what);
  ctx().uploadVector(b, v);
  return b;
}

std::vector<float> download(const vk::Buffer& b, size_t n) {
  return ctx().downloadVector<float>(b, n);
}

ref::Vec toVec(const std::vector<float>& v) {
  return ref::Vec(v.begin(), v.end());
}

autograd::Tensor leaf(const vk::Buffer& b, std::vector<uint32_t> shape) {
  autograd::Tensor t = autograd::Tensor::constant(b.range(), std::move(shape));
  t.gradSlot = std::make_shared<autograd::GradSlot>();
  return t;
}

std::vector<float> gradOfLeaf(ops::Executor& exec, const autograd::Tensor& t) {
  vk::Buffer host = ctx().buffer(t.elements() * 4, "grad");
  ops::copy(exec, t.gradSlot->range, host.range(), t.count());
  exec.flush();
  return download(host, t.elements());
}

} // namespace helios::autograd_test
