#include "probe/selftest.hpp"

#include "helios/kernel_version.hpp"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace helios::probe {

namespace {

nlohmann::json keyJson(const SelfTestKey& k) {
  return {{"vendor_id", k.vendorId},
          {"device_id", k.deviceId},
          {"driver_version", k.driverVersion},
          {"device_uuid", k.deviceUuid},
          {"kernel_version", k.kernelVersion}};
}

} // namespace

std::string_view selfTestStatusName(SelfTestStatus status) {
  switch (status) {
  case SelfTestStatus::Pass:
    return "pass";
  case SelfTestStatus::Fail:
    return "fail";
  case SelfTestStatus::NotRun:
    break;
  }
  return "not run";
}

SelfTestKey selfTestKey(uint32_t vendorId, uint32_t deviceId, uint32_t driverVersion,
                        std::string deviceUuid) {
  return {vendorId, deviceId, driverVersion, std::move(deviceUuid), HELIOS_KERNEL_VERSION};
}

std::filesystem::path selfTestCacheFile(const std::filesystem::path& dir, const SelfTestKey& key) {
  if (dir.empty()) return {};
  return dir / fmt::format("coop-selftest-{:04x}-{:04x}-{}.json", key.vendorId, key.deviceId,
                           key.deviceUuid.empty() ? "nouuid" : key.deviceUuid);
}

std::optional<SelfTestResult> readSelfTestCache(const std::filesystem::path& file, const SelfTestKey& key) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt; // missing, or a FIFO that would block
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  const auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("key") || doc["key"] != keyJson(key)) return std::nullopt;
  const auto status = doc.find("status"), failure = doc.find("failure");
  if (status == doc.end() || !status->is_string() || failure == doc.end() || !failure->is_string())
    return std::nullopt;
  SelfTestResult r;
  r.cached = true;
  r.failure = failure->get<std::string>();
  if (*status == "pass")
    r.status = SelfTestStatus::Pass;
  else if (*status == "fail")
    r.status = SelfTestStatus::Fail;
  else
    return std::nullopt;
  return r;
}

bool writeSelfTestCache(const std::filesystem::path& file, const SelfTestKey& key,
                        const SelfTestResult& result) {
  if (file.empty() || result.status == SelfTestStatus::NotRun) return false;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const nlohmann::json doc{{"key", keyJson(key)},
                           {"status", std::string(selfTestStatusName(result.status))},
                           {"failure", result.failure}};
  auto tmp = file;
  tmp += fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << doc.dump(2) << "\n";
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

std::string describeSelfTest(const SelfTestResult& r) {
  if (r.status == SelfTestStatus::NotRun) return "not run";
  std::string line(selfTestStatusName(r.status));
  if (r.status == SelfTestStatus::Fail) line += ": " + r.failure;
  return line + (r.cached ? " (cached)" : " (this run)");
}

} // namespace helios::probe
