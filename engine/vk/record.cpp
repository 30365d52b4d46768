#include "engine/vk/record.hpp"

#include <stdexcept>

namespace helios::vk {

void recordDispatch(VkCommandBuffer cmd, const Pipeline& pipeline, std::span<const BufferRange> buffers,
                    const void* push, size_t pushBytes, Groups groups) {
  constexpr size_t kMaxBuffers = 16;
  if (buffers.size() > kMaxBuffers) throw std::invalid_argument("a kernel may bind at most 16 buffers");
  if (pipeline.pipeline == VK_NULL_HANDLE)
    throw std::logic_error("kernel " + pipeline.name +
                           " is recorded before PipelineCache::precompile created it");
  VkDescriptorBufferInfo infos[kMaxBuffers];
  VkWriteDescriptorSet writes[kMaxBuffers];
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i].buffer, buffers[i].offset, buffers[i].size ? buffers[i].size : VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  if (!buffers.empty())
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0,
                              static_cast<uint32_t>(buffers.size()), writes);
  if (pushBytes)
    vkCmdPushConstants(cmd, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(pushBytes),
                       push);
  vkCmdDispatch(cmd, groups.x, groups.y, groups.z);
}

void recordFullBarrier(VkCommandBuffer cmd) {
  VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  mb.srcStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT;
  mb.srcAccessMask = VK_ACCESS_2_SHADER_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;
  mb.dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT;
  mb.dstAccessMask = VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_WRITE_BIT |
                     VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &mb;
  vkCmdPipelineBarrier2(cmd, &dep);
}

} // namespace helios::vk
