#include "engine/train/host_memory.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <sys/resource.h>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kNoLimit = 1ull << 60; // cgroup v1 writes "no limit" as 2^63 rounded to a page

uint64_t satAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t satMul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

std::optional<uint64_t> parseNumber(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "Key:   1234 kB" in /proc/meminfo or /proc/self/status, in bytes.
std::optional<uint64_t> kbField(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(std::string(key) + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    uint64_t kb = 0;
    if (fields >> kb) return satMul(kb, 1024);
  }
  return std::nullopt;
}

// The memory cgroup directories enclosing this process, innermost first (v2, or v1's memory controller).
std::vector<std::pair<fs::path, bool>> cgroupDirs(const HostMemorySources& s) {
  std::vector<std::pair<fs::path, bool>> dirs; // directory, is v2
  std::istringstream in(readText(s.selfCgroup));
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    fs::path rel = fs::path(line.substr(b + 1)).relative_path();
    const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
    bool memory = false;
    std::istringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      memory = memory || c == "memory";
    if (!v2 && !memory) continue;
    const fs::path mount =
        v2 ? (fs::exists(s.cgroupRoot / "unified") ? s.cgroupRoot / "unified" : s.cgroupRoot)
           : s.cgroupRoot / "memory";
    for (;; rel = rel.parent_path()) {
      dirs.emplace_back(mount / rel, v2);
      if (rel.empty()) break;
    }
  }
  return dirs;
}

void lower(HostMemoryAvailable& a, uint64_t bytes, std::string why) {
  if (bytes < a.bytes) a = {bytes, std::move(why)};
}

} // namespace

uint64_t HostMemoryNeed::total() const {
  uint64_t t = 0;
  for (const auto& [what, bytes] : parts)
    t = satAdd(t, bytes);
  return t;
}

HostMemoryNeed trainingHostNeed(uint64_t trainable, uint64_t frozenBytes, bool deviceMemoryIsHost,
                                uint64_t trainerBytes, uint64_t stagingBytes) {
  HostMemoryNeed n;
  if (deviceMemoryIsHost) {
    n.parts.emplace_back(
        "parameters, gradients and AdamW moments in device memory, which is host memory here",
        satMul(trainable, 16));
    if (frozenBytes) n.parts.emplace_back("the frozen base in device memory", frozenBytes);
    n.parts.emplace_back("the trainer's buffers", trainerBytes);
  }
  n.parts.emplace_back("a checkpoint save's host copies of the weights and moments", satMul(trainable, 24));
  if (stagingBytes) n.parts.emplace_back("staging", stagingBytes);
  return n;
}

HostMemoryNeed textHostNeed(uint64_t bytes) {
  return {{{"the text and its token ids", satMul(bytes, 5)}}};
}

HostMemoryAvailable availableHostMemory(const HostMemorySources& s) {
  HostMemoryAvailable a;
  if (const auto avail = kbField(readText(s.meminfo), "MemAvailable")) lower(a, *avail, "MemAvailable");
  for (const auto& [dir, v2] : cgroupDirs(s)) {
    const auto limit = parseNumber(readText(dir / (v2 ? "memory.max" : "memory.limit_in_bytes")));
    const auto usage = parseNumber(readText(dir / (v2 ? "memory.current" : "memory.usage_in_bytes")));
    if (!limit || *limit >= kNoLimit) continue; // v2 writes "max": no number
    lower(a, *limit - std::min(*limit, usage.value_or(0)),
          fmt::format("the cgroup {} (limit {})", dir.string(), formatHostBytes(*limit)));
  }
  rlimit as{};
  if (s.addressSpaceLimit && ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const uint64_t used = kbField(readText(s.selfStatus), "VmSize").value_or(0);
    lower(a, as.rlim_cur - std::min<uint64_t>(as.rlim_cur, used),
          fmt::format("ulimit -v (address space limit {}, {} mapped)", formatHostBytes(as.rlim_cur),
                      formatHostBytes(used)));
  }
  return a;
}

void requireHostMemory(const HostMemoryNeed& need, const HostMemoryAvailable& available,
                       const std::string& what) {
  if (need.total() <= available.bytes) return;
  std::string parts;
  for (const auto& [name, bytes] : need.parts)
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name, formatHostBytes(bytes));
  throw HostMemoryError(fmt::format("{} needs about {} of host memory ({}); the machine has {} available "
                                    "(limited by {}): refused before allocating it",
                                    what, formatHostBytes(need.total()), parts,
                                    formatHostBytes(available.bytes), available.limitedBy));
}

std::string formatHostBytes(uint64_t b) {
  if (b >= (1ull << 40)) return fmt::format("{:.2f} TiB", double(b) / double(1ull << 40));
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(b) / double(1ull << 30));
  return fmt::format("{:.1f} MiB", double(b) / double(1ull << 20));
}

} // namespace helios::train
