#include "probe/caps.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace helios::probe {

namespace {

// VkComponentTypeKHR values by name. bfloat16 (VK_KHR_shader_bfloat16) is newer than the headers Helios
// builds against, so its registry value is written out here.
struct NamedValue {
  uint32_t value;
  std::string_view name;
};
constexpr uint32_t kComponentTypeBFloat16 = 1000141000u;
constexpr NamedValue kComponentTypes[] = {
    {VK_COMPONENT_TYPE_FLOAT16_KHR, "float16"},
    {VK_COMPONENT_TYPE_FLOAT32_KHR, "float32"},
    {VK_COMPONENT_TYPE_FLOAT64_KHR, "float64"},
    {VK_COMPONENT_TYPE_SINT8_KHR, "sint8"},
    {VK_COMPONENT_TYPE_SINT16_KHR, "sint16"},
    {VK_COMPONENT_TYPE_SINT32_KHR, "sint32"},
    {VK_COMPONENT_TYPE_SINT64_KHR, "sint64"},
    {VK_COMPONENT_TYPE_UINT8_KHR, "uint8"},
    {VK_COMPONENT_TYPE_UINT16_KHR, "uint16"},
    {VK_COMPONENT_TYPE_UINT32_KHR, "uint32"},
    {VK_COMPONENT_TYPE_UINT64_KHR, "uint64"},
    {kComponentTypeBFloat16, "bfloat16"},
    {VK_COMPONENT_TYPE_SINT8_PACKED_NV, "sint8_packed"},
    {VK_COMPONENT_TYPE_UINT8_PACKED_NV, "uint8_packed"},
    {VK_COMPONENT_TYPE_FLOAT_E4M3_NV, "float_e4m3"},
    {VK_COMPONENT_TYPE_FLOAT_E5M2_NV, "float_e5m2"},
};
constexpr NamedValue kScopes[] = {
    {VK_SCOPE_DEVICE_KHR, "device"},
    {VK_SCOPE_WORKGROUP_KHR, "workgroup"},
    {VK_SCOPE_SUBGROUP_KHR, "subgroup"},
    {VK_SCOPE_QUEUE_FAMILY_KHR, "queuefamily"},
};
constexpr NamedValue kDeviceTypes[] = {
    {static_cast<uint32_t>(DeviceType::Other), "other"},
    {static_cast<uint32_t>(DeviceType::IntegratedGpu), "integrated-gpu"},
    {static_cast<uint32_t>(DeviceType::DiscreteGpu), "discrete-gpu"},
    {static_cast<uint32_t>(DeviceType::VirtualGpu), "virtual-gpu"},
    {static_cast<uint32_t>(DeviceType::Cpu), "cpu"},
};

template <std::size_t N> std::string nameOf(const NamedValue (&table)[N], uint32_t value) {
  for (const auto& entry : table)
    if (entry.value == value) return std::string(entry.name);
  return fmt::format("unknown({})", value);
}

template <std::size_t N> bool isNameIn(const NamedValue (&table)[N], std::string_view name) {
  for (const auto& entry : table)
    if (entry.name == name) return true;
  // "unknown(<digits>)" round-trips values this build has no name for.
  constexpr std::string_view prefix = "unknown(";
  if (name.size() <= prefix.size() + 1 || name.substr(0, prefix.size()) != prefix || name.back() != ')')
    return false;
  auto digits = name.substr(prefix.size(), name.size() - prefix.size() - 1);
  return std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

} // namespace

std::string_view deviceTypeName(DeviceType type) {
  for (const auto& entry : kDeviceTypes)
    if (entry.value == static_cast<uint32_t>(type)) return entry.name;
  return "other";
}

bool parseDeviceType(std::string_view name, DeviceType& out) {
  for (const auto& entry : kDeviceTypes)
    if (entry.name == name) {
      out = static_cast<DeviceType>(entry.value);
      return true;
    }
  return false;
}

DeviceType deviceTypeFromVk(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return DeviceType::IntegratedGpu;
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return DeviceType::DiscreteGpu;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return DeviceType::VirtualGpu;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return DeviceType::Cpu;
  default:
    return DeviceType::Other;
  }
}

bool DeviceCaps::hasExtension(std::string_view ext) const {
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::string componentTypeName(uint32_t vkComponentType) {
  return nameOf(kComponentTypes, vkComponentType);
}
bool isComponentTypeName(std::string_view name) {
  return isNameIn(kComponentTypes, name);
}
std::string scopeName(uint32_t vkScope) {
  return nameOf(kScopes, vkScope);
}
bool isScopeName(std::string_view name) {
  return isNameIn(kScopes, name);
}

std::string decodeDriverVersion(uint32_t vendorId, uint32_t raw) {
  constexpr uint32_t kNvidia = 0x10de;
  if (vendorId == kNvidia)
    return fmt::format("{}.{}.{}.{}", raw >> 22, (raw >> 14) & 0xffu, (raw >> 6) & 0xffu, raw & 0x3fu);
  return fmt::format("{}.{}.{}", raw >> 22, (raw >> 12) & 0x3ffu, raw & 0xfffu);
}

std::string apiVersionString(uint32_t apiVersion) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(apiVersion), VK_API_VERSION_MINOR(apiVersion),
                     VK_API_VERSION_PATCH(apiVersion));
}

std::string hexId(uint32_t id) {
  return fmt::format("{:#06x}", id);
}

} // namespace helios::probe
