// queryCaps on the real devices of this machine, through vk::probeDevices (lavapipe on CI and developer
// machines).
#include "engine/vk/device_probe.hpp"
#include "engine/vk/error.hpp"
#include "probe/scoring.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>

using namespace helios::probe;
using Catch::Matchers::ContainsSubstring;

namespace {
bool powerOfTwo(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}
} // namespace

TEST_CASE("queryCaps returns sane values for every device", "[probe][live]") {
  std::vector<DeviceCaps> devices;
  try {
    devices = helios::vk::probeDevices();
  } catch (const helios::vk::LoaderMissing& e) {
    SKIP(e.what());
  }
  REQUIRE_FALSE(devices.empty());
  for (const auto& d : devices) {
    INFO(d.name);
    CHECK_FALSE(d.name.empty());
    CHECK(powerOfTwo(d.subgroup_size));
    CHECK(d.min_subgroup_size <= d.subgroup_size);
    CHECK(d.subgroup_size <= d.max_subgroup_size);
    CHECK(d.max_compute_shared_memory >= 16384);
    CHECK(d.max_workgroup_invocations >= 128);
    CHECK(d.api_version.rfind("1.", 0) == 0);
    CHECK_FALSE(d.driver.empty());
    for (const auto& p : d.coop_khr) {
      CHECK(p.M > 0);
      CHECK(p.scope.rfind("unknown", 0) != 0);
    }
  }
}

TEST_CASE("lavapipe has no cooperative matrix, so the tiled fallback is chosen", "[probe][live]") {
  std::vector<DeviceCaps> devices;
  try {
    devices = helios::vk::probeDevices();
  } catch (const helios::vk::LoaderMissing& e) {
    SKIP(e.what());
  }
  bool sawLavapipe = false;
  for (const auto& d : devices) {
    if (d.name.find("llvmpipe") == std::string::npos) continue;
    sawLavapipe = true;
    // Mesa 25.0's lavapipe (Debian 12 backports, LLVM 15) does not offer VK_KHR_cooperative_matrix.
    CHECK_FALSE(d.hasExtension("VK_KHR_cooperative_matrix"));
    CHECK(d.coop_khr.empty());
    CHECK(d.coop_nv2.empty());
    CHECK_FALSE(bestF16F32(d.coop_khr));
    CHECK_THAT(explainChoice(d.coop_khr), ContainsSubstring("tiled fallback kernel will be used"));
  }
  if (!sawLavapipe) SKIP("no lavapipe device on this machine");
}
