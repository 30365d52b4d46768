#include "engine/vk/instance.hpp"

#include "engine/vk/error.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace helios::vk {

namespace {

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

  std::vector<const char*> layers;
  const char* env = std::getenv("HELIOS_VALIDATION");
  bool wantValidation = options.validation || (env && env[0] == '1');
  if (wantValidation && layerPresent("VK_LAYER_KHRONOS_validation"))
    layers.push_back("VK_LAYER_KHRONOS_validation");

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();

  Instance instance;
  check(vkCreateInstance(&info, nullptr, &instance.instance_),
        "creating the Vulkan instance (vkCreateInstance)");
  volkLoadInstance(instance.instance_);
  instance.apiVersion_ = loaderVersion;
  return instance;
}

Instance::Instance(Instance&& other) noexcept
    : instance_(std::exchange(other.instance_, VK_NULL_HANDLE)), apiVersion_(other.apiVersion_) {}

Instance& Instance::operator=(Instance&& other) noexcept {
  if (this != &other) {
    if (instance_) vkDestroyInstance(instance_, nullptr);
    instance_ = std::exchange(other.instance_, VK_NULL_HANDLE);
    apiVersion_ = other.apiVersion_;
  }
  return *this;
}

Instance::~Instance() {
  if (instance_) vkDestroyInstance(instance_, nullptr);
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
