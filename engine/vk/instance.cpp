#include "engine/vk/instance.hpp"

#include "engine/vk/error.hpp"
#include "engine/vk/validation.hpp"

#include <cstring>
#include <utility>

namespace helios::vk {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layerPresent(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& layer : layers)
    if (std::strcmp(layer.layerName, name) == 0) return true;
  return false;
}

} // namespace

Instance Instance::create(const InstanceOptions& options) {
  if (volkInitialize() != VK_SUCCESS)
    throw LoaderMissing("No Vulkan loader found (libvulkan.so.1 could not be loaded): install the Vulkan "
                        "loader and a driver, e.g. `apt-get install libvulkan1 mesa-vulkan-drivers`.");

  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_3)
    throw NoDevice("The Vulkan loader supports only Vulkan " +
                   std::to_string(VK_API_VERSION_MAJOR(loaderVersion)) + "." +
                   std::to_string(VK_API_VERSION_MINOR(loaderVersion)) + "; Helios needs 1.3.");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = options.appName.c_str();
  app.pEngineName = "helios";
  app.apiVersion = VK_API_VERSION_1_3;

  std::vector<const char*> layers, extensions;
  const bool validation = options.validation || validationRequestedByEnvironment();
  const VkDebugUtilsMessengerCreateInfoEXT messenger = validationMessengerInfo();
  if (validation) {
    // Asked for and missing is an error: a run meant to be checked must not pass unchecked.
    if (!layerPresent(kValidationLayer))
      throw VulkanError(VK_ERROR_LAYER_NOT_PRESENT,
                        std::string("enabling the validation layer (HELIOS_VALIDATION=1): ") +
                            kValidationLayer + " is not installed (apt-get install vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = validation ? &messenger : nullptr; // covers vkCreateInstance and vkDestroyInstance themselves
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();

  Instance instance;
  check(vkCreateInstance(&info, nullptr, &instance.instance_),
        "creating the Vulkan instance (vkCreateInstance)");
  volkLoadInstance(instance.instance_);
  instance.apiVersion_ = loaderVersion;
  if (validation) attachValidationMessenger(instance.instance_);
  return instance;
}

Instance::Instance(Instance&& other) noexcept
    : instance_(std::exchange(other.instance_, VK_NULL_HANDLE)), apiVersion_(other.apiVersion_) {}

Instance& Instance::operator=(Instance&& other) noexcept {
  if (this != &other) {
    if (instance_) {
      detachValidationMessenger(instance_);
      vkDestroyInstance(instance_, nullptr);
    }
    instance_ = std::exchange(other.instance_, VK_NULL_HANDLE);
    apiVersion_ = other.apiVersion_;
  }
  return *this;
}

Instance::~Instance() {
  if (instance_) {
    detachValidationMessenger(instance_);
    vkDestroyInstance(instance_, nullptr);
  }
}

std::vector<VkPhysicalDevice> Instance::physicalDevices() const {
  uint32_t count = 0;
  check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "counting physical devices");
  std::vector<VkPhysicalDevice> devices(count);
  check(vkEnumeratePhysicalDevices(instance_, &count, devices.data()), "listing physical devices");
  devices.resize(count);
  return devices;
}

} // namespace helios::vk
