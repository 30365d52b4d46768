#include "engine/vk/command_stream.hpp"

#include "engine/vk/error.hpp"

#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::vk {

CommandStream::CommandStream(const Device& device, uint32_t maxTimestamps, bool reusable)
    : device_(device), maxTimestamps_(maxTimestamps), reusable_(reusable) {
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = device.queueFamily();
  check(vkCreateCommandPool(device.handle(), &poolInfo, nullptr, &pool_), "creating a command pool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device.handle(), &alloc, &cmd_), "allocating a command buffer");
  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(device.handle(), &fenceInfo, nullptr, &fence_), "creating a fence");
  if (maxTimestamps_ > 0) {
    if (device.timestampPeriodNs() <= 0)
      throw std::runtime_error("this device's queue cannot write timestamps");
    VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = maxTimestamps_;
    check(vkCreateQueryPool(device.handle(), &q, nullptr, &queries_), "creating a timestamp query pool");
  }
}

CommandStream::~CommandStream() {
  if (pending_) vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
  if (queries_) vkDestroyQueryPool(device_.handle(), queries_, nullptr);
  vkDestroyFence(device_.handle(), fence_, nullptr);
  vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

void CommandStream::ensureRecording() {
  if (pending_) throw std::logic_error("CommandStream: recording while a submission is pending; call wait()");
  if (recording_) return;
  if (ended_) throw std::logic_error("CommandStream: recording after submit(); call reset() first");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags =
      reusable_ ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &begin), "beginning a command buffer");
  if (queries_) vkCmdResetQueryPool(cmd_, queries_, 0, maxTimestamps_);
  recording_ = true;
}

void CommandStream::dispatch(const Pipeline& pipeline, std::span<const BufferRange> buffers, const void* push,
                             size_t pushBytes, Groups groups) {
  if (buffers.size() != pipeline.numBuffers)
    throw std::invalid_argument(fmt::format("kernel {} takes {} buffers, {} given", pipeline.name,
                                            pipeline.numBuffers, buffers.size()));
  if (pushBytes != pipeline.pushConstantBytes)
    throw std::invalid_argument(fmt::format("kernel {} takes {} bytes of push constants, {} given",
                                            pipeline.name, pipeline.pushConstantBytes, pushBytes));
  const auto& limits = device_.limits();
  if (groups.x > limits.maxComputeWorkGroupCount[0] || groups.y > limits.maxComputeWorkGroupCount[1] ||
      groups.z > limits.maxComputeWorkGroupCount[2])
    throw std::invalid_argument(
        fmt::format("kernel {}: {}x{}x{} workgroups exceed the device limit {}x{}x{}", pipeline.name,
                    groups.x, groups.y, groups.z, limits.maxComputeWorkGroupCount[0],
                    limits.maxComputeWorkGroupCount[1], limits.maxComputeWorkGroupCount[2]));
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return; // empty problem: nothing to do
  ensureRecording();
  recordDispatch(cmd_, pipeline, buffers, push, pushBytes, groups);
  dispatches_++;
}

void CommandStream::barrier() {
  ensureRecording();
  recordFullBarrier(cmd_);
  barriers_++;
}

void CommandStream::copy(const BufferRange& src, const BufferRange& dst, VkDeviceSize bytes) {
  if (bytes == 0) return;
  ensureRecording();
  VkBufferCopy region{src.offset, dst.offset, bytes};
  vkCmdCopyBuffer(cmd_, src.buffer, dst.buffer, 1, &region);
}

void CommandStream::fill(const BufferRange& dst, uint32_t word) {
  ensureRecording();
  vkCmdFillBuffer(cmd_, dst.buffer, dst.offset, (dst.size + 3) / 4 * 4, word);
}

uint32_t CommandStream::timestamp() {
  if (timestamps_ >= maxTimestamps_)
    throw std::logic_error(fmt::format("CommandStream: more than {} timestamps", maxTimestamps_));
  ensureRecording();
  vkCmdWriteTimestamp2(cmd_, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, queries_, timestamps_);
  return timestamps_++;
}

void CommandStream::submit(uint32_t times) {
  if (times != 1 && !reusable_)
    throw std::logic_error("CommandStream: submitting " + std::to_string(times) +
                           " times needs a reusable stream");
  if (pending_)
    throw std::logic_error("CommandStream: submitting while a submission is pending; call wait()");
  if (!ended_) {
    ensureRecording();
    check(vkEndCommandBuffer(cmd_), "ending a command buffer");
    recording_ = false;
    ended_ = true;
  }
  VkCommandBufferSubmitInfo cmdInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
  cmdInfo.commandBuffer = cmd_;
  VkSubmitInfo2 submit{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
  submit.commandBufferInfoCount = 1;
  submit.pCommandBufferInfos = &cmdInfo;
  const std::vector<VkSubmitInfo2> submits(times, submit);
  check(vkQueueSubmit2(device_.queue(), times, submits.data(), fence_),
        fmt::format("submitting {} dispatches {} time(s) (vkQueueSubmit2)", dispatches_, times));
  pending_ = true;
}

void CommandStream::wait() {
  if (!pending_) return;
  check(vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX), "waiting for submitted GPU work");
  check(vkResetFences(device_.handle(), 1, &fence_), "resetting a fence");
  pending_ = false;
}

std::vector<double> CommandStream::timestampsNs() const {
  std::vector<uint64_t> raw(timestamps_);
  if (timestamps_ == 0) return {};
  check(vkGetQueryPoolResults(device_.handle(), queries_, 0, timestamps_, raw.size() * sizeof(uint64_t),
                              raw.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "reading GPU timestamps");
  std::vector<double> ns(timestamps_);
  for (uint32_t i = 0; i < timestamps_; ++i)
    ns[i] = static_cast<double>(raw[i] - raw[0]) * device_.timestampPeriodNs();
  return ns;
}

void CommandStream::reset() {
  wait();
  if (recording_) {
    vkEndCommandBuffer(cmd_);
    recording_ = false;
  }
  check(vkResetCommandBuffer(cmd_, 0), "resetting a command buffer");
  timestamps_ = dispatches_ = barriers_ = 0;
  ended_ = false;
}

} // namespace helios::vk
