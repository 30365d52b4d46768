#include "engine/vk/pipeline.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/vk/error.hpp"

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>

namespace helios::vk {

namespace {

std::vector<char> readFile(const std::filesystem::path& path) {
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
  for (auto& [key, p] : pipelines_) {
    vkDestroyPipeline(device_.handle(), p->pipeline, nullptr);
    vkDestroyPipelineLayout(device_.handle(), p->layout, nullptr);
    vkDestroyDescriptorSetLayout(device_.handle(), p->setLayout, nullptr);
  }
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
  const VkDevice dev = device_.handle();
  auto p = std::make_unique<Pipeline>();
  p->name = kernel.name;
  p->numBuffers = kernel.numBuffers;
  p->pushConstantBytes = kernel.pushConstantBytes;
  p->localSize = kernel.localSize;

  std::vector<VkDescriptorSetLayoutBinding> bindings(kernel.numBuffers);
  for (uint32_t i = 0; i < kernel.numBuffers; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  setInfo.bindingCount = kernel.numBuffers;
  setInfo.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(dev, &setInfo, nullptr, &p->setLayout),
        "creating the descriptor set layout of kernel " + kernel.name);

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.pushConstantBytes};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &p->setLayout;
  layoutInfo.pushConstantRangeCount = kernel.pushConstantBytes ? 1 : 0;
  layoutInfo.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(dev, &layoutInfo, nullptr, &p->layout),
        "creating the pipeline layout of kernel " + kernel.name);

  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = kernel.spirv.size() * sizeof(uint32_t);
  moduleInfo.pCode = kernel.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(dev, &moduleInfo, nullptr, &module),
        "creating the shader module of kernel " + kernel.name);

  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroup.requiredSubgroupSize = kernel.requiredSubgroupSize;
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  if (kernel.requiredSubgroupSize && !device_.canRequireSubgroupSize(kernel.requiredSubgroupSize) &&
      (device_.minSubgroupSize() != kernel.requiredSubgroupSize ||
       device_.maxSubgroupSize() != kernel.requiredSubgroupSize))
    throw std::runtime_error("creating the pipeline of kernel " + kernel.name + ": it is generated for " +
                             std::to_string(kernel.requiredSubgroupSize) +
                             "-wide subgroups; the device runs " + std::to_string(device_.minSubgroupSize()) +
                             " to " + std::to_string(device_.maxSubgroupSize()) + " and cannot fix the size");
  if (kernel.requiredSubgroupSize && device_.canRequireSubgroupSize(kernel.requiredSubgroupSize)) {
    info.stage.pNext = &subgroup;
    if (device_.features().computeFullSubgroups)
      info.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  if (device_.features().pipelineExecutableInfo) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  info.layout = p->layout;

  auto start = std::chrono::steady_clock::now();
  VkResult result = vkCreateComputePipelines(dev, cache_, 1, &info, nullptr, &p->pipeline);
  stats_.createMs +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  vkDestroyShaderModule(dev, module, nullptr);
  if (result != VK_SUCCESS) {
    vkDestroyPipelineLayout(dev, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p->setLayout, nullptr);
    throwVulkanError(result, "creating the compute pipeline of kernel " + kernel.name);
  }
  stats_.created++;
  return *pipelines_.emplace(kernel.cacheKey, std::move(p)).first->second;
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
