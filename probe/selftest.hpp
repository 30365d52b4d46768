#pragma once
// The per-device cooperative-matrix self-test's outcome (engine/ops/coop_selftest.hpp runs it) and the file
// that keeps it between runs, beside the pipeline caches (vk::cacheDirectory()). helios-probe reads it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace helios::probe {

enum class SelfTestStatus { NotRun, Pass, Fail };
std::string_view selfTestStatusName(SelfTestStatus status); // "not run", "pass", "fail"

struct SelfTestResult {
  SelfTestStatus status = SelfTestStatus::NotRun;
  std::string failure; // the failed check and what was wrong ("" unless Fail)
  bool cached = false; // read back from the cache file (else run by this process)
  bool operator==(const SelfTestResult&) const = default;
};

// What a result is valid for: the device (ids and VkPhysicalDeviceIDProperties::deviceUUID), its driver and
// the kernels Helios generates (HELIOS_KERNEL_VERSION).
struct SelfTestKey {
  uint32_t vendorId = 0, deviceId = 0, driverVersion = 0;
  std::string deviceUuid; // 32 hex digits
  std::string kernelVersion;
  bool operator==(const SelfTestKey&) const = default;
};

// The key for a device with this build's HELIOS_KERNEL_VERSION.
SelfTestKey selfTestKey(uint32_t vendorId, uint32_t deviceId, uint32_t driverVersion, std::string deviceUuid);

// `dir`/coop-selftest-<vendor>-<device>-<uuid>.json; empty when `dir` is.
std::filesystem::path selfTestCacheFile(const std::filesystem::path& dir, const SelfTestKey& key);
// The result cached for `key` (cached = true): nullopt when the file is missing, unreadable, not the
// expected JSON, or written for another key (driver or kernels changed).
std::optional<SelfTestResult> readSelfTestCache(const std::filesystem::path& file, const SelfTestKey& key);
// Writes through a temporary file renamed over `file`, so readers never see half a file; false when it
// cannot be written (a read-only cache only costs a re-run next time).
bool writeSelfTestCache(const std::filesystem::path& file, const SelfTestKey& key,
                        const SelfTestResult& result);

// "pass (cached)", "fail: <why> (this run)", "not run".
std::string describeSelfTest(const SelfTestResult& result);

} // namespace helios::probe
