#include "engine/ops/recording_executor.hpp"

namespace helios::ops {

void RecordingExecutor::dispatch(const vk::Pipeline& pipeline, std::span<const Binding>, const void*, size_t,
                                 vk::Groups groups) {
  const auto [it, inserted] = index_.try_emplace(&pipeline, uses_.size());
  if (inserted) uses_.push_back({&pipeline, 0, groups});
  uses_[it->second].dispatches++;
}

} // namespace helios::ops
