#include "engine/vk/host_import.hpp"

#include "engine/vk/error.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <utility>

namespace helios::vk {

namespace {

// The first memory type the pointer may be imported as that the host sees coherently (host writes before a
// submission and GPU writes before a waited-for signal need no flush), else any host-visible one.
uint32_t pickType(VkPhysicalDevice physical, uint32_t typeBits, const std::string& what) {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(physical, &props);
  const VkMemoryPropertyFlags coherent =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & coherent) == coherent) return i;
  throw std::runtime_error(fmt::format(
      "{}: no host-coherent memory type accepts the imported pointer (types {:#x})", what, typeBits));
}

} // namespace

bool canImportHost(const Device& device, const void* host, VkDeviceSize bytes) {
  const VkDeviceSize align = device.hostImportAlignment();
  return device.features().externalMemoryHost && align && bytes &&
         reinterpret_cast<uintptr_t>(host) % align == 0 && bytes % align == 0;
}

ImportedHostBuffer::ImportedHostBuffer(const Device& device, void* host, VkDeviceSize bytes,
                                       std::string_view what)
    : device_(device.handle()), bytes_(bytes) {
  const std::string context = fmt::format("importing {} MiB of host memory as {}", bytes >> 20, what);
  if (!canImportHost(device, host, bytes))
    throw std::runtime_error(
        fmt::format("{}: the device cannot import it (VK_EXT_external_memory_host missing, or the "
                    "pointer or size not a multiple of {})",
                    context, device.hostImportAlignment()));
  const VkExternalMemoryHandleTypeFlagBits handle = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkMemoryHostPointerPropertiesEXT hostProps{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  check(vkGetMemoryHostPointerPropertiesEXT(device_, handle, host, &hostProps), context);

  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = handle;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.pNext = &external;
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &info, nullptr, &buffer_), context);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, buffer_, &req);
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = handle;
  import.pHostPointer = host;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = &import;
  alloc.allocationSize = bytes;
  try {
    alloc.memoryTypeIndex =
        pickType(device.physical(), hostProps.memoryTypeBits & req.memoryTypeBits, context);
    check(vkAllocateMemory(device_, &alloc, nullptr, &memory_), context);
    check(vkBindBufferMemory(device_, buffer_, memory_, 0), context);
  } catch (...) {
    release();
    throw;
  }
}

ImportedHostBuffer::ImportedHostBuffer(ImportedHostBuffer&& other) noexcept
    : device_(std::exchange(other.device_, VK_NULL_HANDLE)),
      buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)), bytes_(std::exchange(other.bytes_, 0)) {}

ImportedHostBuffer& ImportedHostBuffer::operator=(ImportedHostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::exchange(other.device_, VK_NULL_HANDLE);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ImportedHostBuffer::~ImportedHostBuffer() {
  release();
}

void ImportedHostBuffer::release() {
  if (buffer_) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_) vkFreeMemory(device_, memory_, nullptr);
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
}

} // namespace helios::vk
