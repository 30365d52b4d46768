#pragma once
// Everything a program needs to run kernels on one device: instance, device, allocator, pipeline cache.
#include "engine/vk/buffer.hpp"
#include "engine/vk/device.hpp"
#include "engine/vk/instance.hpp"
#include "engine/vk/memory.hpp"
#include "engine/vk/pipeline.hpp"

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace helios::vk {

struct ContextOptions {
  std::string device;      // "" -> $HELIOS_DEVICE -> best device; else an index or a name substring
  uint32_t slot = 0;       // with no device named: which of the best-type devices (selectDevice)
  bool validation = false; // Khronos validation layer (engine/vk/validation.hpp); an error when missing
  bool persistentPipelineCache = true;
  VkDeviceSize blockSize = 256ull << 20;
  uint32_t planBindingLimit = 0; // > 0: Device::planAsBindingLimit (a dry run's context; nothing dispatched)
};

class Context {
public:
  // Throws LoaderMissing / NoDevice (one clear sentence each) or VulkanError.
  static std::unique_ptr<Context> create(const ContextOptions& options = {});
  ~Context();
  // The context that owns `device`, or nullptr (a Device made on its own): lets code that is handed only a
  // Device run kernels on it (the coop self-test, engine/ops/coop_selftest.hpp).
  static Context* owning(const Device& device);

  const Instance& instance() const { return instance_; }
  const Device& device() const { return *device_; }
  Allocator& allocator() { return *allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }
  uint32_t deviceIndex() const { return deviceIndex_; }

  Buffer buffer(VkDeviceSize bytes, std::string_view what, MemoryKind kind = MemoryKind::DeviceLocal) {
    return Buffer(*allocator_, bytes, kind, what);
  }
  // A device buffer of `bytes` zeros, one per `what`, kept for the context's lifetime. Whoever writes it
  // leaves it zero again (the split-K GEMM's tile counters: the last workgroup of a tile resets its own).
  // Asking again for the same `what` with more bytes throws std::logic_error.
  const Buffer& zeroed(const std::string& what, VkDeviceSize bytes);
  // Synchronous copies between host memory and a buffer (direct when host-visible, else via staging).
  void upload(const Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset = 0);
  void download(const Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset = 0);
  // The staging: pieces of at most `chunk` bytes through one host-visible buffer, so a checkpoint's largest
  // tensor (GPT-2 small's 147 MiB embedding) costs no more memory in use than a piece. Public so that tests
  // run it on devices whose memory is all host-visible.
  static constexpr VkDeviceSize kStagingChunk = 16ull << 20;
  void uploadStaged(const Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset,
                    VkDeviceSize chunk = kStagingChunk);
  void downloadStaged(const Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset,
                      VkDeviceSize chunk = kStagingChunk);
  // The most staging memory a copy holds at once on this device: 0 where device-local buffers are mapped.
  VkDeviceSize stagingBytes() const;
  template <class T> void uploadVector(const Buffer& dst, const std::vector<T>& v) {
    upload(dst, std::as_bytes(std::span<const T>(v)));
  }
  template <class T> std::vector<T> downloadVector(const Buffer& src, size_t count) {
    std::vector<T> v(count);
    download(src, std::as_writable_bytes(std::span<T>(v)));
    return v;
  }
  // The same on a slice of a buffer (bounded by the slice, not the owner).
  void upload(const BufferSlice& dst, std::span<const std::byte> src);
  void download(const BufferSlice& src, std::span<std::byte> dst);
  template <class T> void uploadVector(const BufferSlice& dst, const std::vector<T>& v) {
    upload(dst, std::as_bytes(std::span<const T>(v)));
  }
  template <class T> std::vector<T> downloadVector(const BufferSlice& src, size_t count) {
    std::vector<T> v(count);
    download(src, std::as_writable_bytes(std::span<T>(v)));
    return v;
  }

private:
  Context(Instance instance) : instance_(std::move(instance)) {}
  Instance instance_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::map<std::string, Buffer> zeroed_;
  uint32_t deviceIndex_ = 0;
};

} // namespace helios::vk
