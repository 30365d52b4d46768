#include "engine/ops/coop_selftest.hpp"

#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "engine/ops/device_tuning.hpp"
#include "probe/caps.hpp"

namespace helios::ops {

namespace {

// Set while this thread runs the self-test: the GEMMs and attention it runs ask coopDeviceInfo again.
thread_local bool tInSelfTest = false;

struct Verdict {
  bool trusted = true;
  probe::SelfTestResult result;
};

std::mutex& verdictMutex() {
  static std::mutex m;
  return m;
}
std::map<VkPhysicalDevice, Verdict>& verdicts() {
  static std::map<VkPhysicalDevice, Verdict> v;
  return v;
}

} // namespace

probe::SelfTestResult runCoopChecks(const std::vector<CoopCheck>& checks) {
  probe::SelfTestResult r;
  for (const CoopCheck& c : checks) {
    std::string what;
    try {
      what = c.run();
    } catch (const std::exception& e) {
      what = std::string("threw: ") + e.what();
    }
    if (!what.empty()) {
      r.status = probe::SelfTestStatus::Fail;
      r.failure = c.name + ": " + what;
      return r;
    }
    r.status = probe::SelfTestStatus::Pass;
  }
  return r;
}

bool decideCoop(CoopMode mode, const std::string& deviceName, const std::filesystem::path& cacheFile,
                const probe::SelfTestKey& key, const std::function<std::vector<CoopCheck>()>& checks,
                std::ostream& warn, probe::SelfTestResult* out) {
  probe::SelfTestResult r;
  if (mode == CoopMode::Auto) {
    if (auto cached = probe::readSelfTestCache(cacheFile, key))
      r = *cached;
    else {
      r = runCoopChecks(checks());
      probe::writeSelfTestCache(cacheFile, key, r);
    }
  }
  if (out) *out = r;
  if (mode != CoopMode::Auto) return mode == CoopMode::On;
  if (r.status != probe::SelfTestStatus::Fail) return true;
  warn << "helios: cooperative matrices turned off on " << deviceName << ": the coop self-test failed ("
       << r.failure << ")" << (r.cached ? ", as cached in " + cacheFile.string() : std::string())
       << "; the tiled and fallback kernels run instead (HELIOS_COOP=on forces coop)\n";
  return false;
}

bool coopTrusted(const vk::Device& device, const CoopDeviceInfo& info) {
  // Emulated coop (HELIOS_COOP_EMULATE) is a test mode whose lowered kernels the test suites check.
  if (tInSelfTest || info.lowered) return true;
  std::lock_guard lock(verdictMutex());
  auto it = verdicts().find(device.physical());
  if (it != verdicts().end()) return it->second.trusted;
  const CoopMode mode = deviceTuning(device).gemm.coop.value;
  const VkPhysicalDeviceProperties& p = device.properties();
  probe::SelfTestKey key = probe::selfTestKey(p.vendorID, p.deviceID, p.driverVersion,
                                              probe::queryDeviceUuid(VK_NULL_HANDLE, device.physical()));
  // A verdict holds for the shape and subgroup size it checked (HELIOS_COOP_SHAPE can pick another).
  key.kernelVersion += fmt::format("/{}x{}x{}/sg{}", info.coopM, info.coopN, info.coopK, info.subgroupSize);
  vk::Context* ctx = vk::Context::owning(device);
  std::optional<vk::PipelineCache::Immediate>
      immediate; // the checks run even when a precompile triggered them
  if (ctx) immediate.emplace(ctx->pipelines());
  const auto checks = [&] { return ctx ? liveCoopChecks(*ctx, info) : std::vector<CoopCheck>{}; };
  Verdict v;
  tInSelfTest = true;
  try {
    v.trusted = decideCoop(mode, p.deviceName, probe::selfTestCacheFile(vk::cacheDirectory(), key), key,
                           checks, std::cerr, &v.result);
  } catch (...) {
    tInSelfTest = false;
    throw;
  }
  tInSelfTest = false;
  return verdicts().emplace(device.physical(), v).first->second.trusted;
}

probe::SelfTestResult coopSelfTestResult(const vk::Device& device) {
  std::lock_guard lock(verdictMutex());
  auto it = verdicts().find(device.physical());
  return it == verdicts().end() ? probe::SelfTestResult{} : it->second.result;
}

} // namespace helios::ops
