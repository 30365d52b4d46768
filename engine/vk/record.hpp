#pragma once
// The two commands every executor records: a compute dispatch with push descriptors and push constants, and
// the full compute/transfer memory barrier. Shared by CommandStream and the graph submitter.
#include "engine/vk/buffer.hpp"
#include "engine/vk/pipeline.hpp"

#include <span>

namespace helios::vk {

struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

void recordDispatch(VkCommandBuffer cmd, const Pipeline& pipeline, std::span<const BufferRange> buffers,
                    const void* push, size_t pushBytes, Groups groups);
void recordFullBarrier(VkCommandBuffer cmd);

} // namespace helios::vk
