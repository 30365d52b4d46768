#include "engine/vk/context.hpp"

#include "engine/vk/command_stream.hpp"
#include "engine/vk/device_select.hpp"
#include "engine/vk/error.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace helios::vk {

namespace {

// Every live context by its device (Context::owning).
std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
std::map<const Device*, Context*>& registry() {
  static std::map<const Device*, Context*> r;
  return r;
}

} // namespace

Context* Context::owning(const Device& device) {
  std::lock_guard lock(registryMutex());
  auto it = registry().find(&device);
  return it == registry().end() ? nullptr : it->second;
}

std::unique_ptr<Context> Context::create(const ContextOptions& options) {
  auto ctx = std::unique_ptr<Context>(new Context(Instance::create({"helios", options.validation})));
  auto physical = ctx->instance_.physicalDevices();
  size_t index = selectDevice(describeDevices(physical), deviceSelector(options.device), options.slot);
  ctx->deviceIndex_ = static_cast<uint32_t>(index);
  ctx->device_ = std::make_unique<Device>(ctx->instance_, physical[index]);
  if (options.planBindingLimit) ctx->device_->planAsBindingLimit(options.planBindingLimit);
  ctx->allocator_ = std::make_unique<Allocator>(*ctx->device_, options.blockSize);
  ctx->pipelines_ = std::make_unique<PipelineCache>(
      *ctx->device_, options.persistentPipelineCache ? PipelineCache::defaultCacheFile(*ctx->device_)
                                                     : std::filesystem::path());
  std::lock_guard lock(registryMutex());
  registry()[ctx->device_.get()] = ctx.get();
  return ctx;
}

Context::~Context() {
  {
    std::lock_guard lock(registryMutex());
    registry().erase(device_.get());
  }
  // Order matters: pipelines and memory before the device.
  zeroed_.clear();
  pipelines_.reset();
  allocator_.reset();
  device_.reset();
}

const Buffer& Context::zeroed(const std::string& what, VkDeviceSize bytes) {
  if (auto it = zeroed_.find(what); it != zeroed_.end()) {
    if (it->second.size() < bytes)
      throw std::logic_error(
          fmt::format("zeroed buffer '{}' has {} bytes, {} asked for", what, it->second.size(), bytes));
    return it->second;
  }
  Buffer b = buffer(bytes, what);
  upload(b, std::vector<std::byte>(bytes));
  return zeroed_.emplace(what, std::move(b)).first->second;
}

void Context::upload(const Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset) {
  if (dstOffset + src.size() > dst.size())
    throw std::out_of_range(fmt::format("upload of {} bytes at offset {} overruns a {}-byte buffer",
                                        src.size(), dstOffset, dst.size()));
  if (dst.mapped()) {
    std::memcpy(dst.mapped() + dstOffset, src.data(), src.size());
    return;
  }
  uploadStaged(dst, src, dstOffset);
}

void Context::uploadStaged(const Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset,
                           VkDeviceSize chunk) {
  if (dstOffset + src.size() > dst.size() || chunk == 0)
    throw std::out_of_range(
        fmt::format("staged upload of {} bytes at offset {} into a {}-byte buffer in {}-byte "
                    "pieces",
                    src.size(), dstOffset, dst.size(), chunk));
  if (src.empty()) return;
  Buffer staging(*allocator_, std::min<VkDeviceSize>(src.size(), chunk), MemoryKind::Upload,
                 "upload staging");
  for (VkDeviceSize done = 0; done < src.size(); done += chunk) {
    const VkDeviceSize n = std::min<VkDeviceSize>(src.size() - done, chunk);
    std::memcpy(staging.mapped(), src.data() + done, n);
    CommandStream stream(*device_);
    auto range = dst.range();
    range.offset += dstOffset + done;
    stream.copy(staging.range(), range, n);
    stream.submitAndWait();
  }
}

void Context::upload(const BufferSlice& dst, std::span<const std::byte> src) {
  if (src.size() > dst.size)
    throw std::out_of_range(
        fmt::format("upload of {} bytes overruns a {}-byte slice of a buffer", src.size(), dst.size));
  upload(*dst.owner, src, dst.offset);
}

void Context::download(const BufferSlice& src, std::span<std::byte> dst) {
  if (dst.size() > src.size)
    throw std::out_of_range(
        fmt::format("download of {} bytes overruns a {}-byte slice of a buffer", dst.size(), src.size));
  download(*src.owner, dst, src.offset);
}

void Context::download(const Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset) {
  if (srcOffset + dst.size() > src.size())
    throw std::out_of_range(fmt::format("download of {} bytes at offset {} overruns a {}-byte buffer",
                                        dst.size(), srcOffset, src.size()));
  if (src.mapped()) {
    std::memcpy(dst.data(), src.mapped() + srcOffset, dst.size());
    return;
  }
  downloadStaged(src, dst, srcOffset);
}

void Context::downloadStaged(const Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset,
                             VkDeviceSize chunk) {
  if (srcOffset + dst.size() > src.size() || chunk == 0)
    throw std::out_of_range(fmt::format("staged download of {} bytes at offset {} from a {}-byte buffer in "
                                        "{}-byte pieces",
                                        dst.size(), srcOffset, src.size(), chunk));
  if (dst.empty()) return;
  Buffer staging(*allocator_, std::min<VkDeviceSize>(dst.size(), chunk), MemoryKind::Readback,
                 "download staging");
  for (VkDeviceSize done = 0; done < dst.size(); done += chunk) {
    const VkDeviceSize n = std::min<VkDeviceSize>(dst.size() - done, chunk);
    CommandStream stream(*device_);
    auto range = src.range();
    range.offset += srcOffset + done;
    stream.copy(range, staging.range(), n);
    stream.submitAndWait();
    std::memcpy(dst.data() + done, staging.mapped(), n);
  }
}

VkDeviceSize Context::stagingBytes() const {
  return allocator_->hostVisible(MemoryKind::DeviceLocal) ? 0 : kStagingChunk;
}

} // namespace helios::vk
