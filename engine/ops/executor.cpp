#include "engine/ops/executor.hpp"

#include <vector>

namespace helios::ops {

void ImmediateExecutor::dispatch(const vk::Pipeline& pipeline, std::span<const Binding> bindings,
                                 const void* push, size_t pushBytes, vk::Groups groups) {
  std::vector<vk::BufferRange> ranges;
  ranges.reserve(bindings.size());
  for (const auto& b : bindings)
    ranges.push_back(b.range);
  stream_.dispatch(pipeline, ranges, push, pushBytes, groups);
  stream_.barrier();
  total_++;
}

void ImmediateExecutor::flush() {
  if (stream_.dispatches() != 0 || stream_.barriers() != 0) {
    stream_.submitAndWait();
    stream_.reset();
  }
  retained_.clear();
}

} // namespace helios::ops
