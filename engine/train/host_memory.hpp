#pragma once
// Host memory, estimated before a run allocates and compared with what the machine can give, so that a model
// too large for the host is refused with the numbers instead of ending in the kernel's OOM killer, a
// std::bad_alloc or a crash. What a run keeps in host memory: the model state (parameters, gradients, AdamW
// moments) where device memory is host memory (a CPU device such as lavapipe, or an integrated GPU), the
// trainer's buffers likewise, the staging chunk, and at its peak a checkpoint save's copies (the weights and
// both moments downloaded as f32, encoded once more and assembled into the file's bytes: 24 bytes per
// parameter). The training text is checked before it is read: the text and its token ids, up to 5 bytes per
// byte of text. What the machine gives: MemAvailable (/proc/meminfo), every enclosing cgroup's limit less its
// usage (v2 memory.max - memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes), and the address
// space left under RLIMIT_AS (ulimit -v) - the smallest of them.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::train {

class HostMemoryError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HostMemoryNeed {
  std::vector<std::pair<std::string, uint64_t>> parts; // what, bytes (saturating sums: no overflow)
  uint64_t total() const;
};

// A training run's model and trainer (the data is already in memory by then): `trainable` parameters with
// their gradients and AdamW moments, `frozenBytes` of frozen ones (a LoRA base: no gradients, not saved).
HostMemoryNeed trainingHostNeed(uint64_t trainable, uint64_t frozenBytes, bool deviceMemoryIsHost,
                                uint64_t trainerBytes, uint64_t stagingBytes);
// Reading a text file of `bytes` and tokenizing it (byte or char tokens: 4 bytes each).
HostMemoryNeed textHostNeed(uint64_t bytes);

struct HostMemoryAvailable {
  uint64_t bytes = UINT64_MAX;
  std::string limitedBy; // "MemAvailable", "cgroup /a/b (limit 8.00 GiB)", "ulimit -v (...)"
};

// Where the numbers come from; tests point these at files of their own.
struct HostMemorySources {
  std::filesystem::path meminfo = "/proc/meminfo";
  std::filesystem::path selfCgroup = "/proc/self/cgroup";
  std::filesystem::path selfStatus = "/proc/self/status"; // VmSize, against RLIMIT_AS
  std::filesystem::path cgroupRoot = "/sys/fs/cgroup";
  bool addressSpaceLimit = true; // read RLIMIT_AS
};
HostMemoryAvailable availableHostMemory(const HostMemorySources& sources = {});

// Throws HostMemoryError "WHAT needs about X of host memory (part a, part b, ...); the machine has Y
// available (limited by ...)" when need.total() exceeds what is available.
void requireHostMemory(const HostMemoryNeed& need, const HostMemoryAvailable& available,
                       const std::string& what);

std::string formatHostBytes(uint64_t bytes); // "512.0 MiB", "3.21 GiB", "1.50 TiB"

} // namespace helios::train
