#include "engine/vk/validation.hpp"

#include "engine/vk/error.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace helios::vk {

namespace {

std::atomic<uint64_t> gMessages{0};
std::mutex gMessengersMutex;
std::map<VkInstance, VkDebugUtilsMessengerEXT> gMessengers; // the Instance class keeps no handle of its own

const char* severityName(VkDebugUtilsMessageSeverityFlagBitsEXT s) {
  return s & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
}

VKAPI_ATTR VkBool32 VKAPI_CALL onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                         VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  gMessages.fetch_add(1);
  std::fprintf(stderr, "helios: validation %s [%s]: %s\n", severityName(severity),
               data && data->pMessageIdName ? data->pMessageIdName : "?",
               data && data->pMessage ? data->pMessage : "");
  return VK_FALSE; // the call goes on as it would without the layer
}

void exitOnMessages() {
  const uint64_t n = gMessages.load();
  if (n == 0) return;
  std::fprintf(stderr, "helios: %llu validation message(s) reported; exiting with status %d\n",
               static_cast<unsigned long long>(n), kValidationExitCode);
  std::fflush(nullptr); // _Exit flushes nothing
  std::_Exit(kValidationExitCode);
}

} // namespace

bool parseValidationSetting(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "0") return false;
  if (v == "1") return true;
  throw std::invalid_argument("HELIOS_VALIDATION='" + v + "': use 1 (validation layer on) or 0 (off)");
}

bool validationRequestedByEnvironment() {
  return parseValidationSetting(std::getenv("HELIOS_VALIDATION"));
}

uint64_t validationMessageCount() {
  return gMessages.load();
}

VkDebugUtilsMessengerCreateInfoEXT validationMessengerInfo() {
  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = onMessage;
  return info;
}

void attachValidationMessenger(VkInstance instance) {
  const VkDebugUtilsMessengerCreateInfoEXT info = validationMessengerInfo();
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  check(vkCreateDebugUtilsMessengerEXT(instance, &info, nullptr, &messenger),
        "creating the validation messenger (vkCreateDebugUtilsMessengerEXT)");
  {
    std::lock_guard lock(gMessengersMutex);
    gMessengers[instance] = messenger;
  }
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(exitOnMessages); });
}

void detachValidationMessenger(VkInstance instance) {
  std::lock_guard lock(gMessengersMutex);
  auto it = gMessengers.find(instance);
  if (it == gMessengers.end()) return;
  vkDestroyDebugUtilsMessengerEXT(instance, it->second, nullptr);
  gMessengers.erase(it);
}

} // namespace helios::vk
