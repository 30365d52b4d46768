#pragma once
// Compute pipelines built from generated SPIR-V, keyed by the kernel's cache key, with a VkPipelineCache
// persisted on disk per device so that a second run skips driver compilation.
#include "codegen/kernel.hpp"
#include "engine/vk/device.hpp"

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace helios::vk {

struct Pipeline {
  std::string name;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  uint32_t numBuffers = 0;
  uint32_t pushConstantBytes = 0;
  std::array<uint32_t, 3> localSize{1, 1, 1};
};

// Per-executable statistics from VK_KHR_pipeline_executable_properties (what the driver chooses to report).
struct ExecutableStat {
  std::string executable; // e.g. "SASS" or "Compute Shader"
  std::string name;       // e.g. "Register Count", "Spill Count"
  std::string value;
};

// What PipelineCache::precompile did: `pipelines` created by `threads` threads in `wallMs`, `compileMs`
// being the sum of their creation times.
struct PrecompileStats {
  uint32_t pipelines = 0;
  uint32_t threads = 0;
  double wallMs = 0;
  double compileMs = 0;
};

struct PipelineCacheStats {
  uint64_t created = 0;
  uint64_t hits = 0;
  double createMs = 0; // wall time spent in vkCreateComputePipelines
};

// Where Helios keeps per-device files (pipeline caches, coop self-test results): $HELIOS_CACHE_DIR, else
// $XDG_CACHE_HOME/helios, else ~/.cache/helios; empty when none of them is set.
std::filesystem::path cacheDirectory();

class PipelineCache {
public:
  // `file` empty: no persistence. Use defaultCacheFile(device) for the standard location.
  PipelineCache(const Device& device, std::filesystem::path file);
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  ~PipelineCache(); // saves the VkPipelineCache to disk

  const Pipeline& get(const codegen::Kernel& kernel);
  // Looks the key up first and calls `generate` (returning a codegen::Kernel) only on a miss, so that hot
  // paths pay for neither SPIR-V generation nor hashing of words.
  template <class Generate> const Pipeline& get(const std::string& cacheKey, Generate&& generate) {
    if (auto it = pipelines_.find(cacheKey); it != pipelines_.end()) {
      stats_.hits++;
      return *it->second;
    }
    return get(generate());
  }
  // Runs `record` (which asks for pipelines, e.g. by recording a step into an ops::RecordingExecutor) with
  // creation deferred: each new kernel gets its layouts and a null VkPipeline at once, and when `record`
  // returns, all of them are created on `threads` threads (0: one per core). The driver's compiler is the
  // start-up cost of a cold cache, and it runs serially when pipelines are created as ops first ask for them.
  PrecompileStats precompile(const std::function<void()>& record, unsigned threads = 0);
  // Within its scope pipelines are created at once even inside a precompile: for work that must run while a
  // recording is being listed (the coop self-test that a first coop op triggers).
  class Immediate {
  public:
    explicit Immediate(PipelineCache& cache) : cache_(cache), was_(std::exchange(cache.deferring_, false)) {}
    Immediate(const Immediate&) = delete;
    Immediate& operator=(const Immediate&) = delete;
    ~Immediate() { cache_.deferring_ = was_; }

  private:
    PipelineCache& cache_;
    bool was_;
  };
  bool contains(const std::string& cacheKey) const { return pipelines_.count(cacheKey) != 0; }
  std::vector<ExecutableStat> executableStats(const Pipeline& pipeline) const;
  const PipelineCacheStats& stats() const { return stats_; }
  void save() const;

  // In cacheDirectory(); one file per device + driver.
  static std::filesystem::path defaultCacheFile(const Device& device);

private:
  struct Deferred {
    codegen::Kernel kernel;
    Pipeline* pipeline;
  };
  void createLayouts(const codegen::Kernel& kernel, Pipeline& p) const;
  double createPipeline(const codegen::Kernel& kernel, Pipeline& p) const; // ms in the driver
  void destroy(Pipeline& p) const;
  PrecompileStats compileDeferred(unsigned threads);
  void dropDeferred();

  const Device& device_;
  std::filesystem::path file_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  PipelineCacheStats stats_;
  bool deferring_ = false;
  std::vector<Deferred> deferred_;
};

} // namespace helios::vk
