#pragma once
// What the per-op autograd tests share: one Vulkan context, host <-> device copies, leaves with an empty
// gradient slot.
#include <cstdint>
#include <vector>

#include "engine/autograd/tape.hpp"
#include "support/reference.hpp"

namespace helios::autograd_test {

vk::Context& ctx();
vk::Buffer upload(const std::vector<float>& v, const char* what);
std::vector<float> download(const vk::Buffer& b, size_t n);
ref::Vec toVec(const std::vector<float>& v);
// A leaf with an empty, non-persistent gradient slot (so its gradient can be shared, not only accumulated).
autograd::Tensor leaf(const vk::Buffer& b, std::vector<uint32_t> shape);
// The leaf's gradient, read back (flushes exec).
std::vector<float> gradOfLeaf(ops::Executor& exec, const autograd::Tensor& t);

} // namespace helios::autograd_test
