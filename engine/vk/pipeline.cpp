#include "engine/vk/pipeline.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"
#include "engine/vk/error.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

namespace helios::vk {

namespace {

std::vector<char> readFile(const std::filesystem::path& path) {
  if (io::fileKind(path) != "a regular file") return {}; // missing, or a FIFO that would block open()
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

std::filesystem::path cacheDirectory() {
  if (const char* env = std::getenv("HELIOS_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "helios";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache/helios";
  return {};
}

std::filesystem::path PipelineCache::defaultCacheFile(const Device& device) {
  const std::filesystem::path dir = cacheDirectory();
  if (dir.empty()) return {};
  const auto& p = device.properties();
  std::string uuid;
  for (int i = 0; i < 8; ++i)
    uuid += fmt::format("{:02x}", p.pipelineCacheUUID[i]);
  return dir /
         fmt::format("pipelines-{:04x}-{:04x}-{:x}-{}.bin", p.vendorID, p.deviceID, p.driverVersion, uuid);
}

PipelineCache::PipelineCache(const Device& device, std::filesystem::path file)
    : device_(device), file_(std::move(file)) {
  std::vector<char> data = file_.empty() ? std::vector<char>{} : readFile(file_);
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  // The driver validates the header (vendor, device, UUID) and ignores stale data; retry empty if it refuses.
  if (vkCreatePipelineCache(device_.handle(), &info, nullptr, &cache_) != VK_SUCCESS) {
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_.handle(), &info, nullptr, &cache_), "creating the pipeline cache");
  }
}

PipelineCache::~PipelineCache() {
  save();
  for (auto& [key, p] : pipelines_)
    destroy(*p);
  vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

void PipelineCache::save() const {
  if (file_.empty() || stats_.created == 0) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_.handle(), cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device_.handle(), cache_, &size, data.data()) != VK_SUCCESS) return;
  // Atomic replace: a crash mid-write never leaves a truncated cache behind.
  std::error_code ec;
  std::filesystem::create_directories(file_.parent_path(), ec);
  try {
    io::writeFileAtomically(file_, std::as_bytes(std::span<const char>(data.data(), size)));
  } catch (const io::FileWriteError&) {
    // a read-only cache dir only costs compile time
  }
}

const Pipeline& PipelineCache::get(const codegen::Kernel& kernel) {
  if (kernel.cacheKey.empty())
    throw std::invalid_argument("kernel " + kernel.name + " has an empty cache key");
  if (auto it = pipelines_.find(kernel.cacheKey); it != pipelines_.end()) {
    stats_.hits++;
    return *it->second;
  }
  auto p = std::make_unique<Pipeline>();
  createLayouts(kernel, *p);
  if (deferring_) {
    deferred_.push_back({kernel, p.get()});
  } else {
    const double ms = createPipeline(kernel, *p);
    stats_.createMs += ms;
    stats_.created++;
  }
  return *pipelines_.emplace(kernel.cacheKey, std::move(p)).first->second;
}

void PipelineCache::createLayouts(const codegen::Kernel& kernel, Pipeline& p) const {
  const VkDevice dev = device_.handle();
  p.name = kernel.name;
  p.numBuffers = kernel.numBuffers;
  p.pushConstantBytes = kernel.pushConstantBytes;
  p.localSize = kernel.localSize;

  std::vector<VkDescriptorSetLayoutBinding> bindings(kernel.numBuffers);
  for (uint32_t i = 0; i < kernel.numBuffers; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  setInfo.bindingCount = kernel.numBuffers;
  setInfo.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(dev, &setInfo, nullptr, &p.setLayout),
        "creating the descriptor set layout of kernel " + kernel.name);

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.pushConstantBytes};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &p.setLayout;
  layoutInfo.pushConstantRangeCount = kernel.pushConstantBytes ? 1 : 0;
  layoutInfo.pPushConstantRanges = &push;
  if (VkResult r = vkCreatePipelineLayout(dev, &layoutInfo, nullptr, &p.layout); r != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(dev, p.setLayout, nullptr);
    throwVulkanError(r, "creating the pipeline layout of kernel " + kernel.name);
  }
  if (kernel.requiredSubgroupSize && !device_.canRequireSubgroupSize(kernel.requiredSubgroupSize) &&
      (device_.minSubgroupSize() != kernel.requiredSubgroupSize ||
       device_.maxSubgroupSize() != kernel.requiredSubgroupSize)) {
    destroy(p);
    throw std::runtime_error("creating the pipeline of kernel " + kernel.name + ": it is generated for " +
                             std::to_string(kernel.requiredSubgroupSize) +
                             "-wide subgroups; the device runs " + std::to_string(device_.minSubgroupSize()) +
                             " to " + std::to_string(device_.maxSubgroupSize()) + " and cannot fix the size");
  }
}

// Thread-safe: the VkPipelineCache is internally synchronised, and nothing else here is shared.
double PipelineCache::createPipeline(const codegen::Kernel& kernel, Pipeline& p) const {
  const VkDevice dev = device_.handle();
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = kernel.spirv.size() * sizeof(uint32_t);
  moduleInfo.pCode = kernel.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  if (VkResult r = vkCreateShaderModule(dev, &moduleInfo, nullptr, &module); r != VK_SUCCESS) {
    destroy(p);
    throwVulkanError(r, "creating the shader module of kernel " + kernel.name);
  }

  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroup.requiredSubgroupSize = kernel.requiredSubgroupSize;
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  if (kernel.requiredSubgroupSize && device_.canRequireSubgroupSize(kernel.requiredSubgroupSize)) {
    info.stage.pNext = &subgroup;
    if (device_.features().computeFullSubgroups)
      info.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  if (device_.features().pipelineExecutableInfo) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  info.layout = p.layout;

  const auto start = std::chrono::steady_clock::now();
  const VkResult result = vkCreateComputePipelines(dev, cache_, 1, &info, nullptr, &p.pipeline);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  vkDestroyShaderModule(dev, module, nullptr);
  if (result != VK_SUCCESS) {
    destroy(p);
    throwVulkanError(result, "creating the compute pipeline of kernel " + kernel.name);
  }
  return ms;
}

void PipelineCache::destroy(Pipeline& p) const {
  vkDestroyPipeline(device_.handle(), p.pipeline, nullptr);
  vkDestroyPipelineLayout(device_.handle(), p.layout, nullptr);
  vkDestroyDescriptorSetLayout(device_.handle(), p.setLayout, nullptr);
  p.pipeline = VK_NULL_HANDLE;
  p.layout = VK_NULL_HANDLE;
  p.setLayout = VK_NULL_HANDLE;
}

PrecompileStats PipelineCache::precompile(const std::function<void()>& record, unsigned threads) {
  if (deferring_) throw std::logic_error("PipelineCache::precompile does not nest");
  deferring_ = true;
  try {
    record();
  } catch (...) {
    deferring_ = false;
    dropDeferred();
    throw;
  }
  deferring_ = false;
  return compileDeferred(threads);
}

void PipelineCache::dropDeferred() {
  for (const auto& d : deferred_) {
    destroy(*d.pipeline);
    pipelines_.erase(d.kernel.cacheKey);
  }
  deferred_.clear();
}

PrecompileStats PipelineCache::compileDeferred(unsigned threads) {
  PrecompileStats out;
  out.pipelines = static_cast<uint32_t>(deferred_.size());
  if (deferred_.empty()) return out;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, out.pipelines);
  out.threads = threads;
  std::atomic<size_t> next{0};
  std::vector<double> ms(deferred_.size(), 0.0);
  std::vector<std::exception_ptr> errors(deferred_.size());
  const auto start = std::chrono::steady_clock::now();
  const auto work = [&] {
    for (size_t i = next++; i < deferred_.size(); i = next++)
      try {
        ms[i] = createPipeline(deferred_[i].kernel, *deferred_[i].pipeline);
      } catch (...) {
        errors[i] = std::current_exception();
      }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (auto& t : pool)
    t.join();
  out.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (double m : ms)
    out.compileMs += m;
  stats_.createMs += out.compileMs;
  // A failed pipeline leaves the cache as if it had never been asked for; the first error is reported.
  std::exception_ptr first;
  for (size_t i = 0; i < deferred_.size(); ++i) {
    if (!errors[i]) {
      stats_.created++;
      continue;
    }
    if (!first) first = errors[i];
    pipelines_.erase(deferred_[i].kernel.cacheKey);
  }
  deferred_.clear();
  if (first) std::rethrow_exception(first);
  return out;
}

std::vector<ExecutableStat> PipelineCache::executableStats(const Pipeline& pipeline) const {
  std::vector<ExecutableStat> out;
  if (!device_.features().pipelineExecutableInfo) return out;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline.pipeline;
  uint32_t count = 0;
  if (vkGetPipelineExecutablePropertiesKHR(device_.handle(), &info, &count, nullptr) != VK_SUCCESS)
    return out;
  std::vector<VkPipelineExecutablePropertiesKHR> execs(
      count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  vkGetPipelineExecutablePropertiesKHR(device_.handle(), &info, &count, execs.data());
  for (uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR execInfo{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    execInfo.pipeline = pipeline.pipeline;
    execInfo.executableIndex = e;
    uint32_t n = 0;
    if (vkGetPipelineExecutableStatisticsKHR(device_.handle(), &execInfo, &n, nullptr) != VK_SUCCESS)
      continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(
        n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    vkGetPipelineExecutableStatisticsKHR(device_.handle(), &execInfo, &n, stats.data());
    for (const auto& s : stats) {
      std::string value;
      switch (s.format) {
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        value = s.value.b32 ? "true" : "false";
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        value = std::to_string(s.value.i64);
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        value = std::to_string(s.value.u64);
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
        value = fmt::format("{}", s.value.f64);
        break;
      default:
        value = "?";
      }
      out.push_back({execs[e].name, s.name, value});
    }
  }
  return out;
}

} // namespace helios::vk
