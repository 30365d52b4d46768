#include "engine/train/hf/shards.hpp"

#include <fmt/format.h>

namespace helios::train::hf {

ShardPlan planShards(const std::vector<uint64_t>& tensorBytes, uint64_t maxBytes) {
  ShardPlan plan;
  size_t count = 0;
  uint64_t inFile = 0;
  for (const uint64_t bytes : tensorBytes) {
    if (count == 0 || (inFile > 0 && inFile + bytes > maxBytes)) {
      ++count;
      inFile = 0;
    }
    plan.fileOf.push_back(count - 1);
    inFile += bytes;
    plan.totalBytes += bytes;
  }
  for (size_t i = 0; i < count; ++i)
    plan.files.push_back(count == 1 ? std::string("model.safetensors")
                                    : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, count));
  return plan;
}

nlohmann::ordered_json shardIndex(const ShardPlan& plan, const std::vector<std::string>& tensorNames) {
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < tensorNames.size(); ++i)
    map[tensorNames[i]] = plan.files[plan.fileOf[i]];
  return {{"metadata", {{"total_size", plan.totalBytes}}}, {"weight_map", map}};
}

} // namespace helios::train::hf
