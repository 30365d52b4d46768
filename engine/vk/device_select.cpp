#include "engine/vk/device_select.hpp"

#include "engine/vk/error.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>

namespace helios::vk {

namespace {

int typeRank(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return 4;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return 3;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return 1;
  default:
    return 0;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string listing(const std::vector<DeviceCandidate>& candidates) {
  std::string out;
  for (const auto& c : candidates)
    out += fmt::format("{}[{}] {} ({}, Vulkan {}.{})", out.empty() ? "" : "; ", c.index, c.name,
                       deviceTypeName(c.type), VK_API_VERSION_MAJOR(c.apiVersion),
                       VK_API_VERSION_MINOR(c.apiVersion));
  return out;
}

bool usable(const DeviceCandidate& c) {
  return c.apiVersion >= VK_API_VERSION_1_3;
}

bool isIndex(std::string_view selector) {
  return !selector.empty() && selector.find_first_not_of("0123456789") == std::string_view::npos;
}

} // namespace

const char* deviceTypeName(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "CPU";
  default:
    return "other";
  }
}

size_t selectDevice(const std::vector<DeviceCandidate>& candidates, std::string_view selector,
                    uint32_t slot) {
  if (candidates.empty())
    throw NoDevice("No Vulkan device found: the loader is installed but no driver reports a device "
                   "(for a CPU-only machine install mesa-vulkan-drivers for lavapipe).");

  auto requireUsable = [&](size_t i) {
    if (!usable(candidates[i]))
      throw NoDevice(fmt::format("Device [{}] {} supports only Vulkan {}.{}; Helios needs 1.3.",
                                 candidates[i].index, candidates[i].name,
                                 VK_API_VERSION_MAJOR(candidates[i].apiVersion),
                                 VK_API_VERSION_MINOR(candidates[i].apiVersion)));
    return i;
  };

  if (selector.empty()) {
    std::optional<size_t> best;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (usable(candidates[i]) && (!best || typeRank(candidates[i].type) > typeRank(candidates[*best].type)))
        best = i;
    if (!best) throw NoDevice("No Vulkan 1.3 device found; available: " + listing(candidates));
    std::vector<size_t> peers; // the usable devices of the best one's type, in index order
    for (size_t i = 0; i < candidates.size(); ++i)
      if (usable(candidates[i]) && candidates[i].type == candidates[*best].type) peers.push_back(i);
    return peers[slot % peers.size()];
  }

  const size_t first = requireUsable(matchDevice(candidates, selector));
  std::vector<size_t> peers; // a name several usable devices match: they are shared out like the best type's
  const std::string needle = lower(selector);
  for (size_t i = 0; i < candidates.size() && !isIndex(selector); ++i)
    if (usable(candidates[i]) && lower(candidates[i].name).find(needle) != std::string::npos)
      peers.push_back(i);
  return peers.empty() ? first : peers[slot % peers.size()];
}

size_t matchDevice(const std::vector<DeviceCandidate>& candidates, std::string_view selector) {
  unsigned index = 0;
  auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
  if (ec == std::errc() && end == selector.data() + selector.size()) {
    if (index >= candidates.size())
      throw NoDevice(fmt::format("Device index {} is out of range: there {} {} device{} ({}).", index,
                                 candidates.size() == 1 ? "is" : "are", candidates.size(),
                                 candidates.size() == 1 ? "" : "s", listing(candidates)));
    return index;
  }
  std::string needle = lower(selector);
  for (size_t i = 0; i < candidates.size(); ++i)
    if (lower(candidates[i].name).find(needle) != std::string::npos) return i;
  throw NoDevice(
      fmt::format("No Vulkan device name contains \"{}\"; available: {}", selector, listing(candidates)));
}

std::string deviceSelector(std::string_view given) {
  if (!given.empty()) return std::string(given);
  const char* env = std::getenv("HELIOS_DEVICE");
  return env ? std::string(env) : std::string();
}

std::vector<DeviceCandidate> describeDevices(const std::vector<VkPhysicalDevice>& devices) {
  std::vector<DeviceCandidate> out;
  for (uint32_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(devices[i], &props);
    out.push_back({i, props.deviceName, props.deviceType, props.apiVersion});
  }
  return out;
}

} // namespace helios::vk
