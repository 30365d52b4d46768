#pragma once
// The Khronos validation layer, on request (HELIOS_VALIDATION=1 or InstanceOptions::validation): its messages
// come through a VK_EXT_debug_utils messenger into Helios' stderr ("helios: validation error: ..."), and each
// warning or error is counted. When any was counted, the process exits with status kValidationExitCode at the
// end, so a test or a training run under the layer fails on the first message instead of scrolling past it.
// Synchronization validation is switched on by a layer settings file (tests/validation/vk_layer_settings.txt,
// found through VK_LAYER_SETTINGS_PATH), as the layer of Debian 12 ignores the environment-variable form.
#include <cstdint>
#include <volk.h>

namespace helios::vk {

constexpr int kValidationExitCode = 70;

// HELIOS_VALIDATION: unset, "" or "0" = off, "1" = on; anything else is refused (std::invalid_argument).
bool parseValidationSetting(const char* value);
bool validationRequestedByEnvironment(); // reads HELIOS_VALIDATION once per call, through the parser above

// Warnings and errors the layer has reported to this process so far.
uint64_t validationMessageCount();

// The messenger to chain into VkInstanceCreateInfo (so instance creation itself is covered) and to create
// afterwards; the callback prints and counts.
VkDebugUtilsMessengerCreateInfoEXT validationMessengerInfo();

// Creates the messenger for `instance` (created with the layer and VK_EXT_debug_utils) and registers, once,
// the exit hook that turns counted messages into a non-zero exit status. detach destroys the messenger (a
// no-op for an instance without one); call it before vkDestroyInstance.
void attachValidationMessenger(VkInstance instance);
void detachValidationMessenger(VkInstance instance);

} // namespace helios::vk
