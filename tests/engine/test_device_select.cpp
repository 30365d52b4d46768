// Device selection is a pure function of the device list: tested on made-up lists.
#include "engine/vk/device_select.hpp"
#include "engine/vk/error.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdlib>
#include <string>

using namespace helios::vk;
using Catch::Matchers::ContainsSubstring;

namespace {
const std::vector<DeviceCandidate> kMachine = {
    {0, "llvmpipe (LLVM 19.1.7, 256 bits)", VK_PHYSICAL_DEVICE_TYPE_CPU, VK_API_VERSION_1_4},
    {1, "Intel(R) UHD Graphics 770", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, VK_API_VERSION_1_3},
    {2, "NVIDIA H100 80GB HBM3", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_API_VERSION_1_4},
    {3, "Old GPU", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_API_VERSION_1_1},
};
}

TEST_CASE("default selection prefers discrete over integrated over CPU, skipping devices below Vulkan 1.3") {
  CHECK(selectDevice(kMachine, "") == 2);
  CHECK(selectDevice({kMachine[0], kMachine[1]}, "") == 1);
  CHECK(selectDevice({kMachine[0]}, "") == 0);
  CHECK(selectDevice({kMachine[3], kMachine[0]}, "") == 1);
}

TEST_CASE("a rank's slot shares out the usable devices of the best type, modulo their count") {
  std::vector<DeviceCandidate> host = kMachine;
  host.push_back({4, "NVIDIA H100 80GB HBM3", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_API_VERSION_1_4});
  CHECK(selectDevice(host, "", 0) == 2);
  CHECK(selectDevice(host, "", 1) == 4); // the old discrete GPU (index 3) is skipped
  CHECK(selectDevice(host, "", 2) == 2);
  CHECK(selectDevice(host, "", 5) == 4);
  CHECK(selectDevice(kMachine, "", 3) == 2); // one GPU: every rank shares it
  CHECK(selectDevice(host, "0", 1) == 0);    // a selector wins over the slot
}

TEST_CASE("a name several devices contain is shared out by the slot, as the best type is") {
  std::vector<DeviceCandidate> host = kMachine;
  host.push_back({4, "NVIDIA H100 80GB HBM3", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_API_VERSION_1_4});
  host.push_back({5, "NVIDIA A100", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_API_VERSION_1_2});
  CHECK(selectDevice(host, "nvidia", 0) == 2);
  CHECK(selectDevice(host, "nvidia", 1) == 4);
  CHECK(selectDevice(host, "nvidia", 2) == 2);   // the A100 below Vulkan 1.3 is not shared out
  CHECK(selectDevice(host, "llvmpipe", 3) == 0); // one match: every slot takes it
  CHECK(selectDevice(host, "4", 0) == 4);        // an index is that device whatever the slot
}

TEST_CASE("selection by index and by case-insensitive name substring") {
  CHECK(selectDevice(kMachine, "0") == 0);
  CHECK(selectDevice(kMachine, "1") == 1);
  CHECK(selectDevice(kMachine, "h100") == 2);
  CHECK(selectDevice(kMachine, "LLVMPIPE") == 0);
}

TEST_CASE("bad selectors raise NoDevice with a sentence naming the choices") {
  CHECK_THROWS_WITH(selectDevice(kMachine, "7"),
                    ContainsSubstring("Device index 7 is out of range") && ContainsSubstring("NVIDIA H100"));
  CHECK_THROWS_WITH(selectDevice(kMachine, "radeon"),
                    ContainsSubstring("No Vulkan device name contains \"radeon\""));
  CHECK_THROWS_WITH(selectDevice(kMachine, "3"), ContainsSubstring("Helios needs 1.3"));
  CHECK_THROWS_AS(selectDevice({}, ""), NoDevice);
}

TEST_CASE("deviceSelector: the given selector, else HELIOS_DEVICE, else the best device") {
  const char* saved = std::getenv("HELIOS_DEVICE");
  const std::string before = saved ? saved : "";
  ::setenv("HELIOS_DEVICE", "llvmpipe", 1);
  CHECK(deviceSelector("h100") == "h100");
  CHECK(deviceSelector("") == "llvmpipe");
  ::unsetenv("HELIOS_DEVICE");
  CHECK(deviceSelector("").empty());
  CHECK(deviceSelector("2") == "2");
  if (saved) ::setenv("HELIOS_DEVICE", before.c_str(), 1);
}
