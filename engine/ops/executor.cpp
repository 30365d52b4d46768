#include "engine/ops/executor.hpp"

#include <vector>

namespace helios::ops {

std::vector<vk::BufferRange> bufferRanges(std::span<const Binding> bindings) {
  std::vector<vk::BufferRange> ranges;
  ranges.reserve(bindings.size());
  for (const auto& b : bindings)
    ranges.push_back(b.range);
  return ranges;
}

vk::BufferRange Executor::scratch(VkDeviceSize bytes, std::string_view what) {
  vk::Buffer buffer = context().buffer(bytes, what);
  const vk::BufferRange range = buffer.range();
  retain(std::move(buffer)); // freed once the GPU is done with it
  return range;
}

void ImmediateExecutor::dispatch(const vk::Pipeline& pipeline, std::span<const Binding> bindings,
                                 const void* push, size_t pushBytes, vk::Groups groups) {
  stream_.dispatch(pipeline, bufferRanges(bindings), push, pushBytes, groups);
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
